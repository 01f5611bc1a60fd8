// Reading an experiment database that this process may not or must not write: a file of another
// user, a read-only folder or mount (DatabaseOptions::read_only).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "asvcpp/base/error.h"
#include "asvcpp/db/database.h"
#include "asvcpp/db/schema.h"
#include "tests/asvcpp/db/db_test_util.h"
#include "tests/asvcpp/db/store_test.h"

namespace asv::db {
namespace {

using testing::FileBytes;
using testing::RawDb;
using testing::SampleRunInfo;

DatabaseOptions ReadOnly() {
  DatabaseOptions options;
  options.read_only = true;
  return options;
}

// A database with one finished run with a result, an epoch, a stage and an artifact, and one run
// whose process is gone (another start time on this pid: a pid reuse) that nobody marked yet.
// Returns the ids (finished, dead).
std::pair<std::int64_t, std::int64_t> Populate(const std::filesystem::path& path) {
  Database db(path);
  const std::int64_t done = db.BeginRun(SampleRunInfo("r", "done"));
  const std::int64_t stage = db.BeginStage(done, 5, "train");
  EpochRecord epoch;
  epoch.epoch = 1;
  epoch.loss = 2.5;
  db.RecordEpoch(done, epoch);
  ResultRecord result;
  result.trial_list = "vox1_o";
  result.eer = 3.25;
  db.RecordResult(done, result);
  ArtifactRecord artifact;
  artifact.stage_id = stage;
  artifact.path = "model.pt";
  artifact.kind = "checkpoint";
  db.RecordArtifact(done, artifact);
  db.FinishRun(done, RunStatus::kFinished);
  RunInfo dead_info = SampleRunInfo("r", "dead");
  dead_info.gpu_ids = {};
  dead_info.process_start += 4242;
  const std::int64_t dead = db.BeginRun(dead_info);
  return {done, dead};
}

// Every reading member on a read-only connection; "" when all gave what Populate wrote.
std::string ReadEverything(const std::filesystem::path& path, std::int64_t done, std::int64_t dead) {
  Database db(path, ReadOnly());
  const auto runs = db.ListRuns();
  if (runs.size() != 2) return "ListRuns: " + std::to_string(runs.size()) + " runs";
  const auto d = db.GetRun(dead);
  if (!d || d->status != RunStatus::kCrashed || !d->status_inferred || d->end_time != d->heartbeat_time) {
    return "the run of a dead process is not reported crashed (inferred, ended at its heartbeat)";
  }
  RunFilter crashed;
  crashed.status = RunStatus::kCrashed;
  if (db.ListRuns(crashed).size() != 1) return "status filter";
  if (db.MarkCrashedRuns() != 0) return "MarkCrashedRuns marked something";
  const auto results = db.Results();
  if (results.size() != 1 || results[0].record.eer != 3.25) return "Results";
  ResultFilter best;
  best.best_per_config = true;
  if (db.Results(best).size() != 1) return "Results best per config";
  if (db.Epochs(done).size() != 1 || db.Stages(done).size() != 1 || db.Artifacts(done).size() != 1) {
    return "Epochs/Stages/Artifacts";
  }
  if (db.SchemaVersion() != LatestSchemaVersion()) return "SchemaVersion";
  if (db.IntegrityCheck() != "ok") return "IntegrityCheck";
  return "";
}

class DbReadOnlyStoreTest : public testing::StoreTest {};
ASV_INSTANTIATE_STORES(DbReadOnlyStoreTest);

TEST_P(DbReadOnlyStoreTest, ReadsEverythingWritesNothingAndRefusesWrites) {
  const std::filesystem::path path = location();
  const auto [done, dead] = Populate(path);
  const std::string before = postgres() ? "" : FileBytes(path);

  EXPECT_EQ(ReadEverything(path, done, dead), "");
  Database db(path, ReadOnly());
  // SQLite: "attempt to write a readonly database"; PostgreSQL: "cannot execute INSERT in a
  // read-only transaction".
  const std::string refused = postgres() ? "read-only transaction" : "readonly";
  ASV_EXPECT_THROW_CONTAINS(db.BeginRun(SampleRunInfo()), DbError, path.string(), "BeginRun", refused);
  ASV_EXPECT_THROW_CONTAINS(db.FinishRun(dead, RunStatus::kFailed, "x"), DbError, refused);
  ASV_EXPECT_THROW_CONTAINS(db.Heartbeat(dead), DbError, refused);

  // Nothing was persisted: the dead run is still 'running' in the database, the file unchanged.
  if (!postgres()) {
    EXPECT_TRUE(FileBytes(path) == before) << "the file changed";
  }
  RawDb raw(path);
  EXPECT_EQ(raw.Scalar("SELECT status FROM runs WHERE id = " + std::to_string(dead)), "running");
}

TEST(DbReadOnlyTest, NeverCreatesAFileOrFolder) {
  const testing::ScopedDir dir("ro_missing");
  const auto path = dir / "sub" / "experiments.db";
  ASV_EXPECT_THROW_CONTAINS(Database db(path, ReadOnly()), DbError, path.string(), "no such file");
  EXPECT_FALSE(std::filesystem::exists(dir / "sub"));
}

TEST_P(DbReadOnlyStoreTest, NeverMigratesAnOlderSchema) {
  const std::filesystem::path path = location();
  DatabaseOptions v4;
  v4.max_schema_version = 4;
  { Database db(path, v4); }
  ASV_EXPECT_THROW_CONTAINS(Database db(path, ReadOnly()), DbError, path.string(), "older",
                            "read-only");
  RawDb raw(path);
  EXPECT_EQ(raw.Scalar(postgres() ? "SELECT version FROM asvcpp_schema" : "PRAGMA user_version"), "4");
}

TEST_P(DbReadOnlyStoreTest, RefusesAnEmptyDatabaseAndAnotherApplicationsTables) {
  const std::filesystem::path path = location();
  if (postgres()) {
    // An empty database (nothing recorded yet) cannot be read; it is left empty.
    ASV_EXPECT_THROW_CONTAINS(Database db(path, ReadOnly()), DbError, path.string(), "no asvcpp schema yet");
  }
  {
    RawDb raw(path);
    raw.Exec("CREATE TABLE inventory (item TEXT)");
  }
  ASV_EXPECT_THROW_CONTAINS(Database db(path), DbError, path.string(), "not an asvcpp experiment database",
                            "inventory");
  ASV_EXPECT_THROW_CONTAINS(Database db(path, ReadOnly()), DbError, "not an asvcpp experiment database");
  RawDb raw(path);
  EXPECT_EQ(raw.Scalar(postgres() ? "SELECT count(*) FROM information_schema.tables WHERE table_name = 'runs'"
                                  : "SELECT count(*) FROM sqlite_master WHERE name = 'runs'"),
            "0");  // left untouched
}

// Permission bits, as another user sees them: the file read-only (0444) in a folder others may
// write (so a reader can create the -shm file), and the file in a read-only folder (0555), where
// nobody can create -shm and the database is read as immutable.
TEST(DbReadOnlyTest, ReadsAFileItMayNotWriteInAFolderItMayOrMayNotWrite) {
  for (const bool folder_writable : {true, false}) {
    SCOPED_TRACE(folder_writable ? "file 0444, folder 0777" : "file 0444, folder 0555");
    const testing::ScopedDir dir(folder_writable ? "ro_perm_file" : "ro_perm_folder");
    const auto folder = dir / "out";
    std::filesystem::create_directories(folder);
    const auto path = folder / "experiments.db";
    const auto [done, dead] = Populate(path);
    const std::string before = FileBytes(path);
    ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
    ASSERT_EQ(::chmod(folder.c_str(), folder_writable ? 0777 : 0555), 0);

    const auto outcome = testing::RunAsUnprivileged([&](std::string* report) {
      *report = ReadEverything(path, done, dead);
      return report->empty() ? 0 : 1;
    });
    ::chmod(folder.c_str(), 0755);
    if (!outcome) GTEST_SKIP() << "running as root and cannot drop privileges to user nobody here";
    EXPECT_EQ(outcome->status, 0) << outcome->report;
    EXPECT_TRUE(FileBytes(path) == before) << "the file changed";
  }
}

}  // namespace
}  // namespace asv::db
