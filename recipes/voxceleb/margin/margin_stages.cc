#include "recipes/voxceleb/margin/margin_stages.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/pcm_store.h"
#include "asvcpp/data/table.h"
#include "asvcpp/recipe/run_context.h"
#include "asvcpp/train/checkpoint.h"
#include "recipes/voxceleb/margin/margin_recipe.h"
#include "recipes/voxceleb/margin/stage_embeddings.h"
#include "recipes/voxceleb/margin/stage_pcm.h"
#include "recipes/voxceleb/margin/stage_train.h"
#include "recipes/shared/recipe_stages.h"

namespace asv::recipes::voxceleb_margin {
namespace {

namespace stdfs = std::filesystem;

void RunPrepare(recipe::RunContext& context) {
  const auto& r = SettingsOf(context).recipe();
  shared::PrepareDatasets(context, r.preparation_datasets, r.trial_dataset, r.trial_lists);
}

void RunScoring(recipe::RunContext& context) {
  const auto& r = SettingsOf(context).recipe();
  shared::ScoreTrialLists(context, r.trial_dataset, r.trial_lists);
}

// The function of each stage of MarginRecipe::stages(), by the stage's name.
const shared::StageTable& MarginStageFunctions() {
  static const shared::StageTable functions = {
      {"prepare", RunPrepare},   {"pcm", RunPcmStage},
      {"train", RunTraining},    {"average", RunAveraging},
      {"finetune", RunFineTuning}, {"embeddings", RunEmbeddingExtraction},
      {"scoring", RunScoring},
  };
  return functions;
}

bool Ran(const std::vector<int>& earlier, int stage) {
  return std::find(earlier.begin(), earlier.end(), stage) != earlier.end();
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

bool MarginStages::HasStage(const recipe::StageInfo& stage) const {
  return MarginStageFunctions().count(stage.name) > 0;
}

void MarginStages::RunStage(const recipe::StageInfo& stage, recipe::RunContext& context) const {
  if (dynamic_cast<const MarginSettings*>(&context.settings()) == nullptr) {
    throw StageError("voxceleb/margin: the run context does not hold this recipe's settings");
  }
  shared::RunStageOf("voxceleb/margin", MarginStageFunctions(), stage, context,
                       "lower network.minibatch_size (stage 5), recipe.lm_minibatch_size (stage 7), "
                       "recipe.num_frames or recipe.lm_num_frames, or the model (recipe.channels, "
                       "recipe.embedding_size)");
}

std::vector<std::string> MarginStages::MissingInputs(const recipe::StageInfo& stage, recipe::RunContext& context,
                                                     const std::vector<int>& earlier) const {
  const auto& s = SettingsOf(context);
  const auto& r = s.recipe();
  const auto& paths = s.common().paths;
  const stdfs::path root = context.feature_and_list_folder();
  std::vector<std::string> missing;
  auto need = [&](const stdfs::path& path, const std::string& from) {
    std::error_code ec;
    if (!stdfs::exists(path, ec)) missing.push_back(fmt::format("{} ({})", path.string(), from));
  };
  // A dataset's lists come from stage 0 when it runs earlier and prepares that dataset.
  auto lists_come = [&](const std::string& dataset) {
    if (!Ran(earlier, 0)) return false;
    const bool all = !r.preparation_datasets.has_value();
    const std::string prepared = dataset == "voxceleb2_cat" ? "voxceleb2" : dataset;
    return (all && paths.datasets.Contains(prepared)) || (!all && Contains(*r.preparation_datasets, prepared));
  };
  auto store_comes = [&](const std::string& dataset) { return Ran(earlier, 1) && Contains(r.pcm_datasets, dataset); };
  auto need_store = [&](const std::string& dataset, const std::string& setting) {
    if (!store_comes(dataset)) {
      need(PcmFolder(root, dataset) / std::string(data::kPcmHeaderFile), setting + ": its PCM store, from stage 1");
    }
  };
  const stdfs::path networks = TrainingFolder(context);
  if (stage.name == "prepare") {
    try {
      for (const auto& job : shared::ResolvePreparationJobs(r.preparation_datasets, paths.datasets)) {
        need(job.corpus, "paths.datasets['" + job.name + "']");
      }
    } catch (const DataError& e) {
      missing.push_back(e.what());
    }
  } else if (stage.name == "pcm") {
    for (const auto& dataset : r.pcm_datasets) {
      if (!lists_come(dataset)) need(data::ListFolder(root, dataset) / data::kWavScp, "recipe.pcm_datasets");
    }
  } else if (stage.name == "train") {
    if (r.PretrainedStartsTraining()) need(r.pretrained_model, "recipe.pretrained_model");
    need_store(r.training_dataset, "recipe.training_dataset");
    if (!lists_come(r.training_dataset)) {
      need(data::ListFolder(root, r.training_dataset) / data::kUtt2Spk, "recipe.training_dataset");
    }
    if (r.aug_prob > 0) {
      need(paths.musan_folder, "paths.musan_folder (recipe.aug_prob > 0)");
      need(paths.rirs_folder.empty() ? stdfs::path(paths.kaldi_recipe_folder) / "RIRS_NOISES"
                                     : stdfs::path(paths.rirs_folder),
           "paths.rirs_folder (recipe.aug_prob > 0)");
    }
  } else if (stage.name == "average") {
    if (!Ran(earlier, 5)) need(train::CheckpointPath(networks, 1), "stage 5");
  } else if (stage.name == "finetune") {
    if (r.PretrainedStartsFineTuning()) {
      need(r.pretrained_model, "recipe.pretrained_model");
    } else if (r.lm_epochs > 0 && !Ran(earlier, 6)) {
      need(networks / AveragedModelName(), "stage 6");
    }
    if (r.lm_epochs > 0 && r.lm_resume_epoch > 0) {
      need(train::CheckpointPath(FineTuningFolder(context), r.lm_resume_epoch), "recipe.lm_resume_epoch");
    }
  } else if (stage.name == "embeddings") {
    if (r.selected_epoch) {
      if (!Ran(earlier, 5)) need(train::CheckpointPath(networks, *r.selected_epoch), "recipe.selected_epoch");
    } else if (r.PretrainedIsExtracted()) {
      need(r.pretrained_model, "recipe.pretrained_model");
    } else if (r.lm_epochs > 0) {
      if (!Ran(earlier, 7)) need(ModelForExtraction(s, context), "stage 7");
    } else if (!Ran(earlier, 6)) {
      need(networks / AveragedModelName(), "stage 6");
    }
    need_store(r.trial_dataset, "recipe.trial_dataset");
    need_store(r.training_dataset, "recipe.training_dataset (back-end utterances)");
  } else if (stage.name == "scoring") {
    if (!Ran(earlier, 8)) {
      for (const char* name : {"trial.scp", "plda.scp", "plda.utt2spk"}) {
        need(context.system_folder() / "embeddings" / name, "stage 8");
      }
    }
  }
  return missing;
}

std::optional<recipe::MemoryNeed> MarginStages::TrainingMemory(const recipe::StageInfo& stage,
                                                               recipe::RunContext& context) const {
  const auto& s = SettingsOf(context);
  const auto& r = s.recipe();
  const bool fine_tuning = stage.name == "finetune";
  if (stage.name != "train" && !(fine_tuning && r.lm_epochs > 0)) return std::nullopt;
  const std::string batch_key = fine_tuning ? "recipe.lm_minibatch_size" : "network.minibatch_size";
  const int batch = fine_tuning ? r.lm_minibatch_size : s.common().network.minibatch_size;
  const int frames = fine_tuning ? r.lm_num_frames : r.num_frames;
  // The head has a row per class: the training speakers (x3 with speed perturbation), known once
  // stage 0 has listed them.
  const stdfs::path spk2utt = data::ListFolder(context.feature_and_list_folder(), r.training_dataset) / data::kSpk2Utt;
  std::int64_t classes = 2;
  std::string note;
  std::error_code ec;
  if (stdfs::is_regular_file(spk2utt, ec)) {
    classes = std::max<std::int64_t>(2, static_cast<std::int64_t>(data::ReadSpk2Utt(spk2utt).size()));
    if (fine_tuning ? r.lm_speed_perturb : r.speed_perturb) classes *= 3;
  } else {
    note = fmt::format("the head is not counted: {} does not exist yet", spk2utt.string());
  }
  auto net = MakeNetwork(s, r.num_mel_bins, classes, "cpu");
  return shared::MeasureTrainingStep(stage, *net, r.num_mel_bins, frames, s.common().network.optimizer, batch_key,
                                       batch, fmt::format("segments of {} frames", frames), note);
}

}  // namespace asv::recipes::voxceleb_margin
