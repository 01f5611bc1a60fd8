// The writes of the experiment database: runs (BeginRun, TryBeginRun, FinishRun with its
// full-disk fallback, Heartbeat, MarkCrashedRuns), stages, epochs, results and artifacts. Each
// change is one BEGIN IMMEDIATE transaction (Database::Write); a write of a run that is still
// 'running' is also a sign of life that moves the run's heartbeat_time.
#include "asvcpp/db/database.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/db/connection.h"
#include "asvcpp/db/statement.h"
#include "asvcpp/db/timestamp.h"

namespace asv::db {
namespace {

// The first `max_bytes` bytes of `text`, not splitting a UTF-8 sequence.
std::string Utf8Prefix(const std::string& text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

// Runs an INSERT ... RETURNING id (both stores) and returns the id.
std::int64_t InsertedId(Statement& stmt) {
  const std::int64_t id = stmt.Step() ? stmt.Int(0) : 0;
  stmt.Run();
  return id;
}

template <typename T>
std::string ToJson(const std::vector<T>& values) {
  return nlohmann::json(values).dump();
}

// Throws DbError naming the missing row when the last statement changed nothing.
void ExpectChanged(Connection& db, const char* table, std::int64_t id) {
  if (db.Changes() == 0) throw DbError(fmt::format("there is no {} with id {}", table, id));
}

// Inside a write of run `run_id`: that write is a sign of life.
void TouchHeartbeat(Connection& db, std::int64_t run_id, const std::string& now) {
  Statement(db, "UPDATE runs SET heartbeat_time = :now WHERE id = :id AND status = 'running'")
      .Bind(":now", now)
      .Bind(":id", run_id)
      .Run();
}

// Inside a write: sets the run's status, end and heartbeat time and error text (NULL when empty).
void UpdateRun(Connection& db, std::int64_t run_id, RunStatus status, const std::string& now,
               const std::string& error_text) {
  Statement(db, R"sql(
    UPDATE runs SET status = :status, end_time = :now, heartbeat_time = :now,
                    error_text = :error_text
    WHERE id = :id)sql")
      .Bind(":status", ToString(status))
      .Bind(":now", now)
      .BindOrNull(":error_text", error_text)
      .Bind(":id", run_id)
      .Run();
  ExpectChanged(db, "run", run_id);
}

}  // namespace

std::int64_t Database::InsertRun(const RunInfo& filled) {
  const std::string now = NowUtc();
  // The SLURM columns (schema version 8) only for a run in a SLURM job: a run outside SLURM can
  // still be recorded in a database held at an older version (DatabaseOptions::max_schema_version).
  const bool slurm = filled.slurm_job_id.has_value();
  Statement stmt(*conn_, fmt::format(R"sql(
    INSERT INTO runs (recipe, config, parent_chain, settings_json, settings_hash, command_line,
                      host, pid, process_start, boot_id, pid_namespace, gpu_ids, world_size,
                      code_version, output_folder, status, start_time, heartbeat_time{})
    VALUES (:recipe, :config, :parent_chain, :settings_json, :settings_hash, :command_line,
            :host, :pid, :process_start, :boot_id, :pid_namespace, :gpu_ids, :world_size,
            :code_version, :output_folder, 'running', :now, :now{})
    RETURNING id)sql",
                                  slurm ? ", slurm_job_id, slurm_array_task_id" : "",
                                  slurm ? ", :slurm_job_id, :slurm_array_task_id" : ""));
  stmt.Bind(":recipe", filled.recipe)
      .Bind(":config", filled.config)
      .Bind(":parent_chain", ToJson(filled.parent_chain))
      .Bind(":settings_json", filled.settings_json)
      .Bind(":settings_hash", filled.settings_hash)
      .Bind(":command_line", filled.command_line)
      .Bind(":host", filled.host)
      .Bind(":pid", filled.pid)
      .Bind(":process_start", filled.process_start)
      .Bind(":boot_id", filled.boot_id)
      .Bind(":pid_namespace", filled.pid_namespace)
      .Bind(":gpu_ids", ToJson(filled.gpu_ids))
      .Bind(":world_size", filled.world_size)
      .Bind(":code_version", filled.code_version)
      .Bind(":output_folder", filled.output_folder)
      .Bind(":now", now);
  if (slurm) stmt.Bind(":slurm_job_id", filled.slurm_job_id).Bind(":slurm_array_task_id", filled.slurm_array_task_id);
  return InsertedId(stmt);
}

std::int64_t Database::BeginRun(const RunInfo& info) {
  RunInfo filled = info;
  if (filled.pid == 0) FillCurrentProcess(&filled);
  std::int64_t id = 0;
  Write("BeginRun", [&] { id = InsertRun(filled); });
  return id;
}

std::optional<std::int64_t> Database::TryBeginRun(const RunInfo& info,
                                                  std::vector<RunRow>* holders) {
  RunInfo filled = info;
  if (filled.pid == 0) FillCurrentProcess(&filled);
  if (!filled.gpu_ids.empty()) MarkCrashedRuns();
  std::optional<std::int64_t> id;
  std::vector<RunRow> busy;
  // Lookup and insert share one write transaction: no other process can begin a run on these
  // GPUs between the two.
  Write("TryBeginRun", [&] {
    id.reset();
    busy = SelectGpuHolders(filled.host, filled.gpu_ids);
    if (busy.empty()) id = InsertRun(filled);
  });
  if (holders) *holders = std::move(busy);
  return id;
}

void Database::FinishRun(std::int64_t run_id, RunStatus status, const std::string& error_text) {
  bool full = false;
  Write("FinishRun", [&] {
    const std::string now = NowUtc();
    UpdateRun(*conn_, run_id, status, now, error_text);
    if (status != RunStatus::kRunning) {
      // A run that ends (e.g. interrupted by a signal) ends its unfinished stages with it.
      Statement(*conn_, R"sql(
        UPDATE stages SET status = :status, end_time = :now,
                          error_text = COALESCE(error_text, :error_text)
        WHERE run_id = :id AND status = 'running')sql")
          .Bind(":status", ToString(status))
          .Bind(":now", now)
          .BindOrNull(":error_text", error_text)
          .Bind(":id", run_id)
          .Run();
    }
  }, &full);
  if (!full) return;
  // The database (disk) is full. The run's status and the first cause matter most: update its
  // row alone, with a short error text that does not make the row grow beyond its page.
  std::string short_text;
  if (!error_text.empty()) {
    short_text = error_text.size() <= kShortErrorBytes
                     ? error_text
                     : Utf8Prefix(error_text, kShortErrorBytes) + " [...]";
    short_text += " [error text cut: the experiment database is full]";
  }
  bool still_full = false;
  Write("FinishRun", [&] {
    UpdateRun(*conn_, run_id, status, NowUtc(), short_text);
  }, &still_full);
  if (still_full) {
    throw DbError(fmt::format(
        "experiment database {}: FinishRun: database or disk is full: could not record run {} as "
        "{}, not even with its error text cut to {} bytes",
        location_, run_id, ToString(status), kShortErrorBytes));
  }
  ASV_LOG(Warning,
          "experiment database {}: the database or disk is full: recorded run {} as {} with its "
          "error text cut to {} bytes and left its stages as they were",
          location_, run_id, ToString(status), kShortErrorBytes);
}

void Database::Heartbeat(std::int64_t run_id) {
  Write("Heartbeat", [&] {
    Statement(*conn_, "UPDATE runs SET heartbeat_time = :now WHERE id = :id")
        .Bind(":now", NowUtc())
        .Bind(":id", run_id)
        .Run();
    ExpectChanged(*conn_, "run", run_id);
  });
}

void Database::UpdateProgress(std::int64_t run_id, int rank, const ProgressRecord& progress) {
  Write("UpdateProgress", [&] {
    Statement(*conn_, R"sql(
      INSERT INTO progress (run_id, rank, stage, what, done, total, unit, rate, eta_seconds,
                            updated_time)
      VALUES (:run_id, :rank, :stage, :what, :done, :total, :unit, :rate, :eta_seconds, :now)
      ON CONFLICT (run_id, rank) DO UPDATE SET
        stage = excluded.stage, what = excluded.what, done = excluded.done, total = excluded.total,
        unit = excluded.unit, rate = excluded.rate, eta_seconds = excluded.eta_seconds,
        updated_time = excluded.updated_time)sql")
        .Bind(":run_id", run_id)
        .Bind(":rank", rank)
        .Bind(":stage", progress.stage)
        .Bind(":what", progress.what)
        .Bind(":done", progress.done)
        .Bind(":total", progress.total)
        .Bind(":unit", progress.unit)
        .Bind(":rate", progress.rate)
        .Bind(":eta_seconds", progress.eta_seconds)
        .Bind(":now", NowUtc())
        .Run();
  });
}

std::int64_t Database::BeginStage(std::int64_t run_id, int stage, const std::string& name) {
  std::int64_t id = 0;
  Write("BeginStage", [&] {
    const std::string now = NowUtc();
    Statement stmt(*conn_, R"sql(
      INSERT INTO stages (run_id, stage, name, status, start_time)
      VALUES (:run_id, :stage, :name, 'running', :now)
      RETURNING id)sql");
    stmt.Bind(":run_id", run_id).Bind(":stage", stage).Bind(":name", name).Bind(":now", now);
    id = InsertedId(stmt);
    TouchHeartbeat(*conn_, run_id, now);
  });
  return id;
}

void Database::FinishStage(std::int64_t stage_id, RunStatus status, const std::string& error_text) {
  Write("FinishStage", [&] {
    const std::string now = NowUtc();
    Statement(*conn_, R"sql(
      UPDATE stages SET status = :status, end_time = :now, error_text = :error_text
      WHERE id = :id)sql")
        .Bind(":status", ToString(status))
        .Bind(":now", now)
        .BindOrNull(":error_text", error_text)
        .Bind(":id", stage_id)
        .Run();
    ExpectChanged(*conn_, "stage", stage_id);
    Statement(*conn_, R"sql(
      UPDATE runs SET heartbeat_time = :now
      WHERE id = (SELECT run_id FROM stages WHERE id = :id) AND status = 'running')sql")
        .Bind(":now", now)
        .Bind(":id", stage_id)
        .Run();
  });
}

void Database::RecordEpoch(std::int64_t run_id, const EpochRecord& epoch) {
  Write("RecordEpoch", [&] {
    const std::string now = NowUtc();
    Statement(*conn_, R"sql(
      INSERT INTO epochs (run_id, epoch, loss, accuracy, learning_rate, seconds, frames_per_second,
                          val_loss, val_accuracy, data_wait_percent, recorded_time)
      VALUES (:run_id, :epoch, :loss, :accuracy, :learning_rate, :seconds, :frames_per_second,
              :val_loss, :val_accuracy, :data_wait_percent, :now)
      ON CONFLICT (run_id, epoch) DO UPDATE SET
        loss = excluded.loss, accuracy = excluded.accuracy,
        learning_rate = excluded.learning_rate, seconds = excluded.seconds,
        frames_per_second = excluded.frames_per_second, val_loss = excluded.val_loss,
        val_accuracy = excluded.val_accuracy, data_wait_percent = excluded.data_wait_percent,
        recorded_time = excluded.recorded_time)sql")
        .Bind(":run_id", run_id)
        .Bind(":epoch", epoch.epoch)
        .Bind(":loss", epoch.loss)
        .Bind(":accuracy", epoch.accuracy)
        .Bind(":learning_rate", epoch.learning_rate)
        .Bind(":seconds", epoch.seconds)
        .Bind(":frames_per_second", epoch.frames_per_second)
        .Bind(":val_loss", epoch.val_loss)
        .Bind(":val_accuracy", epoch.val_accuracy)
        .Bind(":data_wait_percent", epoch.data_wait_percent)
        .Bind(":now", now)
        .Run();
    TouchHeartbeat(*conn_, run_id, now);
  });
}

std::int64_t Database::RecordResult(std::int64_t run_id, const ResultRecord& result) {
  std::int64_t id = 0;
  Write("RecordResult", [&] {
    const std::string now = NowUtc();
    Statement stmt(*conn_, R"sql(
      INSERT INTO results (run_id, epoch, trial_list, eer, min_dcf, p_target, c_miss, c_fa,
                           n_target, n_nontarget, recorded_time, stage, cllr, min_cllr)
      VALUES (:run_id, :epoch, :trial_list, :eer, :min_dcf, :p_target, :c_miss, :c_fa,
              :n_target, :n_nontarget, :now, :stage, :cllr, :min_cllr)
      RETURNING id)sql");
    stmt.Bind(":run_id", run_id)
        .Bind(":epoch", result.epoch)
        .Bind(":trial_list", result.trial_list)
        .Bind(":eer", result.eer)
        .Bind(":min_dcf", result.min_dcf)
        .Bind(":p_target", result.p_target)
        .Bind(":c_miss", result.c_miss)
        .Bind(":c_fa", result.c_fa)
        .Bind(":n_target", result.n_target)
        .Bind(":n_nontarget", result.n_nontarget)
        .Bind(":stage", result.stage)
        .Bind(":now", now)
        .Bind(":cllr", result.cllr)
        .Bind(":min_cllr", result.min_cllr);
    id = InsertedId(stmt);
    if (!result.costs.empty()) {
      Statement cost(*conn_, R"sql(
        INSERT INTO result_costs (result_id, p_target, c_miss, c_fa, min_dcf, act_dcf)
        VALUES (:id, :p_target, :c_miss, :c_fa, :min_dcf, :act_dcf))sql");
      for (const CostRecord& c : result.costs) {
        cost.Reset();
        cost.Bind(":id", id)
            .Bind(":p_target", c.p_target)
            .Bind(":c_miss", c.c_miss)
            .Bind(":c_fa", c.c_fa)
            .Bind(":min_dcf", c.min_dcf)
            .Bind(":act_dcf", c.act_dcf)
            .Run();
      }
    }
    TouchHeartbeat(*conn_, run_id, now);
  });
  return id;
}

std::int64_t Database::RecordArtifact(std::int64_t run_id, const ArtifactRecord& artifact) {
  std::int64_t id = 0;
  Write("RecordArtifact", [&] {
    const std::string now = NowUtc();
    Statement stmt(*conn_, R"sql(
      INSERT INTO artifacts (run_id, stage_id, path, kind, checksum, bytes, recorded_time)
      VALUES (:run_id, :stage_id, :path, :kind, :checksum, :bytes, :now)
      RETURNING id)sql");
    stmt.Bind(":run_id", run_id)
        .Bind(":stage_id", artifact.stage_id)
        .Bind(":path", artifact.path)
        .Bind(":kind", artifact.kind)
        .Bind(":checksum", artifact.checksum)
        .Bind(":bytes", artifact.bytes)
        .Bind(":now", now);
    id = InsertedId(stmt);
    TouchHeartbeat(*conn_, run_id, now);
  });
  return id;
}

int Database::MarkCrashedRuns() {
  struct Dead {
    std::int64_t id;
    std::int64_t pid;
    std::optional<std::int64_t> job_id;  // the run's SLURM job
    std::optional<SlurmJobEnd> slurm;    // what SLURM says of that job's end
  };
  if (options_.read_only) return 0;
  std::vector<Dead> dead;
  // Liveness is checked outside the write transaction (it reads /proc); the UPDATE below only
  // touches runs that are still 'running', so a run that finished meanwhile is left alone.
  Read("MarkCrashedRuns", [&] {
    dead.clear();
    Statement stmt(*conn_, R"sql(
      SELECT id, pid, process_start, slurm_job_id FROM runs
      WHERE status = 'running' AND host = :host AND boot_id = :boot AND pid_namespace = :ns)sql");
    stmt.Bind(":host", self_.host).Bind(":boot", self_.boot_id).Bind(":ns", self_.pid_namespace);
    while (stmt.Step()) {
      if (IsProcessAlive(stmt.Int(1), stmt.Int(2))) continue;
      dead.push_back({stmt.Int(0), stmt.Int(1), std::nullopt, std::nullopt});
      if (!stmt.IsNull(3)) dead.back().job_id = stmt.Int(3);  // SLURM is asked below, outside the transaction
    }
  });
  if (dead.empty()) return 0;
  // A run of a SLURM job that SLURM cancelled, timed out or killed ends failed with SLURM's reason.
  for (Dead& run : dead) {
    if (run.job_id && options_.slurm_job_end) run.slurm = options_.slurm_job_end(*run.job_id);
  }
  int marked = 0;
  Write("MarkCrashedRuns", [&] {
    marked = 0;
    const std::string now = NowUtc();
    for (const Dead& run : dead) {
      if (run.slurm && run.slurm->status == RunStatus::kFailed) {
        Statement(*conn_, R"sql(
          UPDATE runs SET status = 'failed', end_time = heartbeat_time,
                          error_text = COALESCE(error_text, :reason)
          WHERE id = :id AND status = 'running')sql")
            .Bind(":reason", run.slurm->reason)
            .Bind(":id", run.id)
            .Run();
        if (conn_->Changes() == 0) continue;
        ++marked;
        Statement(*conn_, R"sql(
          UPDATE stages SET status = 'failed',
                            end_time = (SELECT heartbeat_time FROM runs WHERE id = :id),
                            error_text = COALESCE(error_text, :reason)
          WHERE run_id = :id AND status = 'running')sql")
            .Bind(":reason", run.slurm->reason)
            .Bind(":id", run.id)
            .Run();
        continue;
      }
      // end_time: the last sign of life; the text also says when the crash was found.
      Statement(*conn_, R"sql(
        UPDATE runs SET status = 'crashed', end_time = heartbeat_time,
                        error_text = COALESCE(error_text, :reason || heartbeat_time || :found)
        WHERE id = :id AND status = 'running')sql")
          .Bind(":reason", fmt::format("process {} on host {} ended without finishing the run; "
                                       "last sign of life (heartbeat) at ",
                                       run.pid, self_.host))
          .Bind(":found", fmt::format(", found gone at {}", now))
          .Bind(":id", run.id)
          .Run();
      if (conn_->Changes() == 0) continue;
      ++marked;
      Statement(*conn_, R"sql(
        UPDATE stages SET status = 'crashed',
                          end_time = (SELECT heartbeat_time FROM runs WHERE id = :id)
        WHERE run_id = :id AND status = 'running')sql")
          .Bind(":id", run.id)
          .Run();
    }
  });
  if (marked > 0) {
    ASV_LOG(Info, "experiment database {}: marked {} run(s) whose process is gone as crashed or failed",
            location_, marked);
  }
  return marked;
}

}  // namespace asv::db
