// Opening, configuration and migration of the experiment database.
#include "asvcpp/db/schema.h"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "asvcpp/base/error.h"
#include "asvcpp/db/database.h"
#include "tests/asvcpp/db/db_test_util.h"

namespace asv::db {
namespace {

using testing::RawDb;

int CountIndexes(RawDb& raw) {
  return std::stoi(raw.Scalar(
      "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'"));
}

TEST(DbSchemaTest, MigrationsAreNumberedInOrder) {
  ASSERT_GE(Migrations().size(), 2u);
  for (std::size_t i = 0; i < Migrations().size(); ++i) {
    EXPECT_EQ(Migrations()[i].version, static_cast<int>(i + 1));
  }
  EXPECT_EQ(LatestSchemaVersion(), static_cast<int>(Migrations().size()));
}

TEST(DbSchemaTest, CreatesFileAndParentsAtLatestVersionInWalMode) {
  const testing::ScopedDir dir("create");
  const auto path = Database::DefaultPath(dir / "a" / "b");
  EXPECT_EQ(path, dir / "a" / "b" / "experiments.db");
  {
    Database db(path);
    EXPECT_TRUE(std::filesystem::is_regular_file(path));
    EXPECT_EQ(db.SchemaVersion(), LatestSchemaVersion());
    EXPECT_EQ(db.IntegrityCheck(), "ok");
    EXPECT_EQ(db.path(), path);
  }
  // WAL is a property of the file: a plain sqlite3 connection sees it too.
  RawDb raw(path);
  EXPECT_EQ(raw.Scalar("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw.Scalar("PRAGMA user_version"), std::to_string(LatestSchemaVersion()));
  EXPECT_EQ(raw.Query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"),
            (std::vector<std::string>{"artifacts", "epochs", "results", "runs", "stages"}));
}

TEST(DbSchemaTest, ReopeningKeepsData) {
  const testing::ScopedDir dir("reopen");
  const auto path = dir / "experiments.db";
  std::int64_t id = 0;
  {
    Database db(path);
    id = db.BeginRun(testing::SampleRunInfo());
  }
  Database db(path);
  ASSERT_TRUE(db.GetRun(id).has_value());
  EXPECT_EQ(db.GetRun(id)->info.config, "net");
}

TEST(DbSchemaTest, UpgradesVersion1DatabaseOnOpen) {
  const testing::ScopedDir dir("migrate");
  const auto path = dir / "experiments.db";
  std::int64_t id = 0;
  {
    DatabaseOptions v1;
    v1.max_schema_version = 1;
    Database db(path, v1);
    EXPECT_EQ(db.SchemaVersion(), 1);
    id = db.BeginRun(testing::SampleRunInfo());
  }
  {
    // A result row as version 1 stored it (the code of today writes later columns too).
    RawDb raw(path);
    raw.Exec("INSERT INTO results (run_id, trial_list, eer, n_target, n_nontarget, recorded_time) VALUES (" +
             std::to_string(id) + ", 'voxceleb1_o', 2.5, 0, 0, '2026-01-01T00:00:00.000Z')");
    EXPECT_EQ(raw.Scalar("PRAGMA user_version"), "1");
    EXPECT_EQ(CountIndexes(raw), 0);
  }
  {
    Database db(path);
    EXPECT_EQ(db.SchemaVersion(), LatestSchemaVersion());
    ASSERT_EQ(db.Results().size(), 1u);
    EXPECT_EQ(db.Results()[0].run_id, id);
    EXPECT_EQ(db.Results()[0].record.eer, 2.5);
    EXPECT_FALSE(db.Results()[0].record.stage.has_value());  // v3 column, NULL for old rows
    EXPECT_EQ(db.IntegrityCheck(), "ok");
  }
  RawDb raw(path);
  EXPECT_EQ(CountIndexes(raw), 7);
  EXPECT_EQ(raw.Scalar("SELECT count(*) FROM sqlite_master WHERE name = 'runs_recipe_config'"),
            "1");
}

TEST(DbSchemaTest, RefusesNewerSchemaWithoutTouchingIt) {
  const testing::ScopedDir dir("newer");
  const auto path = dir / "experiments.db";
  { Database db(path); }
  const int newer = LatestSchemaVersion() + 7;
  {
    RawDb raw(path);
    raw.Exec("PRAGMA user_version = " + std::to_string(newer));
  }
  ASV_EXPECT_THROW_CONTAINS(Database db(path), DbError, path.string(), "newer",
                            std::to_string(newer));
  RawDb raw(path);
  EXPECT_EQ(raw.Scalar("PRAGMA user_version"), std::to_string(newer));
}

TEST(DbSchemaTest, FileThatIsNotSqliteGivesDbErrorNamingPath) {
  const testing::ScopedDir dir("notadb");
  const auto path = dir / "experiments.db";
  {
    std::ofstream out(path);
    for (int i = 0; i < 200; ++i) out << "this is a text file, not an SQLite database\n";
  }
  ASV_EXPECT_THROW_CONTAINS(Database db(path), DbError, path.string(), "not a database");
  try {
    Database db(path);
  } catch (const DbError& e) {
    EXPECT_EQ(e.code(), kExitDbError);
  }
}

TEST(DbSchemaTest, UncreatableFolderGivesDbErrorNamingPath) {
  const testing::ScopedDir dir("nofolder");
  {
    std::ofstream out(dir / "file");
    out << "x";
  }
  const auto path = dir / "file" / "sub" / "experiments.db";
  ASV_EXPECT_THROW_CONTAINS(Database db(path), DbError, path.string());
}

TEST(DbSchemaTest, ThreadsRacingToCreateTheSameFileAllSucceed) {
  const testing::ScopedDir dir("race");
  const auto path = dir / "experiments.db";
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kThreads);
  std::vector<std::int64_t> ids(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        Database db(path);
        ids[t] = db.BeginRun(testing::SampleRunInfo("race", "t" + std::to_string(t)));
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_GT(ids[t], 0);
  }
  Database db(path);
  EXPECT_EQ(db.SchemaVersion(), LatestSchemaVersion());
  EXPECT_EQ(db.ListRuns().size(), static_cast<std::size_t>(kThreads));
}

TEST(DbSchemaTest, BusyWriterGivesUpAfterRetryLimit) {
  const testing::ScopedDir dir("busy");
  const auto path = dir / "experiments.db";
  DatabaseOptions options;
  options.busy_timeout = std::chrono::milliseconds(20);
  options.retry_limit = std::chrono::milliseconds(300);
  Database db(path, options);
  RawDb locker(path);
  locker.Exec("BEGIN IMMEDIATE");
  const auto start = std::chrono::steady_clock::now();
  ASV_EXPECT_THROW_CONTAINS(db.BeginRun(testing::SampleRunInfo()), DbError, path.string(),
                            "BeginRun", "locked", "gave up");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, std::chrono::milliseconds(300));
  EXPECT_LT(elapsed, std::chrono::seconds(3));
  locker.Exec("ROLLBACK");
  EXPECT_GT(db.BeginRun(testing::SampleRunInfo()), 0);
}

TEST(DbSchemaTest, BusyWriterSucceedsWhenLockIsReleasedWithinRetryLimit) {
  const testing::ScopedDir dir("busy_ok");
  const auto path = dir / "experiments.db";
  DatabaseOptions options;
  options.busy_timeout = std::chrono::milliseconds(10);  // Forces our retry loop to do the work.
  options.retry_limit = std::chrono::seconds(10);
  Database db(path, options);
  RawDb locker(path);
  locker.Exec("BEGIN IMMEDIATE");
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    locker.Exec("COMMIT");
  });
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t id = db.BeginRun(testing::SampleRunInfo());
  const auto elapsed = std::chrono::steady_clock::now() - start;
  release.join();
  EXPECT_GT(id, 0);
  EXPECT_GE(elapsed, std::chrono::milliseconds(250));
  EXPECT_TRUE(db.GetRun(id).has_value());
}

}  // namespace
}  // namespace asv::db
