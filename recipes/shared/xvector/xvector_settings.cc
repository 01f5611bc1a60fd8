#include "recipes/shared/xvector/xvector_settings.h"

#include <string>

#include "asvcpp/recipe/run_context.h"
#include "asvcpp/settings/name_checks.h"

namespace asv::recipes::xvector {

void XvectorSettings::CheckRecipeNames() {
  using settings::NamesIn;
  using settings::PlainNames;
  settings::Group& group = *tree_.FindGroup("recipe");
  for (const char* field : {"preparation_datasets", "feature_extraction_datasets", "training_datasets",
                            "plda_datasets", "evaluation_plda_datasets", "trial_dataset"}) {
    group.Find(field)->Check(PlainNames("recipe." + std::string(field), "dataset name", NamesIn::kStrings));
  }
  group.Find("augmentation_datasets")
      ->Check(PlainNames("recipe.augmentation_datasets", "dataset name", NamesIn::kDictKeys));
  group.Find("trial_lists")
      ->Check(PlainNames("recipe.trial_lists", "trial-list name or file name", NamesIn::kDictKeysAndValues));
  group.Find("training_trial_lists")
      ->Check(PlainNames("recipe.training_trial_lists", "trial-list name", NamesIn::kStrings));
}

std::vector<recipe::GlobalBatch> XvectorSettings::GlobalBatches() const {
  if (!recipe_->StageSelected(5)) return {};
  return {{"network.minibatch_size", common_.network.minibatch_size, 2,
           common_.network.ArchitectureName() + " normalises its embedding layer with BatchNorm"}};
}

XvectorSettings& SettingsOf(recipe::RunContext& context) {
  return dynamic_cast<XvectorSettings&>(context.settings());
}

}  // namespace asv::recipes::xvector
