#include "recipes/shared/recipe_stages.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "asvcpp/backend/evaluation.h"
#include "asvcpp/base/checksum.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/base/progress.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/table.h"
#include "asvcpp/data/sitw.h"
#include "asvcpp/data/voxceleb.h"
#include "asvcpp/db/database.h"
#include "asvcpp/eval/score_file.h"
#include "asvcpp/recipe/recipe.h"
#include "asvcpp/recipe/run_context.h"
#include "asvcpp/train/checkpoint.h"
#include "asvcpp/train/step_memory.h"
#include "asvcpp/train/torch_errors.h"

namespace asv::recipes::shared {
namespace {

namespace stdfs = std::filesystem;

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none)" : out;
}

}  // namespace

std::vector<std::string> PreparableDatasets() {
  return {"voxceleb1", "voxceleb2"};
}

std::vector<std::string> SitwPreparableDatasets() {
  return {"voxceleb1", "voxceleb2", "sitw"};
}

std::vector<PreparationJob> ResolvePreparationJobs(const std::optional<std::vector<std::string>>& requested,
                                                   const settings::OrderedDict<std::string>& datasets,
                                                   const std::vector<std::string>& known) {
  const auto is_known = [&](const std::string& n) { return std::find(known.begin(), known.end(), n) != known.end(); };
  // List folders that another corpus's preparation writes.
  const std::map<std::string, std::string> written_by = {
      {"voxceleb1_cat", "voxceleb1"}, {"voxceleb2_cat", "voxceleb2"}, {"sitw_dev", "sitw"}};
  std::vector<std::string> names;
  if (requested) {
    for (const auto& name : *requested) {
      const auto by = written_by.find(name);
      if (by != written_by.end() && is_known(by->second)) {
        throw DataError(fmt::format(
            "recipe.preparation_datasets: '{}' is prepared together with '{}'; ask for '{}'", name, by->second,
            by->second));
      }
      if (!is_known(name)) {
        throw DataError(fmt::format(
            "recipe.preparation_datasets: this recipe cannot prepare dataset '{}' (it knows: {})", name,
            JoinNames(known)));
      }
      if (!datasets.Contains(name)) {
        throw DataError(fmt::format(
            "recipe.preparation_datasets names '{}', which paths.datasets does not give a corpus folder for "
            "(paths.datasets has: {})",
            name, JoinNames(datasets.Keys())));
      }
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  } else {
    for (const auto& [name, folder] : datasets) {
      if (is_known(name)) names.push_back(name);
    }
  }
  if (names.empty()) {
    throw DataError(fmt::format(
        requested ? "recipe.preparation_datasets is empty: nothing to prepare"
                  : "recipe.preparation_datasets is None (all) but paths.datasets names none of the datasets this "
                    "recipe can prepare ({}); paths.datasets has: {}",
        JoinNames(known), JoinNames(datasets.Keys())));
  }
  std::vector<PreparationJob> jobs;
  for (const auto& name : names) {
    const std::string& folder = *datasets.Find(name);
    std::error_code ec;
    stdfs::path corpus = stdfs::absolute(folder, ec);
    jobs.push_back({name, (ec ? stdfs::path(folder) : corpus).lexically_normal()});
  }
  return jobs;
}

std::vector<std::string> PreparedDatasetsOf(const PreparationJob& job) {
  if (job.name == "sitw") {
    std::error_code ec;
    if (stdfs::is_directory(job.corpus / "dev", ec)) return {"sitw", "sitw_dev"};
    return {"sitw"};
  }
  return {job.name, job.name + "_cat"};
}

std::vector<std::string> MissingCorpusParts(const PreparationJob& job, const std::string& setting) {
  const auto exists = [](const stdfs::path& path) {
    std::error_code ec;
    return stdfs::exists(path, ec);
  };
  if (!exists(job.corpus)) return {fmt::format("{}: no such folder ({})", job.corpus.string(), setting)};
  if (job.name == "voxceleb1" && !exists(job.corpus / "wav")) {
    return {fmt::format("{}: no such folder ({})", (job.corpus / "wav").string(), setting)};
  }
  if (job.name == "voxceleb2" && !exists(job.corpus / "dev" / "aac") && !exists(job.corpus / "test" / "aac")) {
    return {fmt::format("{}: neither dev/aac nor test/aac exists ({})", job.corpus.string(), setting)};
  }
  const stdfs::path enrollment = job.corpus / "eval" / "lists" / "enroll-core.lst";
  if (job.name == "sitw" && !exists(enrollment)) {
    return {fmt::format("{}: missing: SITW's eval part ({})", enrollment.string(), setting)};
  }
  return {};
}

void PrepareDatasets(recipe::RunContext& context, const std::optional<std::vector<std::string>>& requested,
                     const std::string& trial_dataset, const settings::OrderedDict<std::string>& trial_lists,
                     const std::vector<std::string>& known) {
  const auto& paths = context.settings().common().paths;
  // Everything is checked before the first file is written.
  const std::vector<PreparationJob> jobs = ResolvePreparationJobs(requested, paths.datasets, known);
  const stdfs::path dataset_root = context.feature_and_list_folder();

  for (const auto& job : jobs) {
    ASV_LOG(Info, "preparing {} from {}", job.name, job.corpus.string());
    std::vector<data::PreparedDataset> result;
    if (job.name == "voxceleb1") {
      data::VoxCelebOptions options;
      // Every trial list the settings name is prepared, not only VoxCeleb's own files.
      if (trial_dataset == job.name) {
        for (const auto& [name, file] : trial_lists) options.trial_list_files.push_back(file);
      }
      result.push_back(data::PrepareVoxCeleb1(job.corpus, dataset_root, options));
      result.push_back(data::PrepareVoxCeleb1Cat(job.corpus, dataset_root));
    } else if (job.name == "sitw") {
      for (const auto& dataset : PreparedDatasetsOf(job)) {
        result.push_back(data::PrepareSitwPart(job.corpus, dataset == "sitw" ? "eval" : "dev",
                                               data::ListFolder(dataset_root, dataset)));
      }
    } else {
      result = data::PrepareVoxCeleb2(job.corpus, dataset_root);
    }
    // The preparation functions log the one-line summary of each list folder (utterances,
    // speakers, trial lists, trials).
    for (const auto& ds : result) context.RecordFolderArtifacts(ds.list_folder, "list");
  }
}

namespace {

// What identifies the back-end archive a cohort was made of: the text of its checksum file
// (written with it, and verified by ReadEmbeddings), so no second pass over a large archive; an
// archive without one is hashed.
std::string ArchiveIdentity(const stdfs::path& ark) {
  const stdfs::path sums = asv::fs::ChecksumFilePath(ark);
  return stdfs::exists(sums) ? asv::fs::ReadFile(sums) : asv::fs::FileChecksum(ark) + "\n";
}

}  // namespace

backend::Embeddings SpeakerCohort(recipe::RunContext& context, const backend::Embeddings& plda,
                                  const std::vector<std::string>& speakers) {
  const stdfs::path folder = context.system_folder() / "embeddings";
  const stdfs::path stem = folder / "cohort";
  // Built once per system, beside the embeddings it is made of: reused while its record of the
  // back-end archive matches, else (older extraction, new embeddings) rebuilt.
  const stdfs::path source = stem.string() + ".source";
  if (stdfs::exists(stem.string() + ".scp") && stdfs::exists(source) &&
      asv::fs::ReadFile(source) == ArchiveIdentity(folder / "plda.ark")) {
    auto cohort = backend::ReadEmbeddings(stem);
    ASV_LOG(Info, "score normalisation cohort: {} speaker means from {}.scp", cohort.ids.size(), stem.string());
    return cohort;
  }
  auto cohort = backend::SpeakerMeans(plda, speakers);
  WriteSpeakerCohort(context, stem, cohort, folder / "plda.ark");
  ASV_LOG(Info, "score normalisation cohort: {} speaker means of the back-end embeddings, stored in {}.scp",
          cohort.ids.size(), stem.string());
  return cohort;
}

void WriteSpeakerCohort(recipe::RunContext& context, const stdfs::path& stem, const backend::Embeddings& cohort,
                        const stdfs::path& plda_ark) {
  backend::WriteEmbeddings(stem, cohort);
  asv::fs::WriteFileAtomic(stem.string() + ".source", ArchiveIdentity(plda_ark));
  context.RecordArtifact(stem.string() + ".ark", "cohort");
  context.RecordArtifact(stem.string() + ".scp", "cohort");
}

backend::Embeddings StoredSpeakerCohort(const stdfs::path& system_folder, const backend::Embeddings& plda,
                                        const std::vector<std::string>& speakers) {
  const stdfs::path folder = system_folder / "embeddings";
  const stdfs::path stem = folder / "cohort";
  const stdfs::path source = stem.string() + ".source";
  if (stdfs::exists(stem.string() + ".scp") && stdfs::exists(source) &&
      asv::fs::ReadFile(source) == ArchiveIdentity(folder / "plda.ark")) {
    return backend::ReadEmbeddings(stem);
  }
  return backend::SpeakerMeans(plda, speakers);
}

SystemBackend BuildSystemBackend(const stdfs::path& system_folder, const settings::BackendSettings& settings,
                                 const CohortProvider& cohort_of) {
  const stdfs::path folder = system_folder / "embeddings";
  SystemBackend system;
  system.plda = backend::ReadEmbeddings(folder / "plda");
  const auto utt2spk = data::ReadTable(folder / "plda.utt2spk", data::ValueFormat::kSingleToken);
  for (const auto& id : system.plda.ids) {
    const auto it = utt2spk.find(id);
    if (it == utt2spk.end())
      throw DataError(fmt::format("{}: no speaker for '{}'", (folder / "plda.utt2spk").string(), id));
    system.speakers.push_back(it->second);
  }
  if (stdfs::exists(folder / "info.json")) {
    const auto info = nlohmann::json::parse(asv::fs::ReadFile(folder / "info.json"));
    if (info.contains("epoch")) system.epoch = info["epoch"].get<int>();
  }
  ASV_LOG(Info, "back-end: '{}' processing, {} scoring{}{}{} on {} PLDA embeddings of {} speakers",
          settings.processing, EnumToName(settings.scoring),
          settings.scoring == backend::Scoring::kPlda ? fmt::format(" (plda_dim {})", settings.plda_dim) : "",
          settings.score_norm ? fmt::format(", {} against {}", EnumToName(settings.score_norm_method),
                                            EnumToName(settings.score_norm_cohort))
                              : "",
          settings.calibration != backend::Calibration::kNone
              ? fmt::format(", {} calibration", EnumToName(settings.calibration))
              : "",
          system.plda.ids.size(), std::set<std::string>(system.speakers.begin(), system.speakers.end()).size());
  std::optional<backend::Embeddings> cohort;
  if (settings.score_norm && settings.score_norm_cohort == backend::Cohort::kSpeakerMeans) {
    cohort = cohort_of(system.plda, system.speakers);
  }
  system.backend.emplace(system.plda, system.speakers, settings, cohort ? &*cohort : nullptr);
  return system;
}

stdfs::path ThresholdsFile(const stdfs::path& system_folder) { return system_folder / "backend" / "thresholds.json"; }

void ScoreTrialLists(recipe::RunContext& context, const std::string& trial_dataset,
                     const settings::OrderedDict<std::string>& trial_lists) {
  const auto& backend_settings = context.settings().common().backend;
  const stdfs::path folder = context.system_folder() / "embeddings";
  const auto trial = backend::ReadEmbeddings(folder / "trial");
  const SystemBackend system = BuildSystemBackend(
      context.system_folder(), backend_settings,
      [&](const backend::Embeddings& plda, const std::vector<std::string>& speakers) {
        return SpeakerCohort(context, plda, speakers);
      });
  const backend::Backend& backend = *system.backend;
  const std::optional<int> epoch = system.epoch;
  std::string summary;
  if (const auto* calibration = backend.trained_calibration()) {
    const stdfs::path file = context.system_folder() / "backend" / "calibration.json";
    eval::SaveCalibration(*calibration, file, &backend.calibration_use());
    // The artifact kind says whether the scores are calibrated with it.
    context.RecordArtifact(file, backend.calibration() != nullptr ? "calibration" : "calibration_not_applied");
    if (backend.calibration_use().check.degenerate) {
      summary += fmt::format("calibration: {} ({})\n", backend::CalibrationStatusName(backend.calibration_status()),
                             backend.calibration_use().check.reason);
    }
  }
  const auto prepared = backend.Prepare(trial);

  std::vector<std::string> names;
  for (const auto& entry : trial_lists) names.push_back(entry.first);
  const auto lists = backend::TrialListFiles(
      names, trial_lists, data::ListFolder(context.feature_and_list_folder(), trial_dataset), false);
  // Trial lists with rate and ETA; the amount counts trials ("... trials/s").
  base::ProgressOptions progress_options;
  progress_options.unit = "lists";
  progress_options.amount_rate_suffix = " trials/s";
  base::Progress progress("scoring", static_cast<std::int64_t>(lists.size()), progress_options);
  nlohmann::json thresholds = {{"calibrated", backend.calibration() != nullptr},
                               {"bayes", nlohmann::json::array()},
                               {"lists", nlohmann::json::object()}};
  for (const auto& [name, file] : lists) {
    const auto result = backend::ScoreTrialList(backend, prepared, name, file, backend_settings);
    progress.Add(1, static_cast<double>(result.scores.size()));
    const stdfs::path score_file = context.system_folder() / "scores" / ("scores_" + file.filename().string());
    eval::WriteScoreFile(score_file, result.scores);
    context.RecordArtifact(score_file, "scores");
    const stdfs::path det_file =
        context.system_folder() / "scores" / eval::DetFileName(file.stem().string(), context.run_id());
    eval::WriteDetPoints(det_file, result.det);
    context.RecordArtifact(det_file, "det");
    const std::string line = backend::FormatResult(result, epoch);
    ASV_LOG(Info, "{}", line);
    summary += line + "\n";
    context.RecordResult(backend::ResultRecordOf(result, epoch));
    thresholds["lists"][name] = {{"file", file.filename().string()},
                                 {"eer", 100.0 * result.metrics.eer.eer},
                                 {"eer_threshold", result.metrics.eer.threshold},
                                 {"min_dcf_p_target", result.metrics.min_dcf.params.p_target},
                                 {"min_dcf_threshold", result.metrics.min_dcf.threshold}};
    if (thresholds["bayes"].empty()) {
      for (const auto& dcf : result.min_dcfs) {
        thresholds["bayes"].push_back({{"p_target", dcf.params.p_target},
                                       {"c_miss", dcf.params.c_miss},
                                       {"c_fa", dcf.params.c_fa},
                                       {"threshold", eval::BayesThreshold(dcf.params)}});
      }
    }
  }
  progress.Finish();
  if (lists.empty()) throw DataError("no trial list of recipe.trial_lists exists: nothing to score");
  const stdfs::path thresholds_file = ThresholdsFile(context.system_folder());
  asv::fs::WriteFileAtomic(thresholds_file, thresholds.dump(2) + "\n");
  context.RecordArtifact(thresholds_file, "thresholds");
  const stdfs::path results = context.system_folder() / "results" / "results.txt";
  asv::fs::WriteFileAtomic(results, summary);
  context.RecordArtifact(results, "results");
}

backend::Embeddings ExtractAll(const data::FeatureSource& source, const std::string& what,
                               const std::function<train::ExtractionResult(const std::vector<int>&)>& extract,
                               double frame_shift_seconds) {
  std::vector<int> all(static_cast<std::size_t>(source.NumUtterances()));
  std::vector<std::string> ids;
  std::vector<double> durations;
  ids.reserve(all.size());
  durations.reserve(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    all[i] = static_cast<int>(i);
    ids.push_back(source.Name(all[i]));
    durations.push_back(static_cast<double>(source.NumFrames(all[i])) * frame_shift_seconds);
  }
  ASV_LOG(Info, "extracting {} embeddings of {} utterances", what, all.size());
  const auto result = extract(all);
  if (!result.truncated.empty()) {
    ASV_LOG(Info, "{}: {} utterances longer than network.max_batch_size_in_frames were truncated to it", what,
            result.truncated.size());
  }
  auto out = backend::CollectEmbeddings(result.embeddings, result.skipped, ids, what, durations);
  ASV_LOG(Info, "{} embeddings: {} in {:.1f} s", what, out.ids.size(), result.seconds);
  return out;
}

GivenAudioEmbeddings EmbedGivenAudio(
    const std::filesystem::path& scratch, const std::function<GivenAudioFeatures()>& prepare,
    const std::function<train::ExtractionResult(const data::FeatureSource&, const std::vector<int>&)>& extract,
    double frame_shift_seconds, const std::function<std::string(const data::FeatureSource&, int)>& why_not) {
  std::filesystem::remove_all(scratch);
  GivenAudioEmbeddings out;
  try {
    auto features = prepare();
    out.skipped = std::move(features.skipped);
    const data::FeatureSource& source = *features.source;
    out.embeddings = ExtractAll(
        source, "embed", [&](const std::vector<int>& utterances) { return extract(source, utterances); },
        frame_shift_seconds);
    const std::set<std::string> kept(out.embeddings.ids.begin(), out.embeddings.ids.end());
    for (int i = 0; i < source.NumUtterances(); ++i) {
      if (kept.count(source.Name(i)) == 0) out.skipped.push_back({source.Name(i), why_not(source, i)});
    }
  } catch (const StageError& e) {
    std::filesystem::remove_all(scratch);
    throw DataError(fmt::format("no embedding: {}", e.what()));
  } catch (...) {
    std::filesystem::remove_all(scratch);
    throw;
  }
  std::filesystem::remove_all(scratch);
  return out;
}

void RecordTrainingEpoch(recipe::RunContext& context, const train::EpochStats& stats) {
  db::EpochRecord record;
  record.epoch = stats.epoch;
  record.loss = stats.loss;
  record.accuracy = stats.accuracy;
  record.learning_rate = stats.learning_rate;
  record.seconds = stats.seconds;
  record.frames_per_second = stats.frames_per_second;
  record.data_wait_percent = 100.0 * stats.data_wait_fraction;
  if (stats.validation) {
    record.val_loss = stats.validation->validation_loss;
    record.val_accuracy = stats.validation->validation_accuracy;
  }
  context.RecordEpoch(record);
  if (!stats.checkpoint.empty()) context.RecordArtifact(stats.checkpoint, "checkpoint");
}

int LastTrainedEpoch(recipe::RunContext& context, const std::filesystem::path& folder) {
  const int found = train::FindLastEpoch(folder);
  if (context.db() == nullptr) return found;
  // The newest run that recorded checkpoints of this folder, and the last epoch it recorded.
  std::int64_t newest_run = 0;
  int recorded = 0;
  const stdfs::path normal = folder.lexically_normal();
  for (const auto& row : context.db()->ArtifactsOfKind("checkpoint")) {
    const stdfs::path path(row.record.path);
    const auto epoch = train::EpochOfCheckpoint(path);
    if (!epoch || path.parent_path().lexically_normal() != normal) continue;
    if (row.run_id != newest_run) {
      if (row.run_id < newest_run) continue;
      newest_run = row.run_id;
      recorded = 0;
    }
    recorded = std::max(recorded, *epoch);
  }
  if (recorded > found) {
    throw DataError(fmt::format(
        "{}: missing: run {} recorded training it, and the newest checkpoint here is {}; restore it, or name "
        "the epoch to use with recipe.selected_epoch",
        train::CheckpointPath(folder, recorded).string(), newest_run,
        found > 0 ? train::CheckpointPath(folder, found).filename().string() : std::string("none")));
  }
  return found;
}

void RecordCheckpointsUsed(recipe::RunContext& context, const std::vector<std::filesystem::path>& checkpoints) {
  for (const auto& checkpoint : checkpoints) context.RecordArtifact(checkpoint, "checkpoint_used");
}

double ScoreDuringTraining(recipe::RunContext& context, const backend::Embeddings& reference,
                           const std::map<std::string, std::string>& speaker_of, const backend::Embeddings& trial,
                           const std::vector<std::pair<std::string, std::filesystem::path>>& lists, int epoch) {
  const auto& settings = context.settings().common().backend;
  std::vector<std::string> speakers;
  for (const auto& id : reference.ids) {
    const auto it = speaker_of.find(id);
    if (it == speaker_of.end()) throw DataError(fmt::format("no speaker for back-end utterance '{}'", id));
    speakers.push_back(it->second);
  }
  // Calibration is for the final scoring: an in-training evaluation compares epochs by EER.
  settings::BackendSettings uncalibrated = settings;
  uncalibrated.calibration = backend::Calibration::kNone;
  const backend::Backend backend(reference, speakers, uncalibrated);
  const auto prepared = backend.Prepare(trial);
  double sum = 0;
  for (const auto& [name, file] : lists) {
    const auto result = backend::ScoreTrialList(backend, prepared, name, file, uncalibrated);
    ASV_LOG(Info, "{}", backend::FormatResult(result, epoch));
    context.RecordResult(backend::ResultRecordOf(result, epoch));
    sum += result.metrics.eer.percent();
  }
  return lists.empty() ? 0.0 : sum / static_cast<double>(lists.size());
}

void RunStageOf(const std::string& recipe, const StageTable& table, const recipe::StageInfo& stage,
                recipe::RunContext& context, const std::string& memory_advice) {
  const auto it = table.find(stage.name);
  if (it == table.end()) {
    throw StageError(fmt::format("{} has no stage {} ('{}')", recipe, stage.number, stage.name));
  }
  try {
    it->second(context);
  } catch (...) {
    train::RethrowAsAsvError(fmt::format("stage {} ({})", stage.number, stage.name), context.device(),
                             memory_advice);
  }
}

recipe::MemoryNeed MeasureTrainingStep(const recipe::StageInfo& stage, nnet::SpeakerNet& net, std::int64_t feat_dim,
                                       std::int64_t frames, train::OptimizerKind optimizer,
                                       const std::string& batch_key, std::int64_t global_batch,
                                       const std::string& examples, const std::string& note) {
  const int optimizer_slots = optimizer == train::OptimizerKind::kAdamW ? 2 : 1;
  const auto memory = train::MeasureStepMemory(net, feat_dim, frames, optimizer_slots);
  recipe::MemoryNeed need;
  need.stage = fmt::format("stage {} ({})", stage.number, stage.name);
  need.batch_key = batch_key;
  need.global_batch = global_batch;
  need.examples = examples;
  need.note = note;
  need.parameters = memory.parameters;
  need.model_bytes = memory.model_bytes;
  std::vector<recipe::MemoryLine> lines;
  for (const auto& l : memory.step) lines.push_back({l.fixed, l.per_example});
  need.step = recipe::UpperEnvelope(std::move(lines));
  return need;
}

}  // namespace asv::recipes::shared
