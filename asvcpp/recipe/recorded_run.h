// One run of a config as the experiment database records it, from its row to its final status:
// opening the database, beginning the run (through the GPU queue when asked), the heartbeat that
// lets other processes tell a live run from a crashed one, telling an observer (asvrun's signal
// guard marks the active run failed on SIGINT/SIGTERM) and the final status. A run that is not
// finished explicitly is recorded as failed when the object goes (an exception passing through).
//
//   recipe::RecordedRun run(db_path, info, nullptr, &observer);
//   recipe::RunContext context(..., &run.db(), run.id());
//   try { RunStages(...); } catch (const std::exception& e) { run.Fail(e.what()); throw; }
//   run.Finish();
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "asvcpp/db/database.h"
#include "asvcpp/db/gpu_queue.h"
#include "asvcpp/db/run_heartbeat.h"

namespace asv::recipe {

/// Told when a run becomes active and when it ends (on the thread that ends it).
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void RunStarted(const std::filesystem::path& db_path, std::int64_t run_id) = 0;
  virtual void RunEnded() = 0;
};

/// How a RecordedRun talks to its database.
struct RecordedRunOptions {
  db::DatabaseOptions database;  ///< Options of the run's connections (run and heartbeat).
  /// How often the run's heartbeat_time is renewed while it runs. A run that dies is recorded as
  /// crashed with end_time = its last heartbeat (or last write), so this is how late at most its
  /// recorded end can be; the default costs one small write every 10 s.
  std::chrono::milliseconds heartbeat_interval{10000};
};

class RecordedRun {
 public:
  /// Opens (creating if needed) the database at `db_path` and begins a run for `info`: through
  /// db::BeginRunOnGpus with `queue` when it is not null (which may wait for info.gpu_ids), else
  /// db::Database::BeginRun. Then starts the heartbeat and tells `observer` (may be null).
  /// Throws DbError: when beginning fails no run is begun; when the heartbeat cannot start, the
  /// run just begun is recorded as failed first.
  RecordedRun(const std::filesystem::path& db_path, const db::RunInfo& info, const db::GpuQueueOptions* queue,
              RunObserver* observer, const RecordedRunOptions& options = {});
  /// Records the run as failed ("ended without a final status") unless Finish or Fail was called.
  /// Never throws (a database error is logged).
  ~RecordedRun();
  RecordedRun(const RecordedRun&) = delete;
  RecordedRun& operator=(const RecordedRun&) = delete;

  db::Database& db() noexcept { return *db_; }
  std::int64_t id() const noexcept { return id_; }
  const std::filesystem::path& db_path() const noexcept { return db_path_; }
  bool ended() const noexcept { return ended_; }

  /// Records status 'finished'. Throws DbError; calling it (or Fail) a second time does nothing.
  void Finish();
  /// Records status 'failed' with `message`, the cause of the failure, as the run's error text
  /// (on a full database the row keeps its start, see db::Database::FinishRun). Never throws, so
  /// that the caller can rethrow the original error: when the failure cannot be recorded, it logs
  /// an error that gives `message` first and then why it could not be recorded. A second call
  /// (or one after Finish) does nothing.
  void Fail(const std::string& message);

 private:
  void End(db::RunStatus status, const std::string& message);
  // FinishRun(kFailed, message); logs instead of throwing.
  void RecordFailure(const std::string& message) noexcept;

  std::filesystem::path db_path_;
  std::unique_ptr<db::Database> db_;
  std::int64_t id_ = 0;
  std::unique_ptr<db::RunHeartbeat> heartbeat_;
  RunObserver* observer_ = nullptr;
  bool ended_ = false;
};

}  // namespace asv::recipe
