#include "asvcpp/recipe/recipe.h"

namespace asv::recipe {

std::vector<StageInfo> Recipe::SelectStages(int start, int end) const {
  std::vector<StageInfo> selected;
  for (const auto& stage : stages()) {
    if (start <= stage.number && stage.number <= end) selected.push_back(stage);
  }
  return selected;
}

}  // namespace asv::recipe
