// Process identity, status names and timestamps of the experiment database.
#include "asvcpp/db/run_info.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "asvcpp/base/error.h"
#include "asvcpp/db/timestamp.h"

namespace asv::db {
namespace {

TEST(DbRunInfoTest, StatusNamesRoundTrip) {
  for (RunStatus s :
       {RunStatus::kRunning, RunStatus::kFinished, RunStatus::kFailed, RunStatus::kCrashed}) {
    EXPECT_EQ(ParseRunStatus(ToString(s)), s);
  }
  EXPECT_EQ(ToString(RunStatus::kCrashed), "crashed");
  EXPECT_THROW(ParseRunStatus("done"), DbError);
}

TEST(DbRunInfoTest, CurrentProcessIsAliveAndIdentified) {
  RunInfo info;
  FillCurrentProcess(&info);
  EXPECT_EQ(info.pid, static_cast<std::int64_t>(::getpid()));
  EXPECT_FALSE(info.host.empty());
  EXPECT_GT(info.process_start, 0);
  EXPECT_EQ(info.boot_id.size(), 36u);  // A UUID.
  EXPECT_EQ(info.pid_namespace.rfind("pid:[", 0), 0u);
  EXPECT_TRUE(IsProcessAlive(info.pid, info.process_start));
  EXPECT_TRUE(IsProcessAlive(info.pid, 0));
  EXPECT_FALSE(IsProcessAlive(info.pid, info.process_start + 1));
  EXPECT_FALSE(IsProcessAlive(0, 0));
  EXPECT_FALSE(IsProcessAlive(-5, 0));
}

TEST(DbRunInfoTest, ExitedChildIsNotAliveEvenBeforeItIsReaped) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  // Until waitpid the child is a zombie: kill(pid, 0) succeeds, but it is gone.
  for (int i = 0; i < 200 && IsProcessAlive(child, 0); ++i) ::usleep(5000);
  EXPECT_FALSE(IsProcessAlive(child, 0));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(IsProcessAlive(child, 0));
  EXPECT_EQ(ProcessStartTime(child), 0);
}

TEST(DbRunInfoTest, TimestampsAreFixedWidthUtc) {
  using namespace std::chrono;
  const system_clock::time_point epoch{};
  EXPECT_EQ(FormatUtc(epoch + milliseconds(1234)), "1970-01-01T00:00:01.234Z");
  EXPECT_EQ(FormatUtc(epoch - milliseconds(1)), "1969-12-31T23:59:59.999Z");
  // 1700000000 s = 2023-11-14T22:13:20Z (date -u -d @1700000000).
  EXPECT_EQ(FormatUtc(epoch + seconds(1700000000) + milliseconds(5)), "2023-11-14T22:13:20.005Z");
  const std::string now = NowUtc();
  EXPECT_EQ(now.size(), 24u);
  EXPECT_GT(now, "2020-01-01T00:00:00.000Z");
}

}  // namespace
}  // namespace asv::db
