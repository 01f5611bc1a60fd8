// Opening, configuration and migration of the experiment database.
#include "asvcpp/db/schema.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <optional>
#include <thread>
#include <tuple>

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
            (std::vector<std::string>{"artifacts", "epochs", "progress", "result_costs", "results", "runs",
                                      "slurm_jobs", "stages"}));
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
    EXPECT_FALSE(db.Results()[0].record.cllr.has_value());   // v6 columns and table
    EXPECT_TRUE(db.Results()[0].record.costs.empty());
    EXPECT_EQ(db.IntegrityCheck(), "ok");
  }
  RawDb raw(path);
  EXPECT_EQ(CountIndexes(raw), 8);  // 7, and runs_slurm_job of version 8
  EXPECT_EQ(raw.Scalar("SELECT count(*) FROM sqlite_master WHERE name = 'runs_recipe_config'"),
            "1");
}

// Every row of every table, as text, for comparing a database before and after a migration.
std::vector<std::string> AllRows(RawDb& raw) {
  std::vector<std::string> rows;
  for (const char* table : {"runs", "stages", "epochs", "results", "artifacts"}) {
    for (const auto& row : raw.Query(std::string("SELECT * FROM ") + table + " ORDER BY id")) {
      rows.push_back(std::string(table) + ": " + row);
    }
  }
  return rows;
}

TEST(DbSchemaTest, UpgradesVersion3DatabaseToBestEerIndexKeepingEveryRow) {
  const testing::ScopedDir dir("migrate_v4");
  const auto path = dir / "experiments.db";
  std::vector<std::string> before;
  std::int64_t failed = 0;
  {
    DatabaseOptions v3;
    v3.max_schema_version = 3;
    Database db(path, v3);
    ASSERT_EQ(db.SchemaVersion(), 3);
    const std::int64_t ok = db.BeginRun(testing::SampleRunInfo("r", "a"));
    failed = db.BeginRun(testing::SampleRunInfo("r", "b"));
    const std::int64_t stage = db.BeginStage(ok, 5, "network training");
    // An epoch row as version 3 stored it (the code of today writes later columns too).
    RawDb(path).Exec("INSERT INTO epochs (run_id, epoch, loss, recorded_time) VALUES (" + std::to_string(ok) +
                     ", 1, 2.5, '2026-01-01T00:00:00.000Z')");
    ArtifactRecord artifact;
    artifact.stage_id = stage;
    artifact.path = "networks/epoch.1.pt";
    artifact.kind = "checkpoint";
    db.RecordArtifact(ok, artifact);
    // Result rows as version 3 stored them (RecordResult of today writes later columns too).
    for (const auto& [run, list, eer, result_stage] :
         std::vector<std::tuple<std::int64_t, std::string, double, std::string>>{
             {ok, "voxceleb1_o", 3.0, "5"},
             {ok, "voxceleb1_o", 2.0, "9"},
             {ok, "voxceleb1_e", 4.0, "NULL"},
             {failed, "voxceleb1_o", 1.0, "5"}}) {
      RawDb(path).Exec(fmt::format(
          "INSERT INTO results (run_id, trial_list, eer, min_dcf, p_target, c_miss, c_fa, n_target, n_nontarget, "
          "recorded_time, stage) VALUES ({}, '{}', {}, 0, 0.01, 1, 1, 0, 0, '2026-01-01T00:00:00.000Z', {})",
          run, list, eer, result_stage));
    }
    db.FinishStage(stage, RunStatus::kFinished);
    db.FinishRun(ok, RunStatus::kFinished);
    db.FinishRun(failed, RunStatus::kFailed, "boom");
    RawDb raw(path);
    before = AllRows(raw);
    EXPECT_EQ(raw.Scalar("SELECT count(*) FROM sqlite_master WHERE name = 'results_run'"), "1");
  }
  ASSERT_EQ(before.size(), 2u + 1u + 1u + 4u + 1u);
  {
    DatabaseOptions v4;
    v4.max_schema_version = 4;
    Database db(path, v4);
    EXPECT_EQ(db.SchemaVersion(), 4);
    EXPECT_EQ(db.IntegrityCheck(), "ok");
  }
  RawDb raw(path);
  EXPECT_EQ(AllRows(raw), before);
  EXPECT_TRUE(raw.Query("PRAGMA foreign_key_check").empty());
  EXPECT_EQ(CountIndexes(raw), 7);
  EXPECT_EQ(raw.Query("SELECT name FROM pragma_index_info('results_run_trial_list_eer') ORDER BY seqno"),
            (std::vector<std::string>{"run_id", "trial_list", "eer", "id", "stage"}));
  EXPECT_EQ(raw.Scalar("SELECT count(*) FROM sqlite_master WHERE name = 'results_run'"), "0");
  // The plain SQL documented at Database::Results seeks the index once per run (no full scan).
  const auto plan = raw.Query(
      "EXPLAIN QUERY PLAN SELECT r.recipe, r.config, MIN((SELECT MIN(x.eer) FROM results x "
      "WHERE x.run_id = r.id AND x.trial_list = 'voxceleb1_o')) FROM runs r GROUP BY r.recipe, r.config");
  std::string text;
  for (const auto& line : plan) text += line + "\n";
  EXPECT_NE(text.find("SEARCH x USING COVERING INDEX results_run_trial_list_eer (run_id=? AND trial_list=?)"),
            std::string::npos)
      << text;
  {
    Database db(path);  // on to the latest version: best per config
    ResultFilter best;
    best.best_per_config = true;
    best.trial_list = "voxceleb1_o";
    const auto rows = db.Results(best);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].config + " " + std::to_string(rows[0].record.eer), "a 2.000000");
    EXPECT_EQ(rows[1].run_id, failed);  // Failed runs count (ResultFilter::best_per_config).
  }
  // Deleting a run still cascades to its results through the new index.
  raw.Exec("PRAGMA foreign_keys = ON");
  raw.Exec("DELETE FROM runs WHERE id = " + std::to_string(failed));
  EXPECT_EQ(raw.Scalar("SELECT count(*) FROM results"), "3");
}

