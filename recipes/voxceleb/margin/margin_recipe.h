// The voxceleb/margin recipe: WeSpeaker's voxceleb/v2 systems in asvcpp. Embedding models
// (ResNet34, ECAPA-TDNN) trained with a margin-softmax head (AAM-softmax by default) on fbank of
// random 2 s segments of VoxCeleb2, augmented on the fly on the training device, and scored by
// cosine similarity on VoxCeleb1. "margin" names what sets these systems apart from the x-vector
// recipe: the margin-softmax training of the embedding.
//
// Stages: 0 prepare (the VoxCeleb lists, as voxceleb/xvector), 1 PCM stores (audio decoded once),
// 5 network training (all ranks), 6 model averaging, 7 large-margin fine-tuning (all ranks),
// 8 embedding extraction, 9 scoring.
#pragma once

#include "asvcpp/recipe/recipe.h"
#include "asvcpp/recipe/run_context.h"
#include "recipes/voxceleb/margin/recipe_settings.h"

namespace asv::recipes::voxceleb_margin {

/// Common settings groups plus the `recipe` group of this recipe.
class MarginSettings : public recipe::RecipeSettings {
 public:
  MarginSettings();
  voxceleb_margin::RecipeSettings& recipe() noexcept { return recipe_; }
  const voxceleb_margin::RecipeSettings& recipe() const noexcept { return recipe_; }
  int start_stage() const override { return recipe_.start_stage; }
  int end_stage() const override { return recipe_.end_stage; }
  /// network.minibatch_size when stage 5 runs, recipe.lm_minibatch_size when stage 7 fine-tunes;
  /// ECAPA-TDNN normalises its pooled statistics with BatchNorm (2 per rank), ResNet34 does not.
  std::vector<recipe::GlobalBatch> GlobalBatches() const override;

 private:
  voxceleb_margin::RecipeSettings recipe_;
};

/// The settings of a voxceleb/margin run. Throws std::bad_cast for a context of another recipe.
MarginSettings& SettingsOf(recipe::RunContext& context);

class MarginRecipe : public recipe::Recipe {
 public:
  std::string name() const override { return "voxceleb/margin"; }
  std::vector<recipe::StageInfo> stages() const override;
  std::unique_ptr<recipe::RecipeSettings> NewSettings() const override;
};

}  // namespace asv::recipes::voxceleb_margin
