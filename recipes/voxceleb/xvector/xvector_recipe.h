// The voxceleb/xvector recipe (ASVtorch asvtorch/recipes/voxceleb/xvector/run.py): x-vector
// training on VoxCeleb2 and PLDA scoring of the VoxCeleb1 trial lists.
//
// Stages: 0 prepare, 1 features, 2 augmentation, 5 network training (all ranks), 7 embedding
// extraction, 9 scoring.
#pragma once

#include "asvcpp/recipe/recipe.h"
#include "asvcpp/recipe/run_context.h"
#include "recipes/voxceleb/xvector/recipe_settings.h"

namespace asv::recipes::voxceleb_xvector {

/// Common settings groups plus the `recipe` group of this recipe.
class XvectorSettings : public recipe::RecipeSettings {
 public:
  XvectorSettings();
  voxceleb_xvector::RecipeSettings& recipe() noexcept { return recipe_; }
  const voxceleb_xvector::RecipeSettings& recipe() const noexcept { return recipe_; }
  int start_stage() const override { return recipe_.start_stage; }
  int end_stage() const override { return recipe_.end_stage; }
  /// network.minibatch_size when stage 5 trains; every x-vector network's embedding layer has
  /// BatchNorm (2 per rank).
  std::vector<recipe::GlobalBatch> GlobalBatches() const override;

 private:
  voxceleb_xvector::RecipeSettings recipe_;
};

/// The settings of a voxceleb/xvector run (a run of this recipe always holds XvectorSettings).
/// Throws std::bad_cast for a context of another recipe.
XvectorSettings& SettingsOf(recipe::RunContext& context);

/// The recipe's name, stages and settings (its stages run through XvectorStages,
/// xvector_stages.h).
class XvectorRecipe : public recipe::Recipe {
 public:
  std::string name() const override { return "voxceleb/xvector"; }
  std::vector<recipe::StageInfo> stages() const override;
  std::unique_ptr<recipe::RecipeSettings> NewSettings() const override;
};

}  // namespace asv::recipes::voxceleb_xvector
