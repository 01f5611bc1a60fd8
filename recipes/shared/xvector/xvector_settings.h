// The settings of the x-vector recipes (voxceleb/xvector, sitw/xvector): the common groups plus a
// `recipe` group of xvector::RecipeSettings, or of a struct derived from it whose default
// constructor sets another recipe's defaults.
#pragma once

#include <memory>
#include <vector>

#include "asvcpp/recipe/recipe.h"
#include "asvcpp/settings/settings.h"
#include "recipes/shared/xvector/recipe_settings.h"

namespace asv::recipe {
class RunContext;
}

namespace asv::recipes::xvector {

/// Common settings groups plus the `recipe` group of an x-vector recipe.
class XvectorSettings : public recipe::RecipeSettings {
 public:
  /// voxceleb/xvector's recipe defaults (xvector::RecipeSettings).
  XvectorSettings() : XvectorSettings(std::make_unique<xvector::RecipeSettings>()) {}

  xvector::RecipeSettings& recipe() noexcept { return *recipe_; }
  const xvector::RecipeSettings& recipe() const noexcept { return *recipe_; }
  int start_stage() const override { return recipe_->start_stage; }
  int end_stage() const override { return recipe_->end_stage; }
  /// network.minibatch_size when stage 5 trains; every x-vector network's embedding layer has
  /// BatchNorm (2 per rank).
  std::vector<recipe::GlobalBatch> GlobalBatches() const override;

 protected:
  /// Registers `recipe` as the `recipe` group. R is xvector::RecipeSettings or derived from it;
  /// R's default constructor gives the defaults that `asvrun show`, `diff` and the help list.
  template <class R>
  explicit XvectorSettings(std::unique_ptr<R> recipe) {
    R& group = *recipe;
    recipe_ = std::move(recipe);
    settings::AddStandardGroups(tree_, common_);
    tree_.AddGroup("recipe", group);
    CheckRecipeNames();
  }

 private:
  // Dataset and trial-list names become folder and file names under paths.output_folder.
  void CheckRecipeNames();

  std::unique_ptr<xvector::RecipeSettings> recipe_;
};

/// The settings of a run of an x-vector recipe (such a run always holds XvectorSettings).
/// Throws std::bad_cast for a context of another recipe.
XvectorSettings& SettingsOf(recipe::RunContext& context);

}  // namespace asv::recipes::xvector
