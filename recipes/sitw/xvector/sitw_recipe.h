// The sitw/xvector recipe (ASVtorch asvtorch/recipes/sitw/xvector/run.py): x-vector training on
// VoxCeleb1 and VoxCeleb2 (each video's utterances concatenated) and PLDA scoring of the Speakers
// in the Wild (SITW) eval core-core and core-multi trial lists.
//
// Stages: 0 prepare (VoxCeleb1, VoxCeleb2, SITW), 1 features, 2 augmentation, 5 network training
// (all ranks), 7 embedding extraction, 9 scoring; all but stage 0 are the x-vector stages of
// recipes/shared/xvector/, with the data of recipe_settings.h.
#pragma once

#include "asvcpp/recipe/recipe.h"
#include "recipes/shared/xvector/xvector_settings.h"
#include "recipes/sitw/xvector/recipe_settings.h"

namespace asv::recipes::sitw_xvector {

/// xvector::XvectorSettings with sitw/xvector's recipe defaults.
class SitwSettings : public xvector::XvectorSettings {
 public:
  SitwSettings() : XvectorSettings(std::make_unique<sitw_xvector::RecipeSettings>()) {}
};

/// The recipe's name, stages and settings (its stages run through SitwStages, sitw_stages.h).
class SitwRecipe : public recipe::Recipe {
 public:
  std::string name() const override { return "sitw/xvector"; }
  std::vector<recipe::StageInfo> stages() const override;
  std::unique_ptr<recipe::RecipeSettings> NewSettings() const override;
};

}  // namespace asv::recipes::sitw_xvector
