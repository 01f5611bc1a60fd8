// The back end of an embedding system as recipes run it, for the evaluations during training and
// the final scoring: embedding processing (backend.processing, ASVtorch's 'cwl') and a PLDA or
// cosine scorer trained on the back-end ("PLDA") embeddings, trial-list scoring in trial order,
// optional s-norm or AS-norm against a cohort (by default the back-end speakers' mean embeddings),
// optional calibration into log-likelihood ratios (linear or quality-aware, trained on trials of
// held-out back-end speakers), EER/minDCF (asvcpp/eval/metrics.h, exactly as ASVtorch), Cllr,
// minCllr and actDCF, the result lines and the database rows; embeddings as Kaldi vector
// archives.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/backend/score_norm.h"
#include "asvcpp/backend/scorer.h"
#include "asvcpp/backend/scoring.h"
#include "asvcpp/backend/vector_processor.h"
#include "asvcpp/base/matrix.h"
#include "asvcpp/db/database.h"
#include "asvcpp/eval/calibration.h"
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
  /// Speech duration in seconds of each row's utterance (frames the network saw times the frame
  /// shift), for quality-aware calibration; empty when unknown.
  std::vector<double> durations;
};

/// Embeddings of an extraction over utterances `ids` (`embeddings` [ids.size(), D], row i of
/// ids[i]), leaving out the rows at the positions `skipped` (utterances without speech frames,
/// train::ExtractionResult::skipped), each named in a warning that starts with `what`.
/// `durations` ([ids.size()] seconds, or empty) are kept for the same rows. Throws
/// std::out_of_range for a position outside `ids`, std::invalid_argument when `durations` is
/// neither empty nor of ids.size(), DataError naming the utterance for an embedding that holds a
/// NaN or an infinity.
Embeddings CollectEmbeddings(const asv::Matrix& embeddings, const std::vector<std::size_t>& skipped,
                             const std::vector<std::string>& ids, const std::string& what,
                             const std::vector<double>& durations = {});

/// Writes embeddings as a Kaldi float-vector archive `<stem>.ark` with `<stem>.scp` (atomic), so
/// Kaldi tools read them (e.g. `copy-vector scp:trial.scp ark,t:-`), and the archive's checksum
/// file `<stem>.ark.sha256` (asvcpp/base/checksum.h); with durations, also `<stem>.utt2dur`
/// (Kaldi's "utt seconds" table, here the speech seconds the network saw).
void WriteEmbeddings(const std::filesystem::path& stem, const Embeddings& embeddings);
/// Reads `<stem>.scp` and, when it exists, `<stem>.utt2dur`. Throws DataError naming the file
/// when it is missing (not extracted yet), empty, the vectors differ in size, `<stem>.ark` does
/// not match its checksum file (corrupt; an archive without one is read unchecked), or utt2dur
/// lacks an utterance or holds a duration that is not a positive number; DataError naming the
/// utterance for an embedding that holds a NaN or an infinity.
Embeddings ReadEmbeddings(const std::filesystem::path& stem);

/// The score-normalisation cohort of backend.score_norm_cohort = 'speaker_means': the mean of the
/// rows of `embeddings` of each speaker (`speakers` [n], one per row), ids = the speakers in
/// sorted order; no durations. Computed in double precision. Throws std::invalid_argument when
/// `speakers` does not have one entry per row, DataError when there are no rows.
Embeddings SpeakerMeans(const Embeddings& embeddings, const std::vector<std::string>& speakers);

/// Processed trial-side embeddings as the back end scores them.
struct PreparedEmbeddings {
  std::vector<std::string> ids;    ///< one per row of `processed`
  asv::Matrix processed;           ///< [n, D'] after backend.processing
  std::vector<double> magnitudes;  ///< [n] Euclidean norms of the raw embeddings
  std::vector<double> durations;   ///< [n] speech seconds, or empty when unknown
  /// Per-row score-normalisation statistics against the cohort (empty without backend.score_norm).
  SnormStats snorm;
};

/// Calibration trials drawn from labelled embeddings: pairs of row indices with their labels.
struct CalibrationTrials {
  std::vector<TrialIndex> targets;     ///< same speaker, different rows
  std::vector<TrialIndex> nontargets;  ///< different speakers
};

/// Draws up to `count` / 2 (rounded up) distinct target trials and up to the rest as distinct
/// non-target trials among the rows of `speakers` (one speaker per row), uniformly at random
/// (std::mt19937_64 seeded with `seed`); when a class has fewer possible pairs than asked, all
/// of them. Each trial has left < right. Throws DataError when no target or no non-target trial
/// is possible (every speaker has one row, or there is only one speaker).
CalibrationTrials DrawCalibrationTrials(const std::vector<std::string>& speakers, std::int64_t count,
                                        std::uint64_t seed);

/// What became of the calibration (backend.calibration) of a Backend.
enum class CalibrationStatus {
  kNone,               ///< backend.calibration = 'none': nothing trained.
  kApplied,            ///< Trained, not degenerate (eval::CheckCalibration), applied.
  kDegenerateSkipped,  ///< Trained, degenerate, not applied: the scores are uncalibrated.
  kDegenerateApplied,  ///< Trained, degenerate, applied (backend.keep_degenerate_calibration).
};

/// "none", "applied", "degenerate, not applied" or "degenerate, applied".
const char* CalibrationStatusName(CalibrationStatus status);

