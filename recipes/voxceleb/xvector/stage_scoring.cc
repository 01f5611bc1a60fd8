#include "recipes/voxceleb/xvector/stage_scoring.h"

#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "asvcpp/backend/evaluation.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/table.h"
#include "asvcpp/eval/score_file.h"
#include "recipes/voxceleb/xvector/xvector_recipe.h"

namespace asv::recipes::voxceleb_xvector {
namespace fs = std::filesystem;

void RunScoring(recipe::RunContext& context) {
  auto& s = SettingsOf(context);
  const auto& r = s.recipe();
  const auto& backend_settings = s.common().backend;
  const fs::path folder = context.system_folder() / "embeddings";
  const auto plda = backend::ReadEmbeddings(folder / "plda");
  const auto trial = backend::ReadEmbeddings(folder / "trial");
  const auto utt2spk = data::ReadTable(folder / "plda.utt2spk", data::ValueFormat::kSingleToken);
  std::vector<std::string> speakers;
  for (const auto& id : plda.ids) {
    const auto it = utt2spk.find(id);
    if (it == utt2spk.end())
      throw DataError(fmt::format("{}: no speaker for '{}'", (folder / "plda.utt2spk").string(), id));
    speakers.push_back(it->second);
  }
  std::optional<int> epoch;
  if (fs::exists(folder / "info.json")) {
    const auto info = nlohmann::json::parse(asv::fs::ReadFile(folder / "info.json"));
    if (info.contains("epoch")) epoch = info["epoch"].get<int>();
  }
  ASV_LOG(Info, "back-end: '{}' processing, {} scoring{} on {} PLDA embeddings of {} speakers",
          backend_settings.processing, EnumToName(backend_settings.scoring),
          backend_settings.scoring == backend::Scoring::kPlda ? fmt::format(" (plda_dim {})", backend_settings.plda_dim) : "",
          plda.ids.size(), std::set<std::string>(speakers.begin(), speakers.end()).size());
  const backend::Backend backend(plda.vectors, speakers, backend_settings);
  const backend::Embeddings processed{trial.ids, backend.Process(trial.vectors)};

  std::vector<std::string> names;
  for (const auto& entry : r.trial_lists) names.push_back(entry.first);
  const auto lists = backend::TrialListFiles(
      names, r.trial_lists, data::ListFolder(context.feature_and_list_folder(), r.trial_dataset), false);
  std::string summary;
  for (const auto& [name, file] : lists) {
    const auto result = backend::ScoreTrialList(backend, processed, name, file, backend_settings);
    const fs::path score_file = context.system_folder() / "scores" / ("scores_" + file.filename().string());
    eval::WriteScoreFile(score_file, result.scores);
    context.RecordArtifact(score_file, "scores");
    const fs::path det_file = context.system_folder() / "scores" / ("det_" + file.stem().string() + ".tsv");
    eval::WriteDetPoints(det_file, result.det);
    context.RecordArtifact(det_file, "det");
    const std::string line = backend::FormatResult(result, epoch);
    ASV_LOG(Info, "{}", line);
    summary += line + "\n";
    context.RecordResult(backend::ResultRecordOf(result, epoch));
  }
  if (lists.empty()) throw DataError("no trial list of recipe.trial_lists exists: nothing to score");
  const fs::path results = context.system_folder() / "results" / "results.txt";
  asv::fs::WriteFileAtomic(results, summary);
  context.RecordArtifact(results, "results");
}

}  // namespace asv::recipes::voxceleb_xvector
