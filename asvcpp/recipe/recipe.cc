#include "asvcpp/recipe/recipe.h"

#include <fmt/format.h>

#include <algorithm>

#include "asvcpp/base/check.h"
#include "asvcpp/base/error.h"

namespace asv::recipe {

std::vector<StageInfo> Recipe::SelectStages(int start, int end) const {
  std::vector<StageInfo> selected;
  for (const auto& stage : stages()) {
    if (start <= stage.number && stage.number <= end) selected.push_back(stage);
  }
  return selected;
}

void CheckGlobalBatches(const RecipeSettings& settings, int world_size) {
  ASV_CHECK(world_size >= 1, "CheckGlobalBatches: world size must be >= 1");
  std::vector<std::string> problems;
  for (const auto& batch : settings.GlobalBatches()) {
    const std::int64_t w = world_size;
    const std::int64_t per_rank = batch.examples / w;
    const bool multiple = batch.examples % w == 0;
    if (multiple && per_rank >= batch.min_per_rank) continue;
    // Valid values: multiples of the world size from min_per_rank * world size on.
    const std::int64_t smallest = batch.min_per_rank * w;
    const std::int64_t below = batch.examples / w * w;
    const std::int64_t above = std::max(smallest, (batch.examples + w - 1) / w * w);
    const std::string nearest = below >= smallest && below != above
                                    ? fmt::format("{} or {}", below, above)
                                    : fmt::format("{}", above);
    std::string what;
    if (!multiple) {
      what = fmt::format("{} ({}) is not a multiple of the world size ({}): each rank would train on {}, {} in all",
                         batch.key, batch.examples, world_size, per_rank, per_rank * w);
    } else {
      what = fmt::format("{} ({}) gives {} {} example{}: {}, which needs at least {} per rank in training",
                         batch.key, batch.examples, world_size == 1 ? "the one process" : "each rank", per_rank,
                         per_rank == 1 ? "" : "s", batch.why, batch.min_per_rank);
    }
    const bool two = nearest.find(" or ") != std::string::npos;
    problems.push_back(fmt::format("{}; nearest valid value{}: {}", what, two ? "s" : "", nearest));
  }
  if (problems.empty()) return;
  throw ConfigError(fmt::format("{}", fmt::join(problems, "\n")));
}

}  // namespace asv::recipe
