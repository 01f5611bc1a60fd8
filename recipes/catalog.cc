#include "recipes/catalog.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/text.h"
#include "recipes/sitw/xvector/sitw_recipe.h"
#include "recipes/voxceleb/margin/margin_recipe.h"
#include "recipes/voxceleb/xvector/xvector_recipe.h"

namespace asv::recipes {

const std::vector<const recipe::Recipe*>& AllRecipes() {
  static const voxceleb_margin::MarginRecipe margin;
  static const voxceleb_xvector::XvectorRecipe xvector;
  static const sitw_xvector::SitwRecipe sitw;
  static const std::vector<const recipe::Recipe*> all = {&margin, &xvector, &sitw};
  return all;
}

const recipe::Recipe& FindRecipe(const std::string& name) {
  std::vector<std::string> names;
  for (const auto* r : AllRecipes()) {
    if (r->name() == name) return *r;
    names.push_back(r->name());
  }
  std::string message = fmt::format("unknown recipe '{}'", name);
  if (const auto close = text::ClosestMatch(name, names)) message += fmt::format(" (did you mean '{}'?)", *close);
  message += fmt::format("; recipes: {}", fmt::join(names, ", "));
  throw ConfigError(message);
}

}  // namespace asv::recipes
