#include "asvcpp/recipe/recorded_run.h"

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

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
