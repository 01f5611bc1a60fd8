// The recipes compiled into asvcpp: names, stages and settings, without LibTorch (what resolving,
// showing and listing configs need). Their stage runners are in registry.h.
#pragma once

#include <string>
#include <vector>

#include "asvcpp/recipe/recipe.h"

namespace asv::recipes {

/// Every recipe, sorted by name.
const std::vector<const recipe::Recipe*>& AllRecipes();

/// The recipe called `name` (e.g. "voxceleb/xvector"). Throws ConfigError naming the known
/// recipes (with a "did you mean") when there is none.
const recipe::Recipe& FindRecipe(const std::string& name);

}  // namespace asv::recipes
