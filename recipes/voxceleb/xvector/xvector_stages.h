// Runs the stages of voxceleb/xvector (xvector_recipe.h): 0 prepare (stage_prepare.h),
// 1 features (stage_features.h), 2 augmentation (stage_augment.h), 5 training (stage_train.h),
// 7 embedding extraction and 9 scoring (stage_embeddings.h).
#pragma once

#include "asvcpp/recipe/recipe.h"

namespace asv::recipes::voxceleb_xvector {

class XvectorStages : public recipe::StageRunner {
 public:
  /// Runs stage `stage.number` with the XvectorSettings that `context` holds. Throws StageError
  /// when the context holds another recipe's settings and for a stage number the recipe does not
  /// have; the stages' own errors pass through.
  void RunStage(const recipe::StageInfo& stage, recipe::RunContext& context) const override;
};

}  // namespace asv::recipes::voxceleb_xvector
