#include "recipes/voxceleb/xvector/stage_prepare.h"

#include "asvcpp/recipe/run_context.h"
#include "recipes/voxceleb/xvector/xvector_recipe.h"

namespace asv::recipes::voxceleb_xvector {

void RunPrepareStage(recipe::RunContext& context) {
  const auto& r = SettingsOf(context).recipe();
  shared::PrepareDatasets(context, r.preparation_datasets, r.trial_dataset, r.trial_lists);
}

}  // namespace asv::recipes::voxceleb_xvector
