// The row mappers of the experiment database's tables (see row_mappers.h).
#include "asvcpp/db/row_mappers.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/db/timestamp.h"

namespace asv::db {
namespace {

template <typename T>
std::vector<T> FromJson(const std::string& text, const char* column) {
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_array()) {
    throw SqliteError(SQLITE_MISMATCH, fmt::format("column {} is not a JSON array: '{}'", column, text));
  }
  std::vector<T> values;
  try {
    for (const auto& item : json) values.push_back(item.get<T>());
  } catch (const nlohmann::json::exception&) {
    throw SqliteError(SQLITE_MISMATCH,
                      fmt::format("column {} has an element of the wrong type: '{}'", column, text));
  }
  return values;
}

RunStatus StatusColumn(const Statement& stmt, int col) {
  try {
    return ParseRunStatus(stmt.Text(col));
  } catch (const DbError& e) {
    throw SqliteError(SQLITE_MISMATCH, e.what());
  }
}

std::optional<int> OptIntColumn(const Statement& stmt, int col) {
  if (stmt.IsNull(col)) return std::nullopt;
  return static_cast<int>(stmt.Int(col));
}

}  // namespace

Liveness MakeLiveness(const RunInfo& self, std::chrono::seconds stale_heartbeat) {
  return {&self, FormatUtc(std::chrono::system_clock::now() - stale_heartbeat)};
}

RunRow ReadRunRow(const Statement& s, const Liveness& liveness) {
  RunRow row;
  row.id = s.Int(0);
  row.info.recipe = s.Text(1);
  row.info.config = s.Text(2);
  row.info.parent_chain = FromJson<std::string>(s.Text(3), "runs.parent_chain");
  row.info.settings_json = s.Text(4);
  row.info.settings_hash = s.Text(5);
  row.info.command_line = s.Text(6);
  row.info.host = s.Text(7);
  row.info.pid = s.Int(8);
  row.info.process_start = s.Int(9);
  row.info.boot_id = s.Text(10);
  row.info.pid_namespace = s.Text(11);
  row.info.gpu_ids = FromJson<int>(s.Text(12), "runs.gpu_ids");
  row.info.world_size = static_cast<int>(s.Int(13));
  row.info.code_version = s.Text(14);
  row.info.output_folder = s.Text(15);
  const RunStatus stored = StatusColumn(s, 16);
  row.start_time = s.Text(17);
  row.end_time = s.OptText(18);
  row.heartbeat_time = s.Text(19);
  row.error_text = s.OptText(20);
  row.info.slurm_job_id = s.OptInt(21);
  row.info.slurm_array_task_id = s.OptInt(22);
  row.status = stored;
  if (stored == RunStatus::kRunning) {
    const RunInfo& self = *liveness.self;
    const bool local = row.info.host == self.host && row.info.boot_id == self.boot_id &&
                       row.info.pid_namespace == self.pid_namespace;
    const bool gone = local ? !IsProcessAlive(row.info.pid, row.info.process_start)
                            : row.heartbeat_time < liveness.stale_before;
    if (gone) row.status = RunStatus::kCrashed;
  }
  row.status_inferred = row.status != stored;
  // An inferred crash ends, like a persisted one, at the last sign of life.
  if (row.status_inferred && !row.end_time) row.end_time = row.heartbeat_time;
  return row;
}

StageRow ReadStageRow(const Statement& s) {
  StageRow row;
  row.id = s.Int(0);
  row.run_id = s.Int(1);
  row.stage = static_cast<int>(s.Int(2));
  row.name = s.Text(3);
  row.status = StatusColumn(s, 4);
  row.start_time = s.Text(5);
  row.end_time = s.OptText(6);
  row.error_text = s.OptText(7);
  return row;
}

EpochRow ReadEpochRow(const Statement& s) {
  EpochRow row;
  row.id = s.Int(0);
  row.run_id = s.Int(1);
  row.record.epoch = static_cast<int>(s.Int(2));
  row.record.loss = s.Real(3);
  row.record.accuracy = s.Real(4);
  row.record.learning_rate = s.Real(5);
  row.record.seconds = s.Real(6);
  row.record.frames_per_second = s.Real(7);
  row.record.val_loss = s.OptReal(8);
  row.record.val_accuracy = s.OptReal(9);
  row.recorded_time = s.Text(10);
  row.record.data_wait_percent = s.OptReal(11);
  return row;
}

ResultRow ReadResultRow(const Statement& s) {
  ResultRow row;
  row.id = s.Int(0);
  row.run_id = s.Int(1);
  row.recipe = s.Text(2);
  row.config = s.Text(3);
  row.record.epoch = OptIntColumn(s, 4);
  row.record.trial_list = s.Text(5);
  row.record.eer = s.Real(6);
  row.record.min_dcf = s.Real(7);
  row.record.p_target = s.Real(8);
  row.record.c_miss = s.Real(9);
  row.record.c_fa = s.Real(10);
  row.record.n_target = s.Int(11);
  row.record.n_nontarget = s.Int(12);
  row.recorded_time = s.Text(13);
  row.record.stage = OptIntColumn(s, 14);
  row.record.cllr = s.OptReal(15);
  row.record.min_cllr = s.OptReal(16);
  return row;
}

CostRecord ReadCostRecord(const Statement& s) {
  CostRecord cost;
  cost.p_target = s.Real(0);
  cost.c_miss = s.Real(1);
  cost.c_fa = s.Real(2);
  cost.min_dcf = s.Real(3);
  cost.act_dcf = s.OptReal(4);
  return cost;
}

ArtifactRow ReadArtifactRow(const Statement& s) {
  ArtifactRow row;
  row.id = s.Int(0);
  row.run_id = s.Int(1);
  row.record.stage_id = s.OptInt(2);
  row.record.path = s.Text(3);
  row.record.kind = s.Text(4);
  row.record.checksum = s.Text(5);
  row.record.bytes = s.Int(6);
  row.recorded_time = s.Text(7);
  return row;
}

ProgressRow ReadProgressRow(const Statement& s) {
  ProgressRow row;
  row.run_id = s.Int(0);
  row.rank = static_cast<int>(s.Int(1));
  row.record.stage = s.Text(2);
  row.record.what = s.Text(3);
  row.record.done = s.Int(4);
  row.record.total = s.OptInt(5);
  row.record.unit = s.Text(6);
  row.record.rate = s.OptReal(7);
  row.record.eta_seconds = s.OptReal(8);
  row.updated_time = s.Text(9);
  return row;
}

}  // namespace asv::db
