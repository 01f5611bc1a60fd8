// Runs the stages of voxceleb/margin (the stage table of margin_recipe.h): 0 prepare (the shared
// VoxCeleb list preparation), 1 PCM stores (stage_pcm.h), 5 training and 6 averaging
// (stage_train.h), 7 large-margin fine-tuning (stage_train.h), 8 embeddings (stage_embeddings.h),
// 9 scoring (the shared trial-list scoring).
#pragma once

#include <string>
#include <vector>

#include "asvcpp/recipe/recipe.h"

namespace asv::recipes::voxceleb_margin {

class MarginStages : public recipe::StageRunner {
 public:
  bool HasStage(const recipe::StageInfo& stage) const override;
  /// Runs `stage` (found by its name) with the MarginSettings that `context` holds. Throws
  /// StageError when the context holds another recipe's settings and for a stage the recipe does
  /// not have; the stages' own errors pass through.
  void RunStage(const recipe::StageInfo& stage, recipe::RunContext& context) const override;
  /// The files each stage reads that neither exist nor come from an earlier stage of the run.
  std::vector<std::string> MissingInputs(const recipe::StageInfo& stage, recipe::RunContext& context,
                                         const std::vector<int>& earlier) const override;
  std::optional<recipe::MemoryNeed> TrainingMemory(const recipe::StageInfo& stage,
                                                   recipe::RunContext& context) const override;
};

}  // namespace asv::recipes::voxceleb_margin