/// The trained back-end.
class Backend {
 public:
  /// Trains the back end on `plda` (raw back-end embeddings; speakers[i] is the speaker of row
  /// i):
  ///  * with backend.calibration other than 'none', backend.calibration_speakers of the speakers
  ///    (at least 2, among those with two or more rows, chosen at random with seed 0) are held
  ///    out of everything below and only give the calibration trials;
  ///  * the processing (backend.processing) and, for backend.scoring = 'plda', closed-form PLDA
  ///    with backend.plda_dim;
  ///  * with backend.score_norm, the cohort: 'speaker_means' takes the rows of `cohort` (raw
  ///    speaker means with speaker ids, as SpeakerMeans writes them; nullptr: computed from
  ///    `plda`) of speakers not held out, 'random_vectors' backend.score_norm_full_cohort_size
  ///    random processed back-end rows (all when fewer, with a warning); AS-norm uses the top
  ///    min(score_norm_adaptive_cohort_size, cohort size) scores (a warning when capped);
  ///  * the calibration: backend.calibration_trials trials drawn among the held-out rows
  ///    (DrawCalibrationTrials, seed 0), scored as the trial lists are (processing, scorer,
  ///    normalisation), and a eval::LinearCalibration trained at prior 0.5 on their features
  ///    (the score; for 'quality' also eval::QualityFeatures of both sides), then checked with
  ///    eval::CheckCalibration on the Cllr of its calibrated training trials: a degenerate one
  ///    (the score's weight <= 0, or no information) is named in a warning (weight, trials, Cllr,
  ///    what was done) and not applied unless backend.keep_degenerate_calibration.
  /// Throws DataError when the data cannot support the model (too few speakers or vectors for
  /// the dimension, too few speakers to hold out, durations missing for 'quality'; the message
  /// says which).
  Backend(const Embeddings& plda, const std::vector<std::string>& speakers, const settings::BackendSettings& settings,
          const Embeddings* cohort = nullptr);

  /// Processes raw trial-side embeddings ([n, D]) and, with backend.score_norm, computes each
  /// row's normalisation statistics against the cohort (one pass for every list that uses them).
  PreparedEmbeddings Prepare(const Embeddings& raw) const;

  /// Scores `trials` between rows of `prepared` in trial order, normalised with backend.score_norm
  /// and calibrated (log-likelihood ratios) with calibration(), the calibration in use (none when
  /// backend.calibration = 'none' or a degenerate one was not applied). Throws DataError naming
  /// trials.path:line for an utterance without an embedding, and DataError when quality-aware
  /// calibration meets embeddings without durations.
  std::vector<double> Score(const PreparedEmbeddings& prepared, const eval::TrialList& trials) const;

  const backend::Scorer& scorer() const { return scorer_; }
  /// Cohort rows after processing ([m, D']; empty without backend.score_norm).
  const asv::Matrix& cohort() const { return cohort_; }
  /// The calibration the scores are calibrated with: nullptr with backend.calibration = 'none' and
  /// when a degenerate one was not applied (calibration_status()).
  const eval::LinearCalibration* calibration() const {
    return calibration_ && calibration_applied_ ? &*calibration_ : nullptr;
  }
  /// The trained calibration, applied or not (nullptr with backend.calibration = 'none').
  const eval::LinearCalibration* trained_calibration() const { return calibration_ ? &*calibration_ : nullptr; }
  /// Whether a calibration was trained, found degenerate and applied.
  CalibrationStatus calibration_status() const;
  /// What was checked and done, with the training trial counts, as the calibration file stores it
  /// (eval::SaveCalibration); meaningless with backend.calibration = 'none'.
  const eval::CalibrationUse& calibration_use() const { return calibration_use_; }
  /// The held-out speakers of the calibration, sorted (empty without calibration).
  const std::vector<std::string>& held_out_speakers() const { return held_out_; }
  /// Cllr (bits) of the calibrated calibration-training trials (0 without calibration).
  double calibration_cllr() const { return calibration_cllr_; }

 private:
  std::vector<double> ScoreIndexed(const PreparedEmbeddings& prepared, const std::vector<TrialIndex>& index) const;

  settings::BackendSettings settings_;
  backend::VectorProcessor processor_;
  backend::Scorer scorer_;
  asv::Matrix cohort_;
  std::int64_t top_n_ = 0;
  std::optional<eval::LinearCalibration> calibration_;
  bool calibration_applied_ = false;
  eval::CalibrationUse calibration_use_;
  std::vector<std::string> held_out_;
  double calibration_cllr_ = 0;
};

/// One scored trial list.
struct ListResult {
  std::string name;                ///< display name (key of recipe.trial_lists)
  std::filesystem::path file;      ///< the trial list file
  std::vector<double> scores;      ///< trial order
  /// EER (ASVtorch's and tie-aware) and minDCF at backend.p_target
  eval::Metrics metrics;
  /// minDCF at every operating point (c_miss = c_fa = 1): backend.p_target, then 0.01 unless the
  /// same.
  std::vector<eval::MinDcfResult> min_dcfs;
  /// Cllr, minCllr and actDCF (at the same operating points) of the scores read as LLRs.
  eval::LlrMetrics llr;
  std::vector<eval::DetPoint> det;  ///< DET points for plots (eval::DetPoints, about 2000)
};

/// Scores one trial list and computes its metrics; warns when tied scores decide its EER
/// (eval::TiesDecideEer, both EERs in the message).
ListResult ScoreTrialList(const Backend& backend, const PreparedEmbeddings& prepared, const std::string& name,
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
