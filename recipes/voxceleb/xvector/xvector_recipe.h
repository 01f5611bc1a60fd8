// The voxceleb/xvector recipe (ASVtorch asvtorch/recipes/voxceleb/xvector/run.py): x-vector
// training on VoxCeleb2 and PLDA scoring of the VoxCeleb1 trial lists.
//
// Stages: 0 prepare, 1 features, 2 augmentation, 5 network training (all ranks), 7 embedding
// extraction, 9 scoring; all but stage 0 are the x-vector stages of recipes/shared/xvector/.
#pragma once

#include "asvcpp/recipe/recipe.h"
#include "recipes/shared/xvector/xvector_settings.h"

namespace asv::recipes::voxceleb_xvector {

/// The settings of this recipe: xvector::XvectorSettings with voxceleb/xvector's defaults.
using xvector::SettingsOf;
using xvector::XvectorSettings;

/// The recipe's name, stages and settings (its stages run through XvectorStages,
/// xvector_stages.h).
class XvectorRecipe : public recipe::Recipe {
 public:
  std::string name() const override { return "voxceleb/xvector"; }
  std::vector<recipe::StageInfo> stages() const override;
  std::unique_ptr<recipe::RecipeSettings> NewSettings() const override;
};

}  // namespace asv::recipes::voxceleb_xvector
