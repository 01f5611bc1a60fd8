#include "recipes/voxceleb/xvector/xvector_stages.h"

#include <map>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/recipe/run_context.h"
#include "asvcpp/train/torch_errors.h"
#include "recipes/voxceleb/xvector/stage_augment.h"
#include "recipes/voxceleb/xvector/stage_embeddings.h"
#include "recipes/voxceleb/xvector/stage_features.h"
#include "recipes/voxceleb/xvector/stage_inputs.h"
#include "recipes/voxceleb/xvector/stage_prepare.h"
#include "recipes/voxceleb/xvector/stage_scoring.h"
#include "recipes/voxceleb/xvector/stage_train.h"
#include "recipes/voxceleb/xvector/xvector_recipe.h"

namespace asv::recipes::voxceleb_xvector {
namespace {

using StageFunction = void (*)(recipe::RunContext&);

// The function of each stage of XvectorRecipe::stages(), by the stage's name (its number and
// description live only in that table).
const std::map<std::string, StageFunction>& StageFunctions() {
  static const std::map<std::string, StageFunction> functions = {
      {"prepare", RunPrepareStage},
      {"features", RunFeatureStage},
      {"augmentation", RunAugmentationStage},
      {"train", RunTraining},
      {"embeddings", RunEmbeddingExtraction},
      {"scoring", RunScoring},
  };
  return functions;
}

}  // namespace

bool XvectorStages::HasStage(const recipe::StageInfo& stage) const {
  return StageFunctions().count(stage.name) > 0;
}

void XvectorStages::RunStage(const recipe::StageInfo& stage, recipe::RunContext& context) const {
  if (dynamic_cast<const XvectorSettings*>(&context.settings()) == nullptr) {
    throw StageError("voxceleb/xvector: the run context does not hold this recipe's settings");
  }
  const auto it = StageFunctions().find(stage.name);
  if (it == StageFunctions().end()) {
    throw StageError(fmt::format("voxceleb/xvector has no stage {} ('{}')", stage.number, stage.name));
  }
  try {
    it->second(context);
  } catch (...) {
    train::RethrowAsAsvError(fmt::format("stage {} ({})", stage.number, stage.name), context.device(),
                             "lower network.minibatch_size or network.max_clip_size (training), "
                             "network.max_batch_size_in_frames (validation and extraction), or the network "
                             "(network.frame_layer_size, network.stat_size)");
  }
}

std::vector<std::string> XvectorStages::MissingInputs(const recipe::StageInfo& stage, recipe::RunContext& context,
                                                      const std::vector<int>& earlier) const {
  return MissingStageInputs(stage, context, earlier);
}

}  // namespace asv::recipes::voxceleb_xvector
