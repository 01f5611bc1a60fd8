#include "recipes/voxceleb/xvector/xvector_stages.h"

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/recipe/run_context.h"
#include "recipes/voxceleb/xvector/stage_augment.h"
#include "recipes/voxceleb/xvector/stage_embeddings.h"
#include "recipes/voxceleb/xvector/stage_features.h"
#include "recipes/voxceleb/xvector/stage_prepare.h"
#include "recipes/voxceleb/xvector/stage_train.h"
#include "recipes/voxceleb/xvector/xvector_recipe.h"

namespace asv::recipes::voxceleb_xvector {

void XvectorStages::RunStage(const recipe::StageInfo& stage, recipe::RunContext& context) const {
  const auto* settings = dynamic_cast<const XvectorSettings*>(&context.settings());
  if (settings == nullptr) throw StageError("voxceleb/xvector: the run context does not hold this recipe's settings");
  switch (stage.number) {
    case 0:
      RunPrepareStage(*settings, context);
      return;
    case 1:
      RunFeatureStage(*settings, context);
      return;
    case 2:
      RunAugmentationStage(*settings, context);
      return;
    case 5:
      RunTraining(context);
      return;
    case 7:
      RunEmbeddingExtraction(context);
      return;
    case 9:
      RunScoring(context);
      return;
    default:
      break;
  }
  throw StageError(fmt::format("voxceleb/xvector has no stage {}", stage.number));
}

}  // namespace asv::recipes::voxceleb_xvector
