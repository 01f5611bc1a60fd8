#include "recipes/shared/xvector/xvector_stages.h"

#include <map>
#include <set>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/table.h"
#include "asvcpp/features/feature_options.h"
#include "asvcpp/features/kaldi_options.h"
#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/recipe/run_context.h"
#include "recipes/shared/recipe_stages.h"
#include "recipes/shared/xvector/stage_augment.h"
#include "recipes/shared/xvector/stage_embeddings.h"
#include "recipes/shared/xvector/stage_features.h"
#include "recipes/shared/xvector/stage_inputs.h"
#include "recipes/shared/xvector/stage_scoring.h"
#include "recipes/shared/xvector/stage_train.h"
#include "recipes/shared/xvector/xvector_settings.h"

namespace asv::recipes::xvector {
namespace {

// The function of each shared stage by the stage's name (the recipes' stage tables give their
// numbers and descriptions).
const shared::StageTable& SharedStageFunctions() {
  static const shared::StageTable functions = {
      {"features", RunFeatureStage}, {"augmentation", RunAugmentationStage}, {"train", RunTraining},
      {"embeddings", RunEmbeddingExtraction}, {"scoring", RunScoring},
  };
  return functions;
}

}  // namespace

XvectorStageRunner::XvectorStageRunner(std::string recipe, void (*prepare)(recipe::RunContext&),
                                       std::vector<std::string> known)
    : recipe_(std::move(recipe)), prepare_(prepare), known_(std::move(known)) {}

bool XvectorStageRunner::HasStage(const recipe::StageInfo& stage) const {
  return stage.name == "prepare" || SharedStageFunctions().count(stage.name) > 0;
}

void XvectorStageRunner::RunStage(const recipe::StageInfo& stage, recipe::RunContext& context) const {
  if (dynamic_cast<const XvectorSettings*>(&context.settings()) == nullptr) {
    throw StageError(recipe_ + ": the run context does not hold this recipe's settings");
  }
  shared::StageTable table = SharedStageFunctions();
  table["prepare"] = prepare_;
  shared::RunStageOf(recipe_, table, stage, context,
                     "lower network.minibatch_size or network.max_clip_size (training), "
                     "network.max_batch_size_in_frames (validation and extraction), or the network "
                     "(network.frame_layer_size, network.stat_size)");
}

std::vector<std::string> XvectorStageRunner::MissingInputs(const recipe::StageInfo& stage,
                                                           recipe::RunContext& context,
                                                           const std::vector<int>& earlier) const {
  return MissingStageInputs(stage, context, earlier, known_);
}

std::optional<recipe::MemoryNeed> XvectorStageRunner::TrainingMemory(const recipe::StageInfo& stage,
                                                                     recipe::RunContext& context) const {
  if (stage.name != "train") return std::nullopt;
  const auto& s = SettingsOf(context);
  const auto& network = s.common().network;
  const std::string examples = fmt::format("clips of {} frames", network.max_clip_size);
  // MFCCs of paths.kaldi_mfcc_conf_file, with the deltas of features.deltas.
  std::int64_t feat_dim = 0;
  try {
    feat_dim = features::ReadKaldiConfig<features::MfccOptions>(s.common().paths.kaldi_mfcc_conf_file).num_ceps;
  } catch (const std::exception& e) {
    recipe::MemoryNeed need;
    need.stage = fmt::format("stage {} ({})", stage.number, stage.name);
    need.note = e.what();
    need.estimated = false;
    return need;
  }
  const auto deltas = s.common().features.deltas;
  feat_dim *= deltas == features::Deltas::kBase ? 1 : deltas == features::Deltas::kDelta ? 2 : 3;
  // The head has a row per training speaker (at most those of recipe.training_datasets' lists).
  std::set<std::string> speakers;
  std::vector<std::string> missing;
  for (const auto& dataset : s.recipe().training_datasets) {
    const std::filesystem::path spk2utt = data::ListFolder(context.feature_and_list_folder(), dataset) / data::kSpk2Utt;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(spk2utt, ec)) {
      missing.push_back(spk2utt.string());
      continue;
    }
    for (const auto& entry : data::ReadSpk2Utt(spk2utt)) speakers.insert(entry.first);
  }
  std::string note;
  if (!missing.empty()) {
    note = fmt::format("the head is not counted in full: {} do{} not exist yet", fmt::join(missing, ", "),
                       missing.size() == 1 ? "es" : "");
  }
  const auto classes = std::max<std::int64_t>(2, static_cast<std::int64_t>(speakers.size()));
  auto net = nnet::MakeXvectorNet(network, feat_dim, classes);
  return shared::MeasureTrainingStep(stage, *net, feat_dim, network.max_clip_size, network.optimizer,
                                       "network.minibatch_size", network.minibatch_size, examples, note);
}

}  // namespace asv::recipes::xvector
