#include "recipes/voxceleb/xvector/stage_scoring.h"

#include "recipes/voxceleb/shared/voxceleb_stages.h"
#include "recipes/voxceleb/xvector/xvector_recipe.h"

namespace asv::recipes::voxceleb_xvector {

void RunScoring(recipe::RunContext& context) {
  const auto& r = SettingsOf(context).recipe();
  voxceleb::ScoreTrialLists(context, r.trial_dataset, r.trial_lists);
}

}  // namespace asv::recipes::voxceleb_xvector
