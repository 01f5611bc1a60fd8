#include "recipes/voxceleb/xvector/xvector_stages.h"

#include "recipes/shared/recipe_stages.h"
#include "recipes/voxceleb/xvector/stage_prepare.h"

namespace asv::recipes::voxceleb_xvector {

XvectorStages::XvectorStages()
    : XvectorStageRunner("voxceleb/xvector", RunPrepareStage, shared::PreparableDatasets()) {}

}  // namespace asv::recipes::voxceleb_xvector
