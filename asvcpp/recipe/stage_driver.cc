#include "asvcpp/recipe/stage_driver.h"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "asvcpp/base/checksum.h"
#include "asvcpp/base/log.h"
#include "asvcpp/base/progress.h"
#include "asvcpp/db/database.h"
#include "asvcpp/db/progress_reporter.h"

namespace asv::recipe {
namespace {

// How long the end of a run waits for a locked experiment database to write what waited.
constexpr std::chrono::minutes kRecordPatience{10};

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

// The database a process of this run reads: its context's, else the one the launcher named in
// ASV_DB (ranks > 0 of a job asvrun started); empty when there is none.
std::filesystem::path RunDatabasePath(RunContext& context) {
  if (context.db() != nullptr) return context.db()->path();
  const char* env_db = std::getenv("ASV_DB");
  return env_db != nullptr ? std::filesystem::path(env_db) : std::filesystem::path();
}

// While the stages run: a file whose checksum file is missing is checked against the checksum the
// experiment database recorded for it, and a checkpoint with neither is refused unless
// network.allow_unverified_checkpoints.
fs::ChecksumPolicy RunChecksumPolicy(RunContext& context) {
  fs::ChecksumPolicy policy;
  policy.allow_unverified = context.settings().common().network.allow_unverified_checkpoints;
  policy.how_to_allow = "set network.allow_unverified_checkpoints = True";
  if (db::Database* database = context.db()) {
    policy.lookup = [database](const std::filesystem::path& file) { return database->RecordedChecksum(file.string()); };
  } else if (const std::filesystem::path path = RunDatabasePath(context); !path.empty()) {
    policy.lookup = [path](const std::filesystem::path& file) -> std::optional<std::string> {
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) return std::nullopt;
      db::DatabaseOptions options;
      options.read_only = true;
      return db::Database(path, options).RecordedChecksum(file.string());
    };
  }
  return policy;
}

}  // namespace

void RunStages(const Recipe& recipe, const StageRunner& runner, RunContext& context) {
  const auto& settings = context.settings();
  auto* coordinator = context.coordinator();
  base::ClearProgressBoard();
  const auto reporter = MakeProgressReporter(context);
  const fs::ScopedChecksumPolicy checksums(RunChecksumPolicy(context));
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
      try {
        context.FlushRecords(std::chrono::seconds(30));  // what the stage recorded before it failed
      } catch (const std::exception& flush) {
        ASV_LOG(Error, "{}", flush.what());
      }
      if (context.db() != nullptr) context.db()->FinishStage(stage_id, db::RunStatus::kFailed, e.what());
      context.set_stage(0, std::nullopt);
      throw;
    }
    if (context.db() != nullptr) context.db()->FinishStage(stage_id, db::RunStatus::kFinished);
    context.set_stage(0, std::nullopt);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASV_LOG0(Info, "stage {} ({}) finished in {:.1f} s", stage.number, stage.name, seconds);
  }
  // Records that waited for a database another process kept locked: the run fails only if they
  // still cannot be written now.
  context.FlushRecords(kRecordPatience);
}

}  // namespace asv::recipe
