// Runs the stages of sitw/xvector (the stage table of sitw_recipe.h): 0 prepare (VoxCeleb1,
// VoxCeleb2 and SITW through shared::PrepareDatasets) and the shared x-vector stages 1-9
// (recipes/shared/xvector/xvector_stages.h).
#pragma once

#include "recipes/shared/xvector/xvector_stages.h"

namespace asv::recipe {
class RunContext;
}

namespace asv::recipes::sitw_xvector {

/// Stage 0: shared::PrepareDatasets of recipe.preparation_datasets (None: each of voxceleb1,
/// voxceleb2 and sitw that paths.datasets names) with the recipe's trial lists. Throws what
/// PrepareDatasets throws.
void RunPrepareStage(recipe::RunContext& context);

class SitwStages : public xvector::XvectorStageRunner {
 public:
  SitwStages();
};

}  // namespace asv::recipes::sitw_xvector
