// Runs the stages of voxceleb/xvector (the stage table of xvector_recipe.h): 0 prepare
// (stage_prepare.h), 1 features (stage_features.h), 2 augmentation (stage_augment.h), 5 training
// (stage_train.h), 7 embedding extraction (stage_embeddings.h) and 9 scoring (stage_scoring.h).
#pragma once

#include <string>
#include <vector>

#include "asvcpp/recipe/recipe.h"

namespace asv::recipes::voxceleb_xvector {

class XvectorStages : public recipe::StageRunner {
 public:
  bool HasStage(const recipe::StageInfo& stage) const override;
  /// Runs `stage` (found by its name) with the XvectorSettings that `context` holds. Throws
  /// StageError when the context holds another recipe's settings and for a stage the recipe does
  /// not have; the stages' own errors pass through.
  void RunStage(const recipe::StageInfo& stage, recipe::RunContext& context) const override;
  /// MissingStageInputs (stage_inputs.h).
  std::vector<std::string> MissingInputs(const recipe::StageInfo& stage, recipe::RunContext& context,
                                         const std::vector<int>& earlier) const override;
  std::optional<recipe::MemoryNeed> TrainingMemory(const recipe::StageInfo& stage,
                                                   recipe::RunContext& context) const override;
};

}  // namespace asv::recipes::voxceleb_xvector
