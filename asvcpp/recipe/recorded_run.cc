#include "asvcpp/recipe/recorded_run.h"

#include "asvcpp/base/log.h"

namespace asv::recipe {

RecordedRun::RecordedRun(const std::filesystem::path& db_path, const db::RunInfo& info,
                         const db::GpuQueueOptions* queue, RunObserver* observer,
                         const RecordedRunOptions& options)
    : db_path_(db_path), db_(std::make_unique<db::Database>(db_path, options.database)), observer_(observer) {
  // Without max_wait the queue waits for ever and always returns a run id.
  id_ = queue != nullptr ? *db::BeginRunOnGpus(*db_, info, *queue) : db_->BeginRun(info);
  try {
    heartbeat_ = std::make_unique<db::RunHeartbeat>(db_path_, id_, options.heartbeat_interval, options.database);
  } catch (const std::exception& e) {
    // The destructor does not run for an object whose constructor throws: end the row here, so
    // that it does not stay 'running'. The heartbeat's error is the one to throw.
    ended_ = true;
    RecordFailure(std::string("no heartbeat: ") + e.what());
    throw;
  }
  if (observer_ != nullptr) observer_->RunStarted(db_path_, id_);
}

RecordedRun::~RecordedRun() {
  if (ended_) return;
  Fail("ended without a final status");
}

void RecordedRun::Finish() {
  End(db::RunStatus::kFinished, "");
}

void RecordedRun::Fail(const std::string& message) {
  if (ended_) return;
  ended_ = true;
  heartbeat_.reset();  // no beat after the final status
  RecordFailure(message);
  if (observer_ != nullptr) observer_->RunEnded();
}

void RecordedRun::RecordFailure(const std::string& message) noexcept {
  try {
    db_->FinishRun(id_, db::RunStatus::kFailed, message);
  } catch (const std::exception& e) {
    // The cause first: it is what the user needs; the database problem comes second.
    ASV_LOG(Error, "run {} failed: {}\n  and that failure could not be recorded in {}: {}", id_, message,
            db::RedactPassword(db_path_.string()), e.what());
  }
}

void RecordedRun::End(db::RunStatus status, const std::string& message) {
  if (ended_) return;
  ended_ = true;
  heartbeat_.reset();  // no beat after the final status
  try {
    db_->FinishRun(id_, status, message);
  } catch (...) {
    if (observer_ != nullptr) observer_->RunEnded();
    throw;
  }
  if (observer_ != nullptr) observer_->RunEnded();
}

}  // namespace asv::recipe
