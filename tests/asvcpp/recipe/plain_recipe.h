// A recipe with no stages of its own and only the standard settings groups, for tests of the
// recipe machinery (config loading, run contexts).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "asvcpp/recipe/recipe.h"
#include "asvcpp/settings/settings.h"

namespace asv::recipe::testing {

/// The standard groups only; stage range [0, 0].
class PlainSettings : public RecipeSettings {
 public:
  PlainSettings() { settings::AddStandardGroups(tree_, common_); }
  int start_stage() const override { return 0; }
  int end_stage() const override { return 0; }
};

/// Recipe "test/plain": no stages, PlainSettings.
class PlainRecipe : public Recipe {
 public:
  std::string name() const override { return "test/plain"; }
  std::vector<StageInfo> stages() const override { return {}; }
  std::unique_ptr<RecipeSettings> NewSettings() const override { return std::make_unique<PlainSettings>(); }
};

}  // namespace asv::recipe::testing