TEST(DbSchemaTest, UpgradesVersion4DatabaseWithEpochDataWaitKeepingEveryRow) {
  const testing::ScopedDir dir("migrate_v5");
  const auto path = dir / "experiments.db";
  std::int64_t run = 0;
  std::vector<std::string> before;
  {
    DatabaseOptions v4;
    v4.max_schema_version = 4;
    Database db(path, v4);
    ASSERT_EQ(db.SchemaVersion(), 4);
    run = db.BeginRun(testing::SampleRunInfo("r", "a"));
    RawDb raw(path);
    raw.Exec("INSERT INTO epochs (run_id, epoch, loss, frames_per_second, recorded_time) VALUES (" +
             std::to_string(run) + ", 1, 2.5, 30000, '2026-01-01T00:00:00.000Z')");
    before = AllRows(raw);
  }
  {
    DatabaseOptions v5;
    v5.max_schema_version = 5;
    Database db(path, v5);
    EXPECT_EQ(db.SchemaVersion(), 5);
    EXPECT_EQ(db.IntegrityCheck(), "ok");
    EpochRecord second;
    second.epoch = 2;
    second.loss = 1.5;
    second.data_wait_percent = 0.6;
    db.RecordEpoch(run, second);
    const auto epochs = db.Epochs(run);
    ASSERT_EQ(epochs.size(), 2u);
    EXPECT_EQ(epochs[0].record.loss, 2.5);
    EXPECT_EQ(epochs[0].record.frames_per_second, 30000);
    EXPECT_FALSE(epochs[0].record.data_wait_percent.has_value());  // Not measured before version 5.
    EXPECT_EQ(epochs[1].record.data_wait_percent, std::optional<double>(0.6));
  }
  // The old rows are unchanged apart from the new column, NULL at the end of each epoch row, and
  // the run's heartbeat_time (the next-to-last column), which recording epoch 2 renewed.
  RawDb raw(path);
  std::vector<std::string> after = AllRows(raw);
  ASSERT_EQ(after.size(), before.size() + 1);
  const auto without_heartbeat = [](std::string row) {
    const auto last = row.rfind('|');
    const auto heartbeat = row.rfind('|', last - 1);
    return row.erase(heartbeat, last - heartbeat);
  };
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (before[i].rfind("epochs: ", 0) == 0) {
      EXPECT_EQ(after[i], before[i] + "|NULL") << i;
    } else if (before[i].rfind("runs: ", 0) == 0) {
      EXPECT_EQ(without_heartbeat(after[i]), without_heartbeat(before[i])) << i;
    } else {
      EXPECT_EQ(after[i], before[i]) << i;
    }
  }
  EXPECT_EQ(raw.Scalar("SELECT heartbeat_time FROM runs"),
            raw.Scalar("SELECT recorded_time FROM epochs WHERE epoch = 2"));
  EXPECT_EQ(raw.Scalar("SELECT data_wait_percent FROM epochs WHERE epoch = 2"), "0.6");
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

