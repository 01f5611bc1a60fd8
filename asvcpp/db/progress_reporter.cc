#include "asvcpp/db/progress_reporter.h"

#include <algorithm>

#include "asvcpp/base/log.h"

namespace asv::db {

ProgressRecord ProgressRecordOf(const base::ProgressSnapshot& snapshot) {
  ProgressRecord record;
  record.stage = snapshot.stage;
  record.what = snapshot.what;
  record.done = snapshot.done;
  if (snapshot.total > 0) record.total = snapshot.total;
  record.unit = snapshot.unit;
  if (snapshot.rate > 0) record.rate = snapshot.rate;
  record.eta_seconds = snapshot.eta_seconds;
  return record;
}

ProgressReporter::ProgressReporter(const std::filesystem::path& path, std::int64_t run_id, int rank,
                                   ProgressReporterOptions options)
    : run_id_(run_id), rank_(rank), options_(std::move(options)) {
  if (!options_.source) options_.source = base::CurrentProgress;
  options_.interval = std::max(options_.interval, std::chrono::milliseconds(1));
  path_ = path;
  OpenLocked();
  thread_ = std::thread([this] { Loop(); });
}

void ProgressReporter::OpenLocked() {
  DatabaseOptions db_options;
  db_options.busy_timeout = options_.busy_wait;
  db_options.retry_limit = std::chrono::milliseconds(0);  // busy after busy_wait: skip this update
  try {
    db_ = std::make_unique<Database>(path_, db_options);
  } catch (const std::exception& e) {
    // Tried again at the next update; said once.
    if (!open_failed_) ASV_LOG(Warning, "progress of run {} not recorded for now: {}", run_id_, e.what());
    open_failed_ = true;
  }
}

ProgressReporter::~ProgressReporter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  UpdateNow();
}

bool ProgressReporter::UpdateNow() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!db_) OpenLocked();
  if (!db_) {
    ++skipped_;
    return false;
  }
  std::optional<base::ProgressSnapshot> snapshot;
  try {
    snapshot = options_.source();
  } catch (const std::exception&) {
    return false;
  }
  if (!snapshot || (last_sequence_ && *last_sequence_ == snapshot->sequence)) return false;
  try {
    db_->UpdateProgress(run_id_, rank_, ProgressRecordOf(*snapshot));
  } catch (const std::exception& e) {
    ++skipped_;
    if (!failing_) ASV_LOG(Debug, "progress of run {} not recorded this time: {}", run_id_, e.what());
    failing_ = true;
    return false;
  }
  failing_ = false;
  last_sequence_ = snapshot->sequence;
  ++updates_;
  return true;
}

std::int64_t ProgressReporter::updates() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return updates_;
}

std::int64_t ProgressReporter::skipped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return skipped_;
}

void ProgressReporter::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, options_.interval, [this] { return stop_; })) {
    lock.unlock();
    UpdateNow();
    lock.lock();
  }
}

}  // namespace asv::db
