#include "asvcpp/recipe/stage_driver.h"

#include <chrono>

#include "asvcpp/base/log.h"
#include "asvcpp/db/database.h"

namespace asv::recipe {

void RunStages(const Recipe& recipe, RunContext& context) {
  const auto& settings = context.settings();
  for (const auto& stage : recipe.SelectStages(settings.start_stage(), settings.end_stage())) {
    if (!stage.all_ranks && !context.is_rank0()) continue;
    ASV_LOG0(Info, "stage {} ({}): {}", stage.number, stage.name, stage.description);
    const std::int64_t stage_id =
        context.db() != nullptr ? context.db()->BeginStage(context.run_id(), stage.number, stage.name) : 0;
    context.set_stage_id(stage_id);
    const auto start = std::chrono::steady_clock::now();
    try {
      recipe.RunStage(stage, context);
    } catch (const std::exception& e) {
      if (context.db() != nullptr) context.db()->FinishStage(stage_id, db::RunStatus::kFailed, e.what());
      context.set_stage_id(0);
      throw;
    }
    if (context.db() != nullptr) context.db()->FinishStage(stage_id, db::RunStatus::kFinished);
    context.set_stage_id(0);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASV_LOG0(Info, "stage {} ({}) finished in {:.1f} s", stage.number, stage.name, seconds);
  }
}

}  // namespace asv::recipe
