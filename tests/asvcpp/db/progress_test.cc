// The progress table (schema version 7): migration, upsert and read, and the reporter that
// copies base::Progress's board into it without ever failing a run.
#include "asvcpp/db/progress_reporter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/db/database.h"
#include "asvcpp/db/schema.h"
#include "tests/asvcpp/db/db_test_util.h"
#include "tests/asvcpp/db/store_test.h"

namespace asv::db {
namespace {

using testing::RawDb;

ProgressRecord Sample(std::int64_t done) {
  ProgressRecord p;
  p.stage = "5 train";
  p.what = "epoch 3/20";
  p.done = done;
  p.total = 400;
  p.unit = "batches";
  p.rate = 2.5;
  p.eta_seconds = (400.0 - static_cast<double>(done)) / 2.5;
  return p;
}

std::vector<std::string> EveryRow(RawDb& raw) {
  std::vector<std::string> rows;
  for (const char* table : {"runs", "stages", "epochs", "results", "result_costs", "artifacts"}) {
    for (const auto& row : raw.Query(std::string("SELECT * FROM ") + table + " ORDER BY id")) {
      rows.push_back(std::string(table) + ": " + row);
    }
  }
  return rows;
}

class DbProgressStoreTest : public testing::StoreTest {};
ASV_INSTANTIATE_STORES(DbProgressStoreTest);

TEST(DbProgressTest, UpgradesVersion6DatabaseWithProgressTableKeepingEveryRow) {
  const testing::ScopedDir dir("progress_v7");
  const auto path = dir / "experiments.db";
  std::int64_t run = 0;
  std::vector<std::string> before;
  {
    DatabaseOptions v6;
    v6.max_schema_version = 6;
    Database db(path, v6);
    ASSERT_EQ(db.SchemaVersion(), 6);
    run = db.BeginRun(testing::SampleRunInfo("r", "a"));
    db.BeginStage(run, 5, "train");
    ResultRecord result;
    result.trial_list = "voxceleb1_o";
    result.eer = 2.5;
    result.costs.push_back(CostRecord{});
    db.RecordResult(run, result);
    EXPECT_THROW(db.UpdateProgress(run, 0, Sample(1)), DbError);  // no table before version 7
    RawDb raw(path);
    EXPECT_EQ(raw.Scalar("SELECT count(*) FROM sqlite_master WHERE name = 'progress'"), "0");
    before = EveryRow(raw);
  }
  {
    DatabaseOptions v7;
    v7.max_schema_version = 7;
    Database db(path, v7);
    EXPECT_EQ(db.SchemaVersion(), 7);
    EXPECT_EQ(db.IntegrityCheck(), "ok");
    EXPECT_TRUE(db.ProgressRows().empty());
    db.UpdateProgress(run, 0, Sample(120));
    const auto rows = db.ProgressRows({run});
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].record.done, 120);
  }
  RawDb raw(path);
  EXPECT_EQ(EveryRow(raw), before);  // the progress update touches no other table
}

TEST_P(DbProgressStoreTest, UpsertKeepsOneRowPerRunAndRankAndReadsBackEveryField) {
  Database db(location());
  const std::int64_t a = db.BeginRun(testing::SampleRunInfo("r", "a"));
  const std::int64_t b = db.BeginRun(testing::SampleRunInfo("r", "b"));
  db.UpdateProgress(a, 0, Sample(10));
  db.UpdateProgress(a, 1, Sample(11));
  db.UpdateProgress(a, 0, Sample(20));  // replaces rank 0's row
  ProgressRecord unknown;
  unknown.stage = "1 features";
  unknown.what = "voxceleb1";
  unknown.done = 7;
  unknown.unit = "utt";
  db.UpdateProgress(b, 0, unknown);

  const auto all = db.ProgressRows();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].run_id, a);
  EXPECT_EQ(all[0].rank, 0);
  EXPECT_EQ(all[0].record.stage, "5 train");
  EXPECT_EQ(all[0].record.what, "epoch 3/20");
  EXPECT_EQ(all[0].record.done, 20);
  EXPECT_EQ(all[0].record.total, std::optional<std::int64_t>(400));
  EXPECT_EQ(all[0].record.unit, "batches");
  EXPECT_EQ(all[0].record.rate, std::optional<double>(2.5));
  EXPECT_EQ(all[0].record.eta_seconds, std::optional<double>(152.0));
  EXPECT_EQ(all[0].updated_time.size(), 24u);  // "YYYY-MM-DDTHH:MM:SS.mmmZ"
  EXPECT_EQ(all[1].rank, 1);
  EXPECT_EQ(all[1].record.done, 11);
  EXPECT_EQ(all[2].run_id, b);
  EXPECT_EQ(all[2].record.what, "voxceleb1");
  EXPECT_FALSE(all[2].record.total.has_value());
  EXPECT_FALSE(all[2].record.rate.has_value());
  EXPECT_FALSE(all[2].record.eta_seconds.has_value());

  const auto only_b = db.ProgressRows({b, b});
  ASSERT_EQ(only_b.size(), 1u);
  EXPECT_EQ(only_b[0].record.done, 7);

  EXPECT_THROW(db.UpdateProgress(a + b + 100, 0, Sample(1)), DbError);  // no such run
  RawDb raw(location());
  // (SQLite enforces foreign keys per connection; PostgreSQL always.)
  raw.Exec(std::string(postgres() ? "" : "PRAGMA foreign_keys = ON; ") + "DELETE FROM runs WHERE id = " +
           std::to_string(a));
  EXPECT_EQ(db.ProgressRows().size(), 1u);  // the rows of a deleted run go with it
}

