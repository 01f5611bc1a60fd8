// Stage code that the VoxCeleb recipes share: the utterance and trial lists of stage 0 and the
// scoring of the trial lists. Each recipe's stage files call these with its own settings.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/backend/evaluation.h"
#include "asvcpp/data/feature_source.h"
#include "asvcpp/data/pcm_store.h"
#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/recipe/memory_check.h"
#include "asvcpp/recipe/recipe.h"
#include "asvcpp/train/embedding_extractor.h"
#include "asvcpp/settings/types.h"
#include "asvcpp/train/trainer.h"

namespace asv::recipe {
class RunContext;
}

namespace asv::recipes::shared {

/// The corpora the VoxCeleb recipes prepare (the names accepted in their
/// recipe.preparation_datasets): {"voxceleb1", "voxceleb2"}.
std::vector<std::string> PreparableDatasets();

/// The corpora sitw/xvector prepares: {"voxceleb1", "voxceleb2", "sitw"}.
std::vector<std::string> SitwPreparableDatasets();

/// One dataset to prepare: its name and the absolute corpus folder.
struct PreparationJob {
  std::string name;
  std::filesystem::path corpus;
};

/// Checks the request against the corpora a recipe knows (`known`) and what paths.datasets
/// names, before anything is written. `requested` nullopt: every known dataset present in
/// `datasets`, in the order of `datasets`. Duplicates are prepared once. Throws DataError naming
/// the dataset (and listing the known ones or the keys of paths.datasets) for an unknown name, for
/// a list folder that another corpus's preparation writes (voxceleb1_cat, voxceleb2_cat,
/// sitw_dev), for a name missing from paths.datasets, and when the resulting list is empty.
std::vector<PreparationJob> ResolvePreparationJobs(const std::optional<std::vector<std::string>>& requested,
                                                   const settings::OrderedDict<std::string>& datasets,
                                                   const std::vector<std::string>& known = PreparableDatasets());

/// The list folders (dataset names) that preparing `job` writes: voxceleb1 and voxceleb1_cat,
/// voxceleb2 and voxceleb2_cat, sitw (SITW's eval part) and, when `<corpus>/dev` exists,
/// sitw_dev. Never throws.
std::vector<std::string> PreparedDatasetsOf(const PreparationJob& job);

/// What the corpus folder of `job` lacks for its preparation, one line each naming the folder or
/// file and `setting` (paths.datasets['name']): the folder itself, wav/ (voxceleb1), dev/aac or
/// test/aac (voxceleb2), eval/lists/enroll-core.lst (sitw). Empty when nothing is missing.
std::vector<std::string> MissingCorpusParts(const PreparationJob& job, const std::string& setting);

/// Stage 0: for each dataset of `requested` (see ResolvePreparationJobs with `known`) the corpus
/// folder paths.datasets[name] (relative paths are taken against the current folder) is walked
/// by data::PrepareVoxCeleb1 and PrepareVoxCeleb1Cat, PrepareVoxCeleb2 or PrepareSitwPart, which
/// write Kaldi list folders under <output_folder>/<feature_and_list_folder>/<dataset>/lists:
///   voxceleb1  voxceleb1 (wav.scp, utt2spk, spk2utt and the trial lists: every file of
///              `trial_lists`, when `trial_dataset` is voxceleb1, found in the corpus folder) and
///              voxceleb1_cat (one utterance per video)
///   voxceleb2  voxceleb2 (one utterance per .m4a file) and voxceleb2_cat (one per video)
///   sitw       sitw (the eval part with its core-core and core-multi trial lists) and sitw_dev
///              (the dev part, when the corpus has one)
/// Every list file is recorded as an artifact of kind "list". Throws DataError for bad requests
/// and whatever the preparation functions throw (DataError naming the corpus folder or file).
void PrepareDatasets(recipe::RunContext& context, const std::optional<std::vector<std::string>>& requested,
                     const std::string& trial_dataset, const settings::OrderedDict<std::string>& trial_lists,
                     const std::vector<std::string>& known = PreparableDatasets());

/// The speaker-mean cohort of score normalisation (backend::SpeakerMeans of the back-end
/// embeddings `plda` with their `speakers`), built once per system: read from
/// <system>/embeddings/cohort.{ark,scp} while cohort.source still identifies the plda.ark it was
/// made of (the text of plda.ark.sha256), else computed and stored there (artifact kind
/// "cohort"). Throws what ReadEmbeddings and WriteEmbeddings throw.
backend::Embeddings SpeakerCohort(recipe::RunContext& context, const backend::Embeddings& plda,
                                  const std::vector<std::string>& speakers);

/// Writes `cohort` as <stem>.{ark,scp} with <stem>.source identifying the back-end archive
/// `plda_ark` it was made of (the text of its checksum file; its checksum when it has none) and
/// records it. Throws DataError when a file cannot be read or written.
void WriteSpeakerCohort(recipe::RunContext& context, const std::filesystem::path& stem,
                        const backend::Embeddings& cohort, const std::filesystem::path& plda_ark);

/// The speaker-mean cohort of a finished system without writing anything: the stored
/// <system>/embeddings/cohort while it matches plda.ark (as SpeakerCohort checks), else the speaker
/// means of `plda` computed in memory (the same values SpeakerCohort would store). Throws what
/// ReadEmbeddings throws.
backend::Embeddings StoredSpeakerCohort(const std::filesystem::path& system_folder, const backend::Embeddings& plda,
                                        const std::vector<std::string>& speakers);

/// The trained back end of a system, as stage 9 builds it (ScoreTrialLists uses this too, so the
/// two cannot drift apart): the back-end embeddings <system>/embeddings/plda with the speakers of
/// plda.utt2spk, the epoch of embeddings/info.json, and backend::Backend trained on them with
/// `settings` (every random choice in it is seeded, so the same files and settings give the same
/// back end, bit for bit). `cohort_of` gives the speaker-mean cohort when the settings ask for one
/// (SpeakerCohort in stage 9, StoredSpeakerCohort to read a finished system).
struct SystemBackend {
  backend::Embeddings plda;
  std::vector<std::string> speakers;  ///< [plda.ids.size()]
  std::optional<int> epoch;           ///< the epoch of the network the embeddings came from
  std::optional<backend::Backend> backend;
};
using CohortProvider =
    std::function<backend::Embeddings(const backend::Embeddings& plda, const std::vector<std::string>& speakers)>;
/// Throws DataError for missing embeddings or a back-end utterance without speaker (naming the
/// file), and what backend::Backend throws.
SystemBackend BuildSystemBackend(const std::filesystem::path& system_folder,
                                 const settings::BackendSettings& settings, const CohortProvider& cohort_of);

/// <system>/backend/thresholds.json, written by ScoreTrialLists: the decision thresholds of a
/// system. "calibrated": whether the final scores are calibrated log-likelihood ratios; "bayes":
/// for each operating point of the results (backend.p_target, then 0.01; c_miss = c_fa = 1) the
/// Bayes threshold log((1 - p_target) / p_target) (eval::BayesThreshold), meaningful for
/// calibrated scores; "lists": per trial list its EER (%) and the score at the EER
/// (eval::EerResult::threshold), and the minDCF threshold at backend.p_target.
std::filesystem::path ThresholdsFile(const std::filesystem::path& system_folder);

/// Scoring of the trial lists: the embeddings <system>/embeddings/{plda,trial} (and
/// plda.utt2spk, and the utt2dur files for quality-aware calibration) through the back end of
/// the `backend.*` settings (backend::Backend: processing trained on the "plda" embeddings, PLDA
/// or cosine scoring, optional s-norm / AS-norm against the stored speaker-mean cohort
/// (SpeakerCohort) or random back-end embeddings, optional calibration into log-likelihood
/// ratios, saved as <system>/backend/calibration.json with whether it was applied and
/// eval::CheckCalibration's verdict, recorded as artifact kind "calibration" when applied and
/// "calibration_not_applied" when degenerate and left out, with a line in results.txt when
/// degenerate); every existing list of `trial_lists`
/// (files in the list folder of `trial_dataset`) scored, with scores_<file> (the final scores:
/// LLRs when calibrated) and det_<stem>.run<run id>.tsv (eval::DetFileName: one per run) under
/// <system>/scores, a warning for a list whose EER the tied scores decide
/// (eval::TiesDecideEer), the decision thresholds in ThresholdsFile (artifact kind "thresholds"),
/// EER/minDCF/Cllr lines in
/// <system>/results/results.txt, and a results row per list (the epoch of embeddings/info.json
/// when present). Throws DataError for missing embeddings, a PLDA utterance without speaker,
/// when no list exists, and what backend::Backend throws.
void ScoreTrialLists(recipe::RunContext& context, const std::string& trial_dataset,
                     const settings::OrderedDict<std::string>& trial_lists);

/// Embeddings of every utterance of `source` (ids: source.Name(i)), computed by `extract` over
/// the utterance indices (Trainer::ExtractEmbeddings or EmbeddingExtractor::Extract with the
/// caller's options), with durations source.NumFrames(i) * `frame_shift_seconds` (the speech
/// the network saw). Utterances without frames are left out (backend::CollectEmbeddings); the
/// count, truncations and time are logged as `what`. Throws what `extract` throws.
backend::Embeddings ExtractAll(const data::FeatureSource& source, const std::string& what,
                               const std::function<train::ExtractionResult(const std::vector<int>&)>& extract,
                               double frame_shift_seconds);

/// Features of audio a command was given (asvrun embed and verify): the utterances that have
/// features, and the inputs that got none with the reason.
struct GivenAudioFeatures {
  std::shared_ptr<const data::FeatureSource> source;
  std::vector<data::PcmSkippedUtterance> skipped;
};

/// Embeddings of audio a command was given, in input order, and the inputs that gave none.
struct GivenAudioEmbeddings {
  backend::Embeddings embeddings;                  ///< [inputs that gave one, D], durations in seconds
  std::vector<data::PcmSkippedUtterance> skipped;  ///< the others, with the reason
};

/// The steps asvrun's embed and verify share, whatever the front end: removes the scratch folder
/// `scratch`, runs `prepare` (which computes the features under it), ExtractAll over its source
/// (as "embed"; durations: frames x `frame_shift_seconds`) with `extract`, adds each utterance of
/// the source that got no embedding to skipped with `why_not(source, i)` (i: its index), and
/// removes `scratch` again, also when a step throws. A StageError becomes a DataError "no
/// embedding: ..."; other errors pass through.
GivenAudioEmbeddings EmbedGivenAudio(
    const std::filesystem::path& scratch, const std::function<GivenAudioFeatures()>& prepare,
    const std::function<train::ExtractionResult(const data::FeatureSource&, const std::vector<int>&)>& extract,
    double frame_shift_seconds, const std::function<std::string(const data::FeatureSource&, int)>& why_not);

/// Records a training epoch's figures (loss, accuracy, learning rate, time, frames/s, data wait,
/// validation when there was one) and its checkpoint as an artifact.
void RecordTrainingEpoch(recipe::RunContext& context, const train::EpochStats& stats);

/// The newest epoch of the checkpoints in `folder` for a stage to use: the largest N of
/// `folder`/epoch.N.pt (train::FindLastEpoch), checked against the experiment database: when the
/// newest run that recorded checkpoints of `folder` recorded a later epoch (its file was lost),
/// that is a DataError naming the missing file, never a silent fall-back to an older network.
/// Returns 0 when there is no checkpoint and none was recorded. Throws DbError when the database
/// cannot be read.
int LastTrainedEpoch(recipe::RunContext& context, const std::filesystem::path& folder);

/// Records `checkpoints` in the experiment database as the networks the stage being run used
/// (artifacts of kind "checkpoint_used", with their SHA-256). Throws DataError for a file that
/// cannot be read, DbError when the database cannot be written.
void RecordCheckpointsUsed(recipe::RunContext& context, const std::vector<std::filesystem::path>& checkpoints);

/// The EER evaluation during training: the back end of the `backend.*` settings (without
/// calibration, which is for the final scoring; a speaker-mean cohort computed in memory) trained on
/// `reference` (speakers_of[id] is the speaker of each reference embedding), applied to `trial`,
/// and every list of `lists` (display name, file) scored, logged and recorded as a result of
/// `epoch`. Returns the mean EER (%) over the lists. Throws DataError for a reference embedding
/// without speaker and what the back end throws.
double ScoreDuringTraining(recipe::RunContext& context, const backend::Embeddings& reference,
                           const std::map<std::string, std::string>& speaker_of, const backend::Embeddings& trial,
                           const std::vector<std::pair<std::string, std::filesystem::path>>& lists, int epoch);

/// A recipe's stage functions by stage name (recipe::StageInfo::name).
using StageTable = std::map<std::string, void (*)(recipe::RunContext&)>;

/// Runs the function of `stage` in `table`. Throws StageError "<recipe> has no stage N ('name')"
/// for a stage the table lacks; what the function throws leaves through
/// train::RethrowAsAsvError: an out-of-memory as a StageError naming the stage, the device and
/// `memory_advice` (the settings to lower), other LibTorch errors without their C++ backtrace.
void RunStageOf(const std::string& recipe, const StageTable& table, const recipe::StageInfo& stage,
                recipe::RunContext& context, const std::string& memory_advice);

/// What `asvrun --dry-run` reports for a training stage: the step of `net` (on the CPU) measured
/// by train::MeasureStepMemory on examples of `frames` frames of `feat_dim` features, its lines
/// reduced to recipe::UpperEnvelope, with the optimizer's state (network.optimizer: SGD 1 buffer
/// per parameter, AdamW 2). `batch_key` and `global_batch` name the batch setting and its value,
/// `examples` what an example is ("segments of 200 frames"), `note` what the estimate leaves out.
/// Throws what LibTorch throws.
recipe::MemoryNeed MeasureTrainingStep(const recipe::StageInfo& stage, nnet::SpeakerNet& net, std::int64_t feat_dim,
                                       std::int64_t frames, train::OptimizerKind optimizer,
                                       const std::string& batch_key, std::int64_t global_batch,
                                       const std::string& examples, const std::string& note);

}  // namespace asv::recipes::shared
