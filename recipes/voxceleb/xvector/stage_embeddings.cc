#include "recipes/voxceleb/xvector/stage_embeddings.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <numeric>
#include <set>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/table.h"
#include "asvcpp/db/database.h"
#include "asvcpp/eval/score_file.h"
#include "asvcpp/train/checkpoint.h"
#include "asvcpp/train/embedding_extractor.h"
#include "asvcpp/train/precision.h"
#include "recipes/voxceleb/xvector/datasets.h"
#include "recipes/voxceleb/xvector/evaluation.h"
#include "recipes/voxceleb/xvector/stage_prepare.h"

namespace asv::recipes::voxceleb_xvector {
namespace fs = std::filesystem;

namespace {

Embeddings ExtractAll(const train::EmbeddingExtractor& extractor, const KaldiFeatureSource& source,
                      const train::ExtractionOptions& options, const std::string& what) {
  std::vector<int> all(static_cast<std::size_t>(source.NumUtterances()));
  std::iota(all.begin(), all.end(), 0);
  ASV_LOG(Info, "extracting {} embeddings of {} utterances", what, all.size());
  const auto result = extractor.Extract(source, all, options);
  if (!result.truncated.empty()) {
    ASV_LOG(Info, "{}: {} utterances longer than network.max_batch_size_in_frames were truncated to it", what,
            result.truncated.size());
  }
  auto out = CollectEmbeddings(result, source.ids(), what);
  ASV_LOG(Info, "{} embeddings: {} in {:.1f} s", what, out.ids.size(), result.seconds);
  return out;
}


}  // namespace

void RunEmbeddingExtraction(recipe::RunContext& context) {
  auto& s = SettingsOf(context);
  const auto& r = s.recipe();
  const fs::path networks = context.system_folder() / "networks";
  const int epoch = r.selected_epoch ? *r.selected_epoch : train::FindLastContiguousEpoch(networks);
  if (epoch <= 0) {
    throw DataError(fmt::format("{}: no network checkpoint epoch.1.pt: train first (stage 5) or set "
                                "recipe.selected_epoch",
                                networks.string()));
  }
  const fs::path checkpoint = train::CheckpointPath(networks, epoch);
  const std::string device = DeviceOf(context, s);
  train::ApplyMathModes(s.common().computing.allow_tf32);
  ASV_LOG(Info, "embedding extraction with {} on {}", checkpoint.string(), device);
  const auto extractor = train::EmbeddingExtractor::FromCheckpoint(checkpoint, s.common().network, device);
  auto options = train::ExtractionOptions::FromSettings(s.common().network, s.common().computing.network_dataloader_workers);
  options.skip_empty = true;

  // Trial utterances: both sides of every existing trial list, first-appearance order.
  std::vector<std::string> names;
  for (const auto& entry : r.trial_lists) names.push_back(entry.first);
  const auto lists = TrialListFiles(names, r.trial_lists, ListFolderOf(context, r.trial_dataset), false);
  if (lists.empty()) {
    throw DataError(fmt::format("none of the trial lists of recipe.trial_lists exists in {}",
                                ListFolderOf(context, r.trial_dataset).string()));
  }
  const auto trial_ids = TrialSides(lists);
  const auto trial_data = LoadDatasets(context, {r.trial_dataset});
  const KaldiFeatureSource trial_source(trial_ids, trial_data.stored, s.common().features);
  const auto trial = ExtractAll(extractor, trial_source, options, "trial");

  const auto plda_data = LoadDatasets(context, r.plda_datasets);
  const KaldiFeatureSource plda_source(plda_data.ids, plda_data.stored, s.common().features);
  const auto plda = ExtractAll(extractor, plda_source, options, "PLDA");

  const fs::path folder = context.system_folder() / "embeddings";
  WriteEmbeddings(folder / "trial", trial);
  WriteEmbeddings(folder / "plda", plda);
  std::map<std::string, std::string> speaker_of;
  for (std::size_t i = 0; i < plda_data.ids.size(); ++i) speaker_of[plda_data.ids[i]] = plda_data.speakers[i];
  data::Table utt2spk;
  for (const auto& id : plda.ids) utt2spk[id] = speaker_of.at(id);
  data::WriteTable(folder / "plda.utt2spk", utt2spk);
  asv::fs::WriteFileAtomic(folder / "info.json",
                           nlohmann::json{{"epoch", epoch}, {"checkpoint", checkpoint.string()}}.dump(2) + "\n");
  for (const char* name : {"trial.ark", "trial.scp", "plda.ark", "plda.scp", "plda.utt2spk"}) {
    RecordFileArtifact(context, folder / name, "embeddings");
  }
}

void RunScoring(recipe::RunContext& context) {
  auto& s = SettingsOf(context);
  const auto& r = s.recipe();
  const auto& backend_settings = s.common().backend;
  const fs::path folder = context.system_folder() / "embeddings";
  const auto plda = ReadEmbeddings(folder / "plda");
  const auto trial = ReadEmbeddings(folder / "trial");
  const auto utt2spk = data::ReadTable(folder / "plda.utt2spk", data::ValueFormat::kSingleToken);
  std::vector<std::string> speakers;
  for (const auto& id : plda.ids) {
    const auto it = utt2spk.find(id);
    if (it == utt2spk.end()) throw DataError(fmt::format("{}: no speaker for '{}'", (folder / "plda.utt2spk").string(), id));
    speakers.push_back(it->second);
  }
  std::optional<int> epoch;
  if (fs::exists(folder / "info.json")) {
    const auto info = nlohmann::json::parse(asv::fs::ReadFile(folder / "info.json"));
    if (info.contains("epoch")) epoch = info["epoch"].get<int>();
  }
  ASV_LOG(Info, "back-end: '{}' processing, {} scoring{} on {} PLDA embeddings of {} speakers", backend_settings.processing,
          backend_settings.scoring,
          backend_settings.scoring == "plda" ? fmt::format(" (plda_dim {})", backend_settings.plda_dim) : "",
          plda.ids.size(), std::set<std::string>(speakers.begin(), speakers.end()).size());
  const Backend backend(plda.vectors, speakers, backend_settings);
  const Embeddings processed{trial.ids, backend.Process(trial.vectors)};

  std::vector<std::string> names;
  for (const auto& entry : r.trial_lists) names.push_back(entry.first);
  const auto lists = TrialListFiles(names, r.trial_lists, ListFolderOf(context, r.trial_dataset), false);
  std::string summary;
  for (const auto& [name, file] : lists) {
    const auto result = ScoreTrialList(backend, processed, name, file, backend_settings);
    const fs::path score_file = context.system_folder() / "scores" / ("scores_" + file.filename().string());
    eval::WriteScoreFile(score_file, result.scores);
    RecordFileArtifact(context, score_file, "scores");
    const std::string line = FormatResult(result, epoch);
    ASV_LOG(Info, "{}", line);
    summary += line + "\n";
    if (context.db() != nullptr) RecordResult(*context.db(), context.run_id(), epoch, result, 9);
  }
  if (lists.empty()) throw DataError("no trial list of recipe.trial_lists exists: nothing to score");
  const fs::path results = context.system_folder() / "results" / "results.txt";
  asv::fs::WriteFileAtomic(results, summary);
  RecordFileArtifact(context, results, "results");
}

}  // namespace asv::recipes::voxceleb_xvector
