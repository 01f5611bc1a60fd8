// Background heartbeat of a running run, so that other hosts can tell a live run from a dead one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "asvcpp/db/database.h"

namespace asv::db {

/// While alive, sets runs.heartbeat_time of `run_id` to now every `interval`, from a background
/// thread with its own connection to the database at `path`. Readers on other hosts report a
/// 'running' run whose heartbeat is older than DatabaseOptions::stale_heartbeat as crashed, so the
/// interval must be well below that (the default 30 s against 10 min).
///
/// The constructor opens the connection and beats once; it throws DbError if the database cannot
/// be opened or the run does not exist. Later failures in the thread (e.g. a lock held for longer
/// than the retry limit) are logged as warnings and retried at the next beat, never thrown. The
/// destructor wakes the thread and joins it; it returns as soon as a beat in progress, if any,
/// completes (each beat retries for at most max(interval, 1 s)).
class RunHeartbeat {
 public:
  RunHeartbeat(const std::filesystem::path& path, std::int64_t run_id,
               std::chrono::milliseconds interval = std::chrono::seconds(30),
               DatabaseOptions options = {});
  ~RunHeartbeat();
  RunHeartbeat(const RunHeartbeat&) = delete;
  RunHeartbeat& operator=(const RunHeartbeat&) = delete;

  /// Number of successful beats so far, including the one in the constructor.
  std::int64_t beats() const;

 private:
  void Loop();

  std::unique_ptr<Database> db_;
  std::int64_t run_id_;
  std::chrono::milliseconds interval_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::int64_t beats_ = 0;
  std::thread thread_;
};

}  // namespace asv::db
