// Background heartbeat of asv::db::RunHeartbeat.
#include "asvcpp/db/run_heartbeat.h"

#include <gtest/gtest.h>

#include <thread>

#include "asvcpp/base/error.h"
#include "tests/asvcpp/db/db_test_util.h"
#include "tests/asvcpp/db/store_test.h"

namespace asv::db {
namespace {

using testing::RawDb;

constexpr const char* kLongAgo = "2000-01-01T00:00:00.000Z";

class DbHeartbeatTest : public testing::StoreTest {};
ASV_INSTANTIATE_STORES(DbHeartbeatTest);

TEST_P(DbHeartbeatTest, UpdatesHeartbeatPeriodically) {
  const std::filesystem::path path = location();
  Database db(path);
  const std::int64_t run = db.BeginRun(testing::SampleRunInfo());
  RawDb raw(path);
  const std::string where = " WHERE id = " + std::to_string(run);
  {
    RunHeartbeat heartbeat(path, run, std::chrono::milliseconds(20));
    EXPECT_GE(heartbeat.beats(), 1);
    raw.Exec(std::string("UPDATE runs SET heartbeat_time = '") + kLongAgo + "'" + where);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    const std::int64_t seen = heartbeat.beats();
    while (heartbeat.beats() < seen + 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_GE(heartbeat.beats(), seen + 2);
  }
  const std::string after = raw.Scalar("SELECT heartbeat_time FROM runs" + where);
  EXPECT_GT(after, kLongAgo);
  // Stopped: nothing touches the row any more.
  raw.Exec(std::string("UPDATE runs SET heartbeat_time = '") + kLongAgo + "'" + where);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(raw.Scalar("SELECT heartbeat_time FROM runs" + where), kLongAgo);
}

TEST_P(DbHeartbeatTest, DestructionIsPromptWithLongInterval) {
  const std::filesystem::path path = location();
  Database db(path);
  const std::int64_t run = db.BeginRun(testing::SampleRunInfo());
  const auto start = std::chrono::steady_clock::now();
  {
    RunHeartbeat heartbeat(path, run, std::chrono::hours(1));
    EXPECT_EQ(heartbeat.beats(), 1);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST_P(DbHeartbeatTest, MissingRunThrowsInConstructor) {
  const std::filesystem::path path = location();
  ASV_EXPECT_THROW_CONTAINS(RunHeartbeat heartbeat(path, 99), DbError, path.string(),
                            "no run with id 99");
}

}  // namespace
}  // namespace asv::db