TEST(DbSchemaTest, NewDatabaseCarriesAsvcppApplicationId) {
  const testing::ScopedDir dir("appid");
  const auto path = dir / "experiments.db";
  { Database db(path); }
  RawDb raw(path);
  EXPECT_EQ(raw.Scalar("PRAGMA application_id"), std::to_string(kApplicationId));
}

TEST(DbSchemaTest, DatabaseCreatedBeforeTheApplicationIdIsRecognisedAndStamped) {
  const testing::ScopedDir dir("appid_legacy");
  const auto path = dir / "experiments.db";
  std::int64_t id = 0;
  {
    Database db(path);
    id = db.BeginRun(testing::SampleRunInfo());
  }
  {
    RawDb raw(path);
    raw.Exec("PRAGMA application_id = 0");  // as every database before this change
  }
  DatabaseOptions read_only;
  read_only.read_only = true;
  EXPECT_TRUE(Database(path, read_only).GetRun(id).has_value());  // read, not stamped
  EXPECT_EQ(RawDb(path).Scalar("PRAGMA application_id"), "0");
  Database db(path);
  EXPECT_TRUE(db.GetRun(id).has_value());
  EXPECT_EQ(RawDb(path).Scalar("PRAGMA application_id"), std::to_string(kApplicationId));
}

// Another application's SQLite file called experiments.db: refused, exit status 4, untouched
// (no asvcpp tables, no switch to WAL, no application id), whether read or written.
TEST(DbSchemaTest, AnotherApplicationsDatabaseIsRefusedAndLeftUntouched) {
  const testing::ScopedDir dir("foreign");
  const auto tables = dir / "tables" / "experiments.db";
  const auto stamped = dir / "stamped" / "experiments.db";
  std::filesystem::create_directories(tables.parent_path());
  std::filesystem::create_directories(stamped.parent_path());
  {
    RawDb raw(tables);
    raw.Exec("CREATE TABLE photos (id INTEGER PRIMARY KEY, file TEXT); "
             "INSERT INTO photos (file) VALUES ('a.jpg');");
    RawDb other(stamped);
    other.Exec("PRAGMA application_id = 1234; PRAGMA user_version = 2;");
  }
  for (const auto& path : {tables, stamped}) {
    SCOPED_TRACE(path.string());
    const std::string before = testing::FileBytes(path);
    for (const bool read_only : {false, true}) {
      DatabaseOptions options;
      options.read_only = read_only;
      ASV_EXPECT_THROW_CONTAINS(Database db(path, options), DbError, path.string(),
                                "not an asvcpp experiment database");
      try {
        Database db(path, options);
      } catch (const DbError& e) {
        EXPECT_EQ(e.code(), kExitDbError);
      }
    }
    EXPECT_TRUE(testing::FileBytes(path) == before) << "the file changed";
    EXPECT_FALSE(std::filesystem::exists(path.string() + "-wal"));
    RawDb raw(path);
    EXPECT_EQ(raw.Scalar("PRAGMA journal_mode"), "delete");
    EXPECT_EQ(raw.Scalar("SELECT count(*) FROM sqlite_master WHERE name = 'runs'"), "0");
  }
  ASV_EXPECT_THROW_CONTAINS(Database db(tables), DbError, "photos");
  ASV_EXPECT_THROW_CONTAINS(Database db(stamped), DbError, "application_id");
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