// A board to report from, driven by the test.
struct FakeBoard {
  std::optional<base::ProgressSnapshot> snapshot;
  void Set(std::int64_t done) {
    if (!snapshot) snapshot.emplace();
    snapshot->stage = "1 features";
    snapshot->what = "voxceleb1";
    snapshot->done = done;
    snapshot->total = 100;
    snapshot->unit = "utt";
    snapshot->rate = 4;
    snapshot->eta_seconds = (100.0 - static_cast<double>(done)) / 4;
    ++snapshot->sequence;
  }
  ProgressReporterOptions Options() {
    ProgressReporterOptions o;
    o.interval = std::chrono::hours(1);  // only UpdateNow and the destructor write
    o.busy_wait = std::chrono::milliseconds(20);
    o.source = [this] { return snapshot; };
    return o;
  }
};

TEST_P(DbProgressStoreTest, ReporterWritesOnlyWhatChangedAndALastUpdateAtTheEnd) {
  const std::filesystem::path path = location();
  Database db(path);
  const std::int64_t run = db.BeginRun(testing::SampleRunInfo("r", "a"));
  FakeBoard board;
  {
    ProgressReporter reporter(path, run, 2, board.Options());
    EXPECT_FALSE(reporter.UpdateNow());  // nothing published yet
    board.Set(10);
    EXPECT_TRUE(reporter.UpdateNow());
    EXPECT_FALSE(reporter.UpdateNow());  // unchanged: no write
    EXPECT_EQ(reporter.updates(), 1);
    auto rows = db.ProgressRows({run});
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].rank, 2);
    EXPECT_EQ(rows[0].record.done, 10);
    EXPECT_EQ(rows[0].record.eta_seconds, std::optional<double>(22.5));
    board.Set(60);
  }  // the destructor writes the last state
  const auto rows = db.ProgressRows({run});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].record.done, 60);
}

TEST_P(DbProgressStoreTest, ReporterSkipsAnUpdateWhileTheDatabaseIsLockedAndNeverThrows) {
  const std::filesystem::path path = location();
  Database db(path);
  const std::int64_t run = db.BeginRun(testing::SampleRunInfo("r", "a"));
  FakeBoard board;
  ProgressReporter reporter(path, run, 0, board.Options());
  board.Set(10);
  {
    RawDb holder(path);
    // another writer holds the lock (PostgreSQL: the writers' advisory lock, dialect.h)
    holder.Exec(postgres() ? "BEGIN; SELECT pg_advisory_xact_lock(1095980611)" : "BEGIN IMMEDIATE");
    EXPECT_FALSE(reporter.UpdateNow());
    EXPECT_EQ(reporter.skipped(), 1);
    holder.Exec("COMMIT");
  }
  EXPECT_TRUE(reporter.UpdateNow());  // the same state is written once the lock is free
  EXPECT_EQ(reporter.updates(), 1);
  EXPECT_EQ(db.ProgressRows({run}).at(0).record.done, 10);
}

TEST(DbProgressTest, ReporterOfAnUnusableDatabaseSkipsUpdatesUntilItCanOpenIt) {
  const testing::ScopedDir dir("progress_unusable");
  FakeBoard board;
  board.Set(1);
  // A folder where the file should be: the database cannot be opened.
  const auto unusable = dir / "experiments.db";
  std::filesystem::create_directories(unusable);
  {
    ProgressReporter reporter(unusable, 1, 0, board.Options());
    EXPECT_FALSE(reporter.UpdateNow());
    EXPECT_EQ(reporter.skipped(), 1);
    // Once it can be opened, the next update opens it and writes.
    std::filesystem::remove(unusable);
    std::int64_t run = 0;
    {
      Database db(unusable);
      run = db.BeginRun(testing::SampleRunInfo("r", "a"));
    }
    ASSERT_EQ(run, 1);
    EXPECT_TRUE(reporter.UpdateNow());
    EXPECT_EQ(Database(unusable).ProgressRows({run}).size(), 1u);
  }
  // A run that does not exist: the update fails and is skipped.
  const auto path = dir / "other.db";
  { Database db(path); }
  ProgressReporter orphan(path, 42, 0, board.Options());
  EXPECT_FALSE(orphan.UpdateNow());
  EXPECT_EQ(orphan.skipped(), 1);
}

TEST_P(DbProgressStoreTest, ReporterThreadUpdatesEveryInterval) {
  const std::filesystem::path path = location();
  Database db(path);
  const std::int64_t run = db.BeginRun(testing::SampleRunInfo("r", "a"));
  FakeBoard board;
  board.Set(5);
  ProgressReporterOptions options = board.Options();
  options.interval = std::chrono::milliseconds(10);
  ProgressReporter reporter(path, run, 0, options);
  // Wait for the thread's first update (generous bound; normally about 10 ms).
  for (int i = 0; i < 1000 && reporter.updates() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(reporter.updates(), 1);
  EXPECT_EQ(db.ProgressRows({run}).at(0).record.done, 5);
}

}  // namespace
}  // namespace asv::db
