#include "asvcpp/recipe/stage_driver.h"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "asvcpp/base/log.h"
#include "asvcpp/base/progress.h"
#include "asvcpp/db/database.h"
#include "asvcpp/db/progress_reporter.h"

namespace asv::recipe {
namespace {

// The progress row of this process: rank 0 writes into its context's run; the other ranks of a
// job that asvrun's launcher started find the run in ASV_DB and ASV_RUN_ID (tools/asvrun/job.cc).
// Null when this process has no run to report to (tests, dry runs, torchrun ranks > 0).
std::unique_ptr<db::ProgressReporter> MakeProgressReporter(RunContext& context) {
  std::optional<std::filesystem::path> path;
  std::int64_t run_id = context.run_id();
  if (context.db() != nullptr) {
    path = context.db()->path();
  } else {
    const char* env_db = std::getenv("ASV_DB");
    const char* env_run = std::getenv("ASV_RUN_ID");
    if (env_db == nullptr || env_run == nullptr || *env_db == '\0') return nullptr;
    try {
      run_id = std::stoll(env_run);
    } catch (const std::exception&) {
      return nullptr;
    }
    path = env_db;
  }
  if (run_id <= 0) return nullptr;
  return std::make_unique<db::ProgressReporter>(*path, run_id, context.rank());
}

}  // namespace

void RunStages(const Recipe& recipe, const StageRunner& runner, RunContext& context) {
  const auto& settings = context.settings();
  auto* coordinator = context.coordinator();
  base::ClearProgressBoard();
  const auto reporter = MakeProgressReporter(context);
  for (const auto& stage : recipe.SelectStages(settings.start_stage(), settings.end_stage())) {
    if (!stage.all_ranks && !context.is_rank0()) continue;
    // Ranks > 0 skip rank-0 stages and wait here, through the store and without timeout, until
    // rank 0 has finished them (ASVtorch's run.py let rank 0 enter a barrier alone).
    if (stage.all_ranks && coordinator != nullptr && context.world_size() > 1) {
      const std::string key = fmt::format("stage/{}/ready", stage.number);
      if (context.is_rank0()) {
        coordinator->Signal(key);
      } else {
        ASV_LOG(Info, "waiting for rank 0 before stage {} ({})", stage.number, stage.name);
        coordinator->WaitFor(key);
      }
    }
    ASV_LOG0(Info, "stage {} ({}): {}", stage.number, stage.name, stage.description);
    base::SetProgressStage(fmt::format("{} {}", stage.number, stage.name));
    const std::int64_t stage_id =
        context.db() != nullptr ? context.db()->BeginStage(context.run_id(), stage.number, stage.name) : 0;
    context.set_stage(stage_id, stage.number);
    const auto start = std::chrono::steady_clock::now();
    try {
      runner.RunStage(stage, context);
    } catch (const std::exception& e) {
      if (context.db() != nullptr) context.db()->FinishStage(stage_id, db::RunStatus::kFailed, e.what());
      context.set_stage(0, std::nullopt);
      throw;
    }
    if (context.db() != nullptr) context.db()->FinishStage(stage_id, db::RunStatus::kFinished);
    context.set_stage(0, std::nullopt);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASV_LOG0(Info, "stage {} ({}) finished in {:.1f} s", stage.number, stage.name, seconds);
  }
}

}  // namespace asv::recipe
