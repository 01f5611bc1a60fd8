#include "asvcpp/recipe/recorded_run.h"

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "asvcpp/base/error.h"

namespace asv::recipe {
namespace {

namespace stdfs = std::filesystem;

struct TempDb {
  TempDb() : dir(stdfs::temp_directory_path() / ("asv_recorded_run_" + std::to_string(::getpid()))) {
    stdfs::remove_all(dir);
    stdfs::create_directories(dir);
  }
  ~TempDb() { stdfs::remove_all(dir); }
  stdfs::path path() const { return dir / "experiments.db"; }
  stdfs::path dir;
};

db::RunInfo Info(const std::string& config) {
  db::RunInfo info;
  info.recipe = "voxceleb/xvector";
  info.config = config;
  return info;
}

// Records what it is told.
struct Observer : RunObserver {
  void RunStarted(const stdfs::path& path, std::int64_t run_id) override {
    events.push_back("started " + std::to_string(run_id) + " " + path.filename().string());
  }
  void RunEnded() override { events.push_back("ended"); }
  std::vector<std::string> events;
};

db::RunRow Row(const stdfs::path& path, std::int64_t id) {
  db::Database db(path);
  return *db.GetRun(id);
}

TEST(RecordedRunTest, BeginsARunningRowAndFinishesIt) {
  TempDb temp;
  Observer observer;
  std::int64_t id = 0;
  {
    RecordedRun run(temp.path(), Info("net"), nullptr, &observer);
    id = run.id();
    EXPECT_GT(id, 0);
    EXPECT_EQ(Row(temp.path(), id).status, db::RunStatus::kRunning);
    EXPECT_EQ(Row(temp.path(), id).info.config, "net");
    run.Finish();
    EXPECT_TRUE(run.ended());
    run.Fail("too late");  // a second final status does nothing
  }
  const auto row = Row(temp.path(), id);
  EXPECT_EQ(row.status, db::RunStatus::kFinished);
  EXPECT_TRUE(row.end_time.has_value());
  EXPECT_EQ(observer.events, (std::vector<std::string>{"started " + std::to_string(id) + " experiments.db", "ended"}));
}

TEST(RecordedRunTest, FailRecordsTheMessage) {
  TempDb temp;
  RecordedRun run(temp.path(), Info("net"), nullptr, nullptr);
  run.Fail("stage 5 (train): out of memory");
  const auto row = Row(temp.path(), run.id());
  EXPECT_EQ(row.status, db::RunStatus::kFailed);
  EXPECT_EQ(row.error_text.value_or(""), "stage 5 (train): out of memory");
}

TEST(RecordedRunTest, ARunLeftWithoutAFinalStatusIsRecordedAsFailed) {
  TempDb temp;
  Observer observer;
  std::int64_t id = 0;
  try {
    RecordedRun run(temp.path(), Info("net"), nullptr, &observer);
    id = run.id();
    throw std::runtime_error("an exception passes through");
  } catch (const std::runtime_error&) {
  }
  const auto row = Row(temp.path(), id);
  EXPECT_EQ(row.status, db::RunStatus::kFailed);
  EXPECT_EQ(row.error_text.value_or(""), "ended without a final status");
  ASSERT_EQ(observer.events.size(), 2u);
  EXPECT_EQ(observer.events.back(), "ended");
}

// A full disk: the stage failed because the database is full, and the error text with the log
// tail is too long to fit. Fail must not throw (the caller rethrows the original error) and the
// row must say 'failed' with the first cause, not stay 'running' to be marked crashed later.
TEST(RecordedRunTest, FailOnAFullDatabaseKeepsTheFirstCause) {
  TempDb temp;
  { db::Database create(temp.path()); }
  RecordedRunOptions options;
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(temp.path().c_str(), &raw), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw, "PRAGMA page_count", -1, &stmt, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
    options.database.max_page_count = sqlite3_column_int64(stmt, 0) + 1;  // room for the run row
    sqlite3_finalize(stmt);
    sqlite3_close(raw);
  }
  RecordedRun run(temp.path(), Info("net"), nullptr, nullptr, options);
  std::string cause;
  try {
    db::ArtifactRecord big;
    big.path = std::string(64 * 1024, 'p');
    big.kind = "checkpoint";
    run.db().RecordArtifact(run.id(), big);
    FAIL() << "the artifact should not fit";
  } catch (const DbError& e) {
    cause = std::string("stage 5 (train) failed: ") + e.what();
  }
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(run.Fail(cause + "\n" + std::string(40 * 1024, 'x')));
  ::testing::internal::GetCapturedStderr();
  const auto row = Row(temp.path(), run.id());
  EXPECT_EQ(row.status, db::RunStatus::kFailed);
  EXPECT_EQ(row.error_text.value_or("").rfind(cause.substr(0, 120), 0), 0u) << row.error_text.value_or("");
  EXPECT_NE(cause.find("database or disk is full"), std::string::npos) << cause;
}

// When the failure cannot be recorded at all, the log gives the cause first, then why.
TEST(RecordedRunTest, AFailureThatCannotBeRecordedIsLoggedCauseFirst) {
  TempDb temp;
  RecordedRun run(temp.path(), Info("net"), nullptr, nullptr);
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(temp.path().c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "PRAGMA foreign_keys = ON; DELETE FROM runs", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(raw);
  }
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(run.Fail("stage 3 (features): No space left on device"));
  const std::string log = ::testing::internal::GetCapturedStderr();
  const auto cause = log.find("stage 3 (features): No space left on device");
  const auto why = log.find("could not be recorded");
  ASSERT_NE(cause, std::string::npos) << log;
  ASSERT_NE(why, std::string::npos) << log;
  EXPECT_LT(cause, why) << log;
  EXPECT_NE(log.find("there is no run with id"), std::string::npos) << log;
}

// The heartbeat renews heartbeat_time while the run runs, not only when it begins.
TEST(RecordedRunTest, TheHeartbeatBeatsWhileTheRunRuns) {
  TempDb temp;
  RecordedRunOptions options;
  options.heartbeat_interval = std::chrono::milliseconds(20);
  RecordedRun run(temp.path(), Info("net"), nullptr, nullptr, options);
  const auto started = Row(temp.path(), run.id());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string beat = started.heartbeat_time;
  while (beat == started.start_time && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    beat = Row(temp.path(), run.id()).heartbeat_time;
  }
  EXPECT_GT(beat, started.start_time);
  run.Finish();
}

TEST(RecordedRunTest, TheGpuQueueWarnsAboutAHolderAndBeginsAnyway) {
  TempDb temp;
  auto on_gpu = Info("first");
  on_gpu.gpu_ids = {0};
  RecordedRun first(temp.path(), on_gpu, nullptr, nullptr);
  std::vector<std::int64_t> holders;
  db::GpuQueueOptions queue;
  queue.on_busy = [&](const std::vector<db::RunRow>& rows) {
    for (const auto& r : rows) holders.push_back(r.id);
  };
  auto second_info = Info("second");
  second_info.gpu_ids = {0};
  RecordedRun second(temp.path(), second_info, &queue, nullptr);
  EXPECT_EQ(holders, std::vector<std::int64_t>{first.id()});
  EXPECT_NE(second.id(), first.id());
  second.Finish();
  first.Finish();
}

}  // namespace
}  // namespace asv::recipe
