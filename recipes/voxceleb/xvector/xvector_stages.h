// Runs the stages of voxceleb/xvector (the stage table of xvector_recipe.h): 0 prepare
// (stage_prepare.h) and the shared x-vector stages 1-9 (recipes/shared/xvector/xvector_stages.h).
#pragma once

#include "recipes/shared/xvector/xvector_stages.h"

namespace asv::recipes::voxceleb_xvector {

class XvectorStages : public xvector::XvectorStageRunner {
 public:
  XvectorStages();
};

}  // namespace asv::recipes::voxceleb_xvector
