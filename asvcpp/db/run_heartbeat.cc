#include "asvcpp/db/run_heartbeat.h"

#include <algorithm>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"

namespace asv::db {

RunHeartbeat::RunHeartbeat(const std::filesystem::path& path, std::int64_t run_id,
                           std::chrono::milliseconds interval, DatabaseOptions options)
    : run_id_(run_id), interval_(std::max(interval, std::chrono::milliseconds(1))) {
  // A beat must not hold up the destructor for the full default retry limit.
  options.retry_limit =
      std::min(options.retry_limit, std::max(interval_, std::chrono::milliseconds(1000)));
  db_ = std::make_unique<Database>(path, options);
  db_->Heartbeat(run_id_);
  beats_ = 1;
  thread_ = std::thread([this] { Loop(); });
}

RunHeartbeat::~RunHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::int64_t RunHeartbeat::beats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return beats_;
}

void RunHeartbeat::Loop() {
  bool failing = false;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stop_; })) {
    lock.unlock();
    bool ok = false;
    try {
      db_->Heartbeat(run_id_);
      ok = true;
      if (failing) ASV_LOG(Info, "heartbeat of run {} recovered", run_id_);
      failing = false;
    } catch (const std::exception& e) {
      if (!failing) ASV_LOG(Warning, "heartbeat of run {} failed: {}", run_id_, e.what());
      failing = true;
    }
    lock.lock();
    if (ok) ++beats_;
  }
}

}  // namespace asv::db
