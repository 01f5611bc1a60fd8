// The stage runners of the recipes in catalog.h: the code that runs their stages (LibTorch).
#pragma once

#include "asvcpp/recipe/recipe.h"

namespace asv::recipes {

/// The runner of `recipe`'s stages (one of catalog.h's recipes). Throws std::logic_error for a
/// recipe without one, which a test rules out for every recipe of the catalog.
const recipe::StageRunner& StageRunnerFor(const recipe::Recipe& recipe);

}  // namespace asv::recipes
