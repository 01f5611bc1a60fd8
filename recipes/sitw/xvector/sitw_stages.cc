#include "recipes/sitw/xvector/sitw_stages.h"

#include "recipes/shared/recipe_stages.h"
#include "recipes/shared/xvector/xvector_settings.h"

namespace asv::recipes::sitw_xvector {

void RunPrepareStage(recipe::RunContext& context) {
  const auto& r = xvector::SettingsOf(context).recipe();
  shared::PrepareDatasets(context, r.preparation_datasets, r.trial_dataset, r.trial_lists,
                          shared::SitwPreparableDatasets());
}

SitwStages::SitwStages() : XvectorStageRunner("sitw/xvector", RunPrepareStage, shared::SitwPreparableDatasets()) {}

}  // namespace asv::recipes::sitw_xvector
