#include "recipes/registry.h"

#include <stdexcept>

#include <fmt/format.h>

#include "recipes/sitw/xvector/sitw_stages.h"
#include "recipes/voxceleb/margin/margin_stages.h"
#include "recipes/voxceleb/xvector/xvector_stages.h"

namespace asv::recipes {

const recipe::StageRunner& StageRunnerFor(const recipe::Recipe& recipe) {
  static const voxceleb_margin::MarginStages margin;
  static const voxceleb_xvector::XvectorStages xvector;
  static const sitw_xvector::SitwStages sitw;
  if (recipe.name() == "voxceleb/margin") return margin;
  if (recipe.name() == "voxceleb/xvector") return xvector;
  if (recipe.name() == "sitw/xvector") return sitw;
  throw std::logic_error(fmt::format("recipe '{}' has no stage runner (recipes/registry.cc)", recipe.name()));
}

}  // namespace asv::recipes
