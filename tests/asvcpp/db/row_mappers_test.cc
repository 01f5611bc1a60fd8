// The row mappers of row_mappers.h: column order, NULLs, and values a hand-edited file may hold.
#include "asvcpp/db/row_mappers.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <string>

#include "asvcpp/base/error.h"
#include "tests/asvcpp/db/db_test_util.h"

namespace asv::db {
namespace {

using testing::RawDb;
using testing::SampleRunInfo;
using testing::ScopedDir;

// A row of literal values, as a query of the table's columns would return it.
class DbRowMappersTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK); }
  void TearDown() override { sqlite3_close(db_); }

  Statement Row(const std::string& values) {
    Statement stmt(db_, "SELECT " + values);
    EXPECT_TRUE(stmt.Step()) << values;
    return stmt;
  }

  sqlite3* db_ = nullptr;
};

TEST_F(DbRowMappersTest, StageRowTakesColumnsInOrder) {
  const StageRow row =
      ReadStageRow(Row("4, 2, 5, 'train', 'failed', 'T0', 'T1', 'out of memory'"));
  EXPECT_EQ(row.id, 4);
  EXPECT_EQ(row.run_id, 2);
  EXPECT_EQ(row.stage, 5);
  EXPECT_EQ(row.name, "train");
  EXPECT_EQ(row.status, RunStatus::kFailed);
  EXPECT_EQ(row.start_time, "T0");
  EXPECT_EQ(row.end_time, std::optional<std::string>("T1"));
  EXPECT_EQ(row.error_text, std::optional<std::string>("out of memory"));
  const StageRow running = ReadStageRow(Row("1, 1, 0, 'prepare', 'running', 'T0', NULL, NULL"));
  EXPECT_EQ(running.status, RunStatus::kRunning);
  EXPECT_EQ(running.end_time, std::nullopt);
  EXPECT_EQ(running.error_text, std::nullopt);
}

TEST_F(DbRowMappersTest, EpochRowReadsNullsAsNanOrNullopt) {
  const EpochRow row =
      ReadEpochRow(Row("9, 3, 2, 1.5, NULL, 0.01, 60.0, 1000.0, NULL, 91.0, 'T', 12.5"));
  EXPECT_EQ(row.id, 9);
  EXPECT_EQ(row.run_id, 3);
  EXPECT_EQ(row.record.epoch, 2);
  EXPECT_EQ(row.record.loss, 1.5);
  EXPECT_TRUE(std::isnan(row.record.accuracy));
  EXPECT_EQ(row.record.learning_rate, 0.01);
  EXPECT_EQ(row.record.seconds, 60.0);
  EXPECT_EQ(row.record.frames_per_second, 1000.0);
  EXPECT_EQ(row.record.val_loss, std::nullopt);
  EXPECT_EQ(row.record.val_accuracy, std::optional<double>(91.0));
  EXPECT_EQ(row.recorded_time, "T");
  EXPECT_EQ(row.record.data_wait_percent, std::optional<double>(12.5));
}

TEST_F(DbRowMappersTest, ResultRowReadsOptionalEpochAndStage) {
  const ResultRow row = ReadResultRow(
      Row("7, 2, 'vox/xv', 'net', NULL, 'o', NULL, 0.2, 0.01, 1.0, 1.0, 10, 20, 'T', 9"));
  EXPECT_EQ(row.id, 7);
  EXPECT_EQ(row.run_id, 2);
  EXPECT_EQ(row.recipe, "vox/xv");
  EXPECT_EQ(row.config, "net");
  EXPECT_EQ(row.record.epoch, std::nullopt);
  EXPECT_EQ(row.record.trial_list, "o");
  EXPECT_TRUE(std::isnan(row.record.eer));
  EXPECT_EQ(row.record.min_dcf, 0.2);
  EXPECT_EQ(row.record.p_target, 0.01);
  EXPECT_EQ(row.record.n_target, 10);
  EXPECT_EQ(row.record.n_nontarget, 20);
  EXPECT_EQ(row.recorded_time, "T");
  EXPECT_EQ(row.record.stage, std::optional<int>(9));
  const ResultRow with_epoch = ReadResultRow(
      Row("8, 2, 'r', 'c', 3, 'o', 2.5, 0.2, 0.01, 1.0, 1.0, 10, 20, 'T', NULL"));
  EXPECT_EQ(with_epoch.record.epoch, std::optional<int>(3));
  EXPECT_EQ(with_epoch.record.eer, 2.5);
  EXPECT_EQ(with_epoch.record.stage, std::nullopt);
}

TEST_F(DbRowMappersTest, ArtifactRowReadsOptionalStage) {
  const ArtifactRow row = ReadArtifactRow(Row("5, 2, NULL, 'a.pt', 'checkpoint', '', 123, 'T'"));
  EXPECT_EQ(row.id, 5);
  EXPECT_EQ(row.run_id, 2);
  EXPECT_EQ(row.record.stage_id, std::nullopt);
  EXPECT_EQ(row.record.path, "a.pt");
  EXPECT_EQ(row.record.kind, "checkpoint");
  EXPECT_EQ(row.record.checksum, "");
  EXPECT_EQ(row.record.bytes, 123);
  EXPECT_EQ(row.recorded_time, "T");
  EXPECT_EQ(ReadArtifactRow(Row("5, 2, 4, 'a', 'k', 'c', 1, 'T'")).record.stage_id,
            std::optional<std::int64_t>(4));
}

TEST_F(DbRowMappersTest, UnknownStatusIsAMismatchNamingIt) {
  try {
    ReadStageRow(Row("1, 1, 0, 'prepare', 'paused', 'T0', NULL, NULL"));
    FAIL() << "mapped status 'paused'";
  } catch (const SqliteError& e) {
    EXPECT_EQ(e.sqlite_code(), SQLITE_MISMATCH);
    EXPECT_NE(std::string(e.what()).find("unknown run status 'paused'"), std::string::npos)
        << e.what();
  }
}

// Through Database: a hand-edited runs.gpu_ids or stage status is a DbError naming the file, the
// operation and the column or value, not a crash or a silently wrong row.
TEST(DbRowMappersFileTest, HandEditedColumnsGiveDbErrorNamingThem) {
  const ScopedDir dir("row_mappers_edited");
  const auto path = Database::DefaultPath(dir.path());
  Database db(path);
  const std::int64_t run = db.BeginRun(SampleRunInfo());
  const std::int64_t stage = db.BeginStage(run, 1, "features");
  {
    RawDb raw(path);
    raw.Exec("UPDATE runs SET gpu_ids = '[0, \"one\"]' WHERE id = " + std::to_string(run));
    // The CHECK on stages.status stops an ordinary edit; a file written without it may hold more.
    raw.Exec("PRAGMA ignore_check_constraints = ON");
    raw.Exec("UPDATE stages SET status = 'paused' WHERE id = " + std::to_string(stage));
  }
  ASV_EXPECT_THROW_CONTAINS(db.ListRuns(), DbError, path.string(), "ListRuns", "runs.gpu_ids",
                            "wrong type");
  ASV_EXPECT_THROW_CONTAINS(db.Stages(run), DbError, path.string(), "Stages",
                            "unknown run status 'paused'");
  {
    RawDb raw(path);
    raw.Exec("UPDATE runs SET gpu_ids = 'none' WHERE id = " + std::to_string(run));
  }
  ASV_EXPECT_THROW_CONTAINS(db.GetRun(run), DbError, "runs.gpu_ids", "not a JSON array");
}

}  // namespace
}  // namespace asv::db
