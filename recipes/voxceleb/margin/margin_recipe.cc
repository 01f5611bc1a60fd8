#include "recipes/voxceleb/margin/margin_recipe.h"

#include <string>

#include "asvcpp/settings/name_checks.h"

namespace asv::recipes::voxceleb_margin {

MarginSettings::MarginSettings() {
  recipe_.network = &common_.network;
  settings::AddStandardGroups(tree_, common_);
  tree_.AddGroup("recipe", recipe_);
  // Dataset and trial-list names become folder and file names under paths.output_folder.
  using settings::NamesIn;
  using settings::PlainNames;
  settings::Group& group = *tree_.FindGroup("recipe");
  for (const char* field : {"preparation_datasets", "pcm_datasets", "training_dataset", "trial_dataset"}) {
    group.Find(field)->Check(PlainNames("recipe." + std::string(field), "dataset name", NamesIn::kStrings));
  }
  group.Find("trial_lists")
      ->Check(PlainNames("recipe.trial_lists", "trial-list name or file name", NamesIn::kDictKeysAndValues));
  group.Find("training_trial_lists")
      ->Check(PlainNames("recipe.training_trial_lists", "trial-list name", NamesIn::kStrings));
}

std::vector<recipe::StageInfo> MarginRecipe::stages() const {
  return {
      {0, "prepare", "VoxCeleb1/VoxCeleb2 utterance lists (wav.scp, utt2spk, spk2utt) and trial lists", false},
      {1, "pcm", "audio decoded once into PCM stores (16 kHz int16, memory-mapped)", false},
      {5, "train", "embedding model with a margin-softmax head on augmented fbank segments", true},
      {6, "average", "average of the last recipe.num_average checkpoints", false},
      {7, "finetune", "large-margin fine-tuning of the averaged model on longer segments (recipe.lm_*)", true},
      {8, "embeddings", "embeddings of the trial utterances and of the back-end training utterances", false},
      {9, "scoring", "mean subtraction, cosine scoring, AS-norm, calibration, EER, minDCF and Cllr", false},
  };
}

MarginSettings& SettingsOf(recipe::RunContext& context) {
  return dynamic_cast<MarginSettings&>(context.settings());
}

std::unique_ptr<recipe::RecipeSettings> MarginRecipe::NewSettings() const {
  return std::make_unique<MarginSettings>();
}

std::vector<recipe::GlobalBatch> MarginSettings::GlobalBatches() const {
  const bool ecapa = recipe_.model.rfind("ECAPA", 0) == 0;
  const int min_per_rank = ecapa ? 2 : 1;
  const std::string why = ecapa ? recipe_.model + " normalises its pooled statistics with BatchNorm" : "";
  std::vector<recipe::GlobalBatch> batches;
  if (recipe_.StageSelected(5)) {
    batches.push_back({"network.minibatch_size", common_.network.minibatch_size, min_per_rank, why});
  }
  if (recipe_.StageSelected(7) && recipe_.lm_epochs > 0) {
    batches.push_back({"recipe.lm_minibatch_size", recipe_.lm_minibatch_size, min_per_rank, why});
  }
  return batches;
}

}  // namespace asv::recipes::voxceleb_margin
