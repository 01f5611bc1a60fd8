#include "recipes/voxceleb/margin/stage_embeddings.h"

#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "asvcpp/backend/evaluation.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/table.h"
#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/recipe/run_context.h"
#include "asvcpp/train/checkpoint.h"
#include "asvcpp/train/embedding_extractor.h"
#include "asvcpp/train/precision.h"
#include "recipes/voxceleb/margin/margin_data.h"
#include "recipes/voxceleb/margin/margin_model.h"
#include "recipes/voxceleb/margin/margin_recipe.h"
#include "recipes/voxceleb/margin/stage_train.h"
#include "recipes/shared/recipe_stages.h"

namespace asv::recipes::voxceleb_margin {
namespace stdfs = std::filesystem;
using backend::Embeddings;

void RunEmbeddingExtraction(recipe::RunContext& context) {
  auto& s = SettingsOf(context);
  const auto& r = s.recipe();
  const stdfs::path model = ModelForExtraction(s, context);
  if (!stdfs::exists(model)) {
    throw DataError(fmt::format("{} does not exist: {}", model.string(),
                                r.selected_epoch   ? "train that epoch first (stage 5)"
                                : r.lm_epochs > 0 ? "fine-tune first (stage 7)"
                                                  : "average the checkpoints first (stage 6)"));
  }
  train::ApplyMathModes(s.common().computing.allow_tf32);
  ASV_LOG(Info, "embedding extraction with {} on {}", model.string(), context.device());
  // The loading that `asvrun embed` shares (margin_model.h), so that both give the same embeddings.
  const auto run_model = LoadRunModel(s, context.output_folder(), context.device());
  const auto& extractor = run_model.extractor;
  shared::RecordCheckpointsUsed(context, {run_model.file});
  const auto& options = run_model.extraction;

  std::vector<std::string> names;
  for (const auto& entry : r.trial_lists) names.push_back(entry.first);
  const auto lists = backend::TrialListFiles(
      names, r.trial_lists, data::ListFolder(context.feature_and_list_folder(), r.trial_dataset), false);
  if (lists.empty()) {
    throw DataError(fmt::format("none of the trial lists of recipe.trial_lists exists in {}",
                                data::ListFolder(context.feature_and_list_folder(), r.trial_dataset).string()));
  }
  const auto trial_source = TrialUtterances(context, lists);
  const double shift = FbankOf(s).frame_opts.frame_shift_ms / 1000.0;
  const auto trial = shared::ExtractAll(
      *trial_source, "trial", [&](const std::vector<int>& u) { return extractor.Extract(*trial_source, u, options); },
      shift);
  const auto reference = BackendUtterances(context);
  const auto backend_embeddings = shared::ExtractAll(
      *reference.source, "back-end",
      [&](const std::vector<int>& u) { return extractor.Extract(*reference.source, u, options); }, shift);

  const stdfs::path folder = context.system_folder() / "embeddings";
  backend::WriteEmbeddings(folder / "trial", trial);
  backend::WriteEmbeddings(folder / "plda", backend_embeddings);
  std::map<std::string, std::string> speaker_of;
  const auto ids = reference.source->Ids();
  for (std::size_t i = 0; i < ids.size(); ++i) speaker_of[ids[i]] = reference.speakers[i];
  data::Table utt2spk;
  for (const auto& id : backend_embeddings.ids) utt2spk[id] = speaker_of.at(id);
  data::WriteTable(folder / "plda.utt2spk", utt2spk);
  std::vector<std::string> speakers;
  for (const auto& id : backend_embeddings.ids) speakers.push_back(speaker_of.at(id));
  shared::WriteSpeakerCohort(context, folder / "cohort", backend::SpeakerMeans(backend_embeddings, speakers),
                               folder / "plda.ark");
  nlohmann::json info{{"model", model.string()}};
  if (r.selected_epoch) info["epoch"] = *r.selected_epoch;
  asv::fs::WriteFileAtomic(folder / "info.json", info.dump(2) + "\n");
  for (const char* name :
       {"trial.ark", "trial.scp", "trial.utt2dur", "plda.ark", "plda.scp", "plda.utt2spk", "plda.utt2dur"}) {
    context.RecordArtifact(folder / name, "embeddings");
  }
}

}  // namespace asv::recipes::voxceleb_margin
