#include "asvcpp/recipe/recorded_run.h"

#include "asvcpp/base/log.h"

namespace asv::recipe {

RecordedRun::RecordedRun(const std::filesystem::path& db_path, const db::RunInfo& info,
                         const db::GpuQueueOptions* queue, RunObserver* observer)
    : db_path_(db_path), db_(std::make_unique<db::Database>(db_path)), observer_(observer) {
  // Without max_wait the queue waits for ever and always returns a run id.
  id_ = queue != nullptr ? *db::BeginRunOnGpus(*db_, info, *queue) : db_->BeginRun(info);
  try {
    heartbeat_ = std::make_unique<db::RunHeartbeat>(db_path_, id_);
  } catch (const std::exception& e) {
    // The destructor does not run for an object whose constructor throws: end the row here, so
    // that it does not stay 'running'.
    db_->FinishRun(id_, db::RunStatus::kFailed, std::string("no heartbeat: ") + e.what());
    throw;
  }
  if (observer_ != nullptr) observer_->RunStarted(db_path_, id_);
}

RecordedRun::~RecordedRun() {
  if (ended_) return;
  try {
    End(db::RunStatus::kFailed, "ended without a final status");
  } catch (const std::exception& e) {
    ASV_LOG(Error, "run {}: could not record its failure in {}: {}", id_, db_path_.string(), e.what());
  }
}

void RecordedRun::Finish() {
  End(db::RunStatus::kFinished, "");
}

void RecordedRun::Fail(const std::string& message) {
  End(db::RunStatus::kFailed, message);
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
