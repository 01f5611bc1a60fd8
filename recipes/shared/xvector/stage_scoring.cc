#include "recipes/shared/xvector/stage_scoring.h"

#include "recipes/shared/recipe_stages.h"
#include "recipes/shared/xvector/xvector_settings.h"

namespace asv::recipes::xvector {

void RunScoring(recipe::RunContext& context) {
  const auto& r = SettingsOf(context).recipe();
  shared::ScoreTrialLists(context, r.trial_dataset, r.trial_lists);
}

}  // namespace asv::recipes::xvector
