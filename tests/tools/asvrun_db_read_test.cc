// asvrun's reading commands (runs, results, epochs, diff) on databases they must not change: a
// file another user owns in a read-only folder, an older schema, another application's file.
// The commands run in this process (asv_asvrun_cli, no LibTorch), as AsvrunMain.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "asvcpp/db/database.h"
#include "tests/asvcpp/db/db_test_util.h"
#include "tests/tools/asvrun_in_process.h"
#include "tools/asvrun/cli.h"

namespace asv {
namespace {

namespace fs = std::filesystem;
using db::testing::FileBytes;
using db::testing::RawDb;

using Outcome = testing::AsvrunOutcome;
using testing::Asvrun;

// Two runs "base" (finished, a result and an epoch) and "ghost" (still 'running', but its process
// is gone: this pid with another start time). Returns their ids.
std::pair<std::int64_t, std::int64_t> Populate(const fs::path& path) {
  db::Database database(path);
  db::RunInfo info = db::testing::SampleRunInfo("voxceleb/xvector", "base");
  info.gpu_ids = {};
  const auto base = database.BeginRun(info);
  db::ResultRecord result;
  result.trial_list = "vox1_o";
  result.eer = 4.125;
  database.RecordResult(base, result);
  db::EpochRecord epoch;
  epoch.epoch = 1;
  epoch.loss = 2.75;
  database.RecordEpoch(base, epoch);
  database.FinishRun(base, db::RunStatus::kFinished);
  info.config = "ghost";
  info.process_start += 999;
  const auto ghost = database.BeginRun(info);
  return {base, ghost};
}

// Each reading command; "" when every one exits 0 and prints what Populate wrote.
std::string ReadWithEveryCommand(const fs::path& path, std::int64_t base, std::int64_t ghost) {
  const std::string db = path.string();
  const auto runs = Asvrun({"runs", "--db", db});
  if (runs.status != 0) return "runs: " + runs.err;
  if (runs.out.find("crashed") == std::string::npos || runs.out.find("ghost") == std::string::npos) {
    return "runs does not show the ghost run crashed: " + runs.out;
  }
  const auto results = Asvrun({"results", "--db", db, "--format", "csv"});
  if (results.status != 0 || results.out.find("4.1250") == std::string::npos) return "results: " + results.err;
  const auto epochs = Asvrun({"epochs", std::to_string(base), "--db", db, "--format", "csv"});
  if (epochs.status != 0 || epochs.out.find("2.7500") == std::string::npos) return "epochs: " + epochs.err;
  const auto diff = Asvrun({"diff", std::to_string(base), std::to_string(ghost), "--db", db});
  if (diff.status != 0 || diff.out.find("identical") == std::string::npos) return "diff: " + diff.err + diff.out;
  return "";
}

TEST(AsvrunDbReadTest, ReadingCommandsPersistNothing) {
  const db::testing::ScopedDir dir("cli_ro_flags");
  const auto path = dir / "experiments.db";
  const auto [base, ghost] = Populate(path);
  const std::string before = FileBytes(path);
  EXPECT_EQ(ReadWithEveryCommand(path, base, ghost), "");
  // The ghost run is shown crashed but not marked so: reading changed nothing.
  EXPECT_TRUE(FileBytes(path) == before) << "the file changed";
  RawDb raw(path);
  EXPECT_EQ(raw.Scalar("SELECT status FROM runs WHERE id = " + std::to_string(ghost)), "running");
}

// The file read-only (0444) in a read-only folder (0555), as another user sees it: as root, the
// commands run in a child that dropped to user nobody.
TEST(AsvrunDbReadTest, ReadingCommandsReadADatabaseInAReadOnlyFolder) {
  const db::testing::ScopedDir dir("cli_ro_perm");
  const auto folder = dir / "out";
  fs::create_directories(folder);
  const auto path = folder / "experiments.db";
  const auto [base, ghost] = Populate(path);
  const std::string before = FileBytes(path);
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  ASSERT_EQ(::chmod(folder.c_str(), 0555), 0);
  const auto outcome = db::testing::RunAsUnprivileged([&](std::string* report) {
    *report = ReadWithEveryCommand(path, base, ghost);
    return report->empty() ? 0 : 1;
  });
  ::chmod(folder.c_str(), 0755);
  if (!outcome) GTEST_SKIP() << "running as root and cannot drop privileges to user nobody here";
  EXPECT_EQ(outcome->status, 0) << outcome->report;
  EXPECT_TRUE(FileBytes(path) == before) << "the file changed";
  EXPECT_FALSE(fs::exists(path.string() + "-shm"));
}

TEST(AsvrunDbReadTest, AnOlderSchemaIsReportedNotMigrated) {
  const db::testing::ScopedDir dir("cli_old");
  const auto path = dir / "experiments.db";
  db::DatabaseOptions v4;
  v4.max_schema_version = 4;
  { db::Database database(path, v4); }
  const auto runs = Asvrun({"runs", "--db", path.string()});
  EXPECT_EQ(runs.status, 4);
  EXPECT_NE(runs.err.find("older"), std::string::npos) << runs.err;
  EXPECT_EQ(RawDb(path).Scalar("PRAGMA user_version"), "4");
}

TEST(AsvrunDbReadTest, AnotherApplicationsFileIsRefusedAndLeftUntouched) {
  const db::testing::ScopedDir dir("cli_foreign");
  const auto path = dir / "experiments.db";
  RawDb(path).Exec("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)");
  const std::string before = FileBytes(path);
  for (const char* command : {"runs", "results"}) {
    const auto outcome = Asvrun({command, "--db", path.string()});
    EXPECT_EQ(outcome.status, 4) << command;
    EXPECT_NE(outcome.err.find(path.string()), std::string::npos) << outcome.err;
    EXPECT_NE(outcome.err.find("not an asvcpp experiment database"), std::string::npos) << outcome.err;
  }
  EXPECT_TRUE(FileBytes(path) == before) << "the file changed";
  EXPECT_EQ(RawDb(path).Scalar("PRAGMA journal_mode"), "delete");
}

}  // namespace
}  // namespace asv
