// The back end of an embedding system as recipes run it, for the evaluations during training and
// the final scoring: embedding processing (backend.processing, ASVtorch's 'cwl') and a PLDA or
// cosine scorer trained on the PLDA embeddings, trial-list scoring in trial order, optional
// adaptive s-norm, EER/minDCF (asvcpp/eval/metrics.h, exactly as ASVtorch), the result lines and
// the database rows; embeddings as Kaldi vector archives.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/backend/scorer.h"
#include "asvcpp/backend/vector_processor.h"
#include "asvcpp/base/matrix.h"
#include "asvcpp/db/database.h"
#include "asvcpp/eval/det.h"
#include "asvcpp/eval/llr_metrics.h"
#include "asvcpp/eval/metrics.h"
#include "asvcpp/eval/score_file.h"
#include "asvcpp/settings/settings.h"

namespace asv::backend {

/// Embeddings with their utterance ids: row i of `vectors` ([n, embedding_size]) is ids[i].
struct Embeddings {
  std::vector<std::string> ids;
  asv::Matrix vectors;
};

/// Embeddings of an extraction over utterances `ids` (`embeddings` [ids.size(), D], row i of
/// ids[i]), leaving out the rows at the positions `skipped` (utterances without speech frames,
/// train::ExtractionResult::skipped), each named in a warning that starts with `what`. Throws
/// std::out_of_range for a position outside `ids`.
Embeddings CollectEmbeddings(const asv::Matrix& embeddings, const std::vector<std::size_t>& skipped,
                             const std::vector<std::string>& ids, const std::string& what);

/// Writes embeddings as a Kaldi float-vector archive `<stem>.ark` with `<stem>.scp` (atomic), so
/// Kaldi tools read them (e.g. `copy-vector scp:trial.scp ark,t:-`), and the archive's checksum
/// file `<stem>.ark.sha256` (asvcpp/base/checksum.h).
void WriteEmbeddings(const std::filesystem::path& stem, const Embeddings& embeddings);
/// Reads `<stem>.scp`. Throws DataError naming the file when it is missing (not extracted yet),
/// empty, the vectors differ in size, or `<stem>.ark` does not match its checksum file (corrupt;
/// an archive without one is read unchecked).
Embeddings ReadEmbeddings(const std::filesystem::path& stem);

/// The trained back-end.
class Backend {
 public:
  /// Trains the processing (backend.processing) and, for backend.scoring = 'plda', closed-form
  /// PLDA with backend.plda_dim on `plda` (speakers[i] is the speaker of row i). Throws
  /// DataError when the data cannot support the model (too few speakers or vectors for the
  /// dimension; the message says which).
  Backend(const asv::Matrix& plda, const std::vector<std::string>& speakers, const settings::BackendSettings& settings);

  /// The processing applied to `vectors` ([n, D] -> [n, D]).
  asv::Matrix Process(const asv::Matrix& vectors) const { return processor_.Process(vectors); }

  /// Scores `trials` between rows of `processed` (processed embeddings with `ids`), in trial order;
  /// with backend.score_norm, adaptive s-norm against a cohort of the processed PLDA vectors.
  /// Throws DataError naming trials.path:line for an utterance without an embedding.
  std::vector<double> Score(const Embeddings& processed, const eval::TrialList& trials) const;

  const backend::Scorer& scorer() const { return scorer_; }

 private:
  settings::BackendSettings settings_;
  backend::VectorProcessor processor_;
  backend::Scorer scorer_;
  asv::Matrix cohort_;  ///< processed PLDA vectors for s-norm (empty without it)
};

/// One scored trial list.
struct ListResult {
  std::string name;                ///< display name (key of recipe.trial_lists)
  std::filesystem::path file;      ///< the trial list file
  std::vector<double> scores;      ///< trial order
  eval::Metrics metrics;           ///< EER and minDCF at backend.p_target
  /// minDCF at every operating point (c_miss = c_fa = 1): backend.p_target, then 0.01 unless the
  /// same.
  std::vector<eval::MinDcfResult> min_dcfs;
  /// Cllr, minCllr and actDCF (at the same operating points) of the scores read as LLRs.
  eval::LlrMetrics llr;
  std::vector<eval::DetPoint> det;  ///< DET points for plots (eval::DetPoints, about 2000)
};

/// Scores one trial list and computes its metrics.
ListResult ScoreTrialList(const Backend& backend, const Embeddings& processed, const std::string& name,
                          const std::filesystem::path& file, const settings::BackendSettings& settings);

/// ASVtorch's result line: "EER = 2.9640  minDCF = 0.2010  [epoch 37] [vox1_original]", followed
/// by asvcpp's minDCF at the other operating points, Cllr and the trial counts.
std::string FormatResult(const ListResult& result, std::optional<int> epoch);

/// The database row of a result: EER in percent, minDCF at the configured p_target, trial counts,
/// Cllr, minCllr, minDCF and actDCF at every operating point, `epoch` of the network (nullopt:
/// none). The stage is left to the recorder
/// (recipe::RunContext::RecordResult fills in the stage being run).
db::ResultRecord ResultRecordOf(const ListResult& result, std::optional<int> epoch);

/// Trial list files of `names` (keys of recipe.trial_lists) in `list_folder`; a name that is
/// not a key is a ConfigError, a file that does not exist is skipped with a warning unless
/// `required`.
std::vector<std::pair<std::string, std::filesystem::path>> TrialListFiles(
    const std::vector<std::string>& names, const settings::OrderedDict<std::string>& trial_lists,
    const std::filesystem::path& list_folder, bool required);

/// The sides (enrollment and test ids, '&'-joined multi-session ids kept whole) of every trial
/// of `lists` (name, file), each once, in order of first appearance. Throws DataError for an
/// unreadable list (file:line).
std::vector<std::string> TrialSides(const std::vector<std::pair<std::string, std::filesystem::path>>& lists);

}  // namespace asv::backend
