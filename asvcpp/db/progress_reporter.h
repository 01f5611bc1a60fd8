// Copies the progress this process publishes (base::CurrentProgress, asvcpp/base/progress.h) into
// the experiment database's `progress` table, so that `asvrun runs --running` shows it from another
// shell while the run goes on.
//
//   db::ProgressReporter reporter(db_path, run_id, rank);   // a background thread, own connection
//   ... the stages run; every base::Progress publishes ...
//   // destructor: a last update, then the thread ends
//
// Cheap and harmless by design: at most one small upsert per `interval` (default 5 s), none when
// nothing changed since the last one, on a connection of its own whose lock waits are short; a
// busy or locked database, or any other database error, skips that update (logged once at Debug
// level) and never reaches the run.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "asvcpp/base/progress.h"
#include "asvcpp/db/database.h"

namespace asv::db {

struct ProgressReporterOptions {
  /// Time between two updates of the row.
  std::chrono::milliseconds interval{5000};
  /// How long one update waits for the database lock before it is skipped.
  std::chrono::milliseconds busy_wait{200};
  /// Where the progress comes from; default base::CurrentProgress. Injected by tests.
  std::function<std::optional<base::ProgressSnapshot>()> source;
};

/// The progress row of one process of a run: see the file comment.
class ProgressReporter {
 public:
  /// Opens its own connection to the database at `path` and starts the thread; the first update
  /// comes after one interval. Never throws for a database problem: if the database cannot be
  /// opened, a warning is logged (once) and each update tries to open it again, counting as
  /// skipped while it cannot (the run goes on without it).
  ProgressReporter(const std::filesystem::path& path, std::int64_t run_id, int rank,
                   ProgressReporterOptions options = {});
  /// Wakes the thread, writes a last update (if anything changed) and joins it. Never throws.
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  /// Writes the current progress now if it changed since the last update (for tests and the
  /// end of a stage). Returns true when a row was written. Never throws: a failed update counts
  /// in skipped(). Thread-safe.
  bool UpdateNow();

  /// Updates written so far.
  std::int64_t updates() const;
  /// Updates skipped because the database was busy, locked or failed otherwise.
  std::int64_t skipped() const;

 private:
  void Loop();
  // Opens db_ (mutex_ held or not yet shared); on failure logs a warning the first time.
  void OpenLocked();

  std::filesystem::path path_;
  std::unique_ptr<Database> db_;
  std::int64_t run_id_;
  int rank_;
  ProgressReporterOptions options_;
  mutable std::mutex mutex_;       // guards the fields below and serialises updates
  std::condition_variable wake_;
  bool stop_ = false;
  std::optional<std::uint64_t> last_sequence_;
  std::int64_t updates_ = 0;
  std::int64_t skipped_ = 0;
  bool failing_ = false;
  bool open_failed_ = false;
  std::thread thread_;
};

/// The row a snapshot becomes: total <= 0 and rate <= 0 are unknown (nullopt).
ProgressRecord ProgressRecordOf(const base::ProgressSnapshot& snapshot);

}  // namespace asv::db
