// How a row of each table of the experiment database becomes the struct database.h returns: one
// column list and one mapper per table, used by every query that reads the table. A query selects
// the table's k*Columns (or, for results, the columns ReadResultRow names, in that order) and
// passes each row of its Statement to the mapper.
//
// For the implementation of Database (database_*.cc) and its tests; callers use database.h.
//
// Every mapper throws SqliteError (SQLITE_MISMATCH) when a column holds a value the struct cannot
// take (an unknown status, gpu_ids that are not a JSON array of integers): a hand-edited or damaged
// file. Database turns it into DbError naming the file and the operation.
#pragma once

#include <chrono>
#include <string_view>

#include "asvcpp/db/database.h"
#include "asvcpp/db/run_info.h"
#include "asvcpp/db/statement.h"

namespace asv::db {

/// Columns of `runs` in ReadRunRow's order.
inline constexpr std::string_view kRunColumns = R"sql(
  id, recipe, config, parent_chain, settings_json, settings_hash, command_line, host, pid,
  process_start, boot_id, pid_namespace, gpu_ids, world_size, code_version, output_folder,
  status, start_time, end_time, heartbeat_time, error_text, slurm_job_id, slurm_array_task_id
)sql";

/// What ReadRunRow needs to tell a crashed run from a running one: this process's identity (host,
/// boot_id, pid_namespace) and the oldest heartbeat_time (UTC ISO-8601) that is not stale.
struct Liveness {
  const RunInfo* self = nullptr;
  std::string stale_before;
};

/// A Liveness for `self` in which heartbeats older than `stale_heartbeat` before now are stale.
Liveness MakeLiveness(const RunInfo& self, std::chrono::seconds stale_heartbeat);

/// A row of kRunColumns. status is the effective status: the stored status, except kCrashed for a
/// 'running' run whose process is gone (a run of this host, boot and pid namespace:
/// IsProcessAlive) or, for a run this host cannot check, whose heartbeat_time is older than
/// liveness.stale_before. status_inferred says that it differs from the stored status, and then a
/// missing end_time becomes heartbeat_time (the last sign of life). The status is judged here, not
/// in SQL, so that both stores share it.
RunRow ReadRunRow(const Statement& stmt, const Liveness& liveness);

/// Columns of `stages` in ReadStageRow's order.
inline constexpr std::string_view kStageColumns =
    "id, run_id, stage, name, status, start_time, end_time, error_text";

/// A row of kStageColumns.
StageRow ReadStageRow(const Statement& stmt);

/// Columns of `epochs` in ReadEpochRow's order (NULL losses and accuracies read back as NaN).
inline constexpr std::string_view kEpochColumns =
    "id, run_id, epoch, loss, accuracy, learning_rate, seconds, frames_per_second, val_loss, "
    "val_accuracy, recorded_time, data_wait_percent";

/// A row of kEpochColumns.
EpochRow ReadEpochRow(const Statement& stmt);

/// A row of `results` joined with its run, columns in this order: results.id, run_id,
/// runs.recipe, runs.config, epoch, trial_list, eer, min_dcf, p_target, c_miss, c_fa, n_target,
/// n_nontarget, recorded_time, stage, cllr, min_cllr (NULL eer and min_dcf read back as NaN).
/// The costs are read separately (ReadCostRecord).
ResultRow ReadResultRow(const Statement& stmt);

/// Columns of `result_costs` in ReadCostRecord's order.
inline constexpr std::string_view kCostColumns = "p_target, c_miss, c_fa, min_dcf, act_dcf";

/// A row of kCostColumns (NULL min_dcf reads back as NaN).
CostRecord ReadCostRecord(const Statement& stmt);

/// Columns of `artifacts` in ReadArtifactRow's order.
inline constexpr std::string_view kArtifactColumns =
    "id, run_id, stage_id, path, kind, checksum, bytes, recorded_time";

/// A row of kArtifactColumns.
ArtifactRow ReadArtifactRow(const Statement& stmt);

/// Columns of `progress` in ReadProgressRow's order.
inline constexpr std::string_view kProgressColumns =
    "run_id, rank, stage, what, done, total, unit, rate, eta_seconds, updated_time";

/// A row of kProgressColumns (NULL total, rate and eta_seconds read back as nullopt).
ProgressRow ReadProgressRow(const Statement& stmt);

}  // namespace asv::db
