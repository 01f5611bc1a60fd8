#include "recipes/voxceleb/xvector/xvector_recipe.h"

#include <string>

#include "asvcpp/settings/name_checks.h"

namespace asv::recipes::voxceleb_xvector {

XvectorSettings::XvectorSettings() {
  settings::AddStandardGroups(tree_, common_);
  tree_.AddGroup("recipe", recipe_);
  // Dataset and trial-list names become folder and file names under paths.output_folder.
  using settings::NamesIn;
  using settings::PlainNames;
  settings::Group& group = *tree_.FindGroup("recipe");
  for (const char* field : {"preparation_datasets", "feature_extraction_datasets", "training_datasets",
                            "plda_datasets", "trial_dataset"}) {
    group.Find(field)->Check(PlainNames("recipe." + std::string(field), "dataset name", NamesIn::kStrings));
  }
  group.Find("augmentation_datasets")
      ->Check(PlainNames("recipe.augmentation_datasets", "dataset name", NamesIn::kDictKeys));
  group.Find("trial_lists")
      ->Check(PlainNames("recipe.trial_lists", "trial-list name or file name", NamesIn::kDictKeysAndValues));
  group.Find("training_trial_lists")
      ->Check(PlainNames("recipe.training_trial_lists", "trial-list name", NamesIn::kStrings));
}

std::vector<recipe::StageInfo> XvectorRecipe::stages() const {
  return {
      {0, "prepare", "VoxCeleb1/VoxCeleb2 utterance lists (wav.scp, utt2spk, spk2utt) and trial lists", false},
      {1, "features", "Kaldi-compatible MFCCs and energy VAD", false},
      {2, "augmentation", "MUSAN noise/music/babble and reverberated copies of the training data", false},
      {5, "train", "x-vector network training with EER-based early stopping", true},
      {7, "embeddings", "x-vector extraction for the trial and PLDA data", false},
      {9, "scoring", "centering, whitening, length norm, PLDA scoring, optional s-norm and calibration, EER and minDCF",
       false},
  };
}

XvectorSettings& SettingsOf(recipe::RunContext& context) {
  return dynamic_cast<XvectorSettings&>(context.settings());
}

std::unique_ptr<recipe::RecipeSettings> XvectorRecipe::NewSettings() const {
  return std::make_unique<XvectorSettings>();
}

std::vector<recipe::GlobalBatch> XvectorSettings::GlobalBatches() const {
  if (!recipe_.StageSelected(5)) return {};
  return {{"network.minibatch_size", common_.network.minibatch_size, 2,
           common_.network.ArchitectureName() + " normalises its embedding layer with BatchNorm"}};
}

}  // namespace asv::recipes::voxceleb_xvector
