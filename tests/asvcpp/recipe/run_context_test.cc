#include "asvcpp/recipe/run_context.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "asvcpp/base/error.h"
#include "asvcpp/db/database.h"
#include "asvcpp/base/checksum.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/recipe/stage_driver.h"
#include "asvcpp/settings/settings.h"
#include "tests/asvcpp/db/db_test_util.h"
#include "tests/asvcpp/recipe/plain_recipe.h"

namespace asv::recipe {
namespace {

namespace stdfs = std::filesystem;

using testing::PlainRecipe;
using testing::PlainSettings;

struct Fixture {
  Fixture() : dir(stdfs::temp_directory_path() / ("asv_run_context_" + std::to_string(::getpid()))) {
    stdfs::remove_all(dir);
    stdfs::create_directories(dir / "lists" / "cat");
    db = std::make_unique<db::Database>(dir / "experiments.db");
    db::RunInfo info;
    info.recipe = "test/recipe";
    info.config = "c";
    run_id = db->BeginRun(info);
  }
  ~Fixture() { stdfs::remove_all(dir); }
  stdfs::path dir;
  std::unique_ptr<db::Database> db;
  std::int64_t run_id = 0;
  PlainSettings settings;
};

TEST(RunContextTest, ResultsGetTheStageBeingRunAndArtifactsItsRow) {
  Fixture f;
  RunContext context("test/recipe", "c", f.settings, f.dir, f.db.get(), f.run_id);
  const std::int64_t stage_id = f.db->BeginStage(f.run_id, 9, "scoring");
  context.set_stage(stage_id, 9);

  db::ResultRecord result;
  result.trial_list = "vox1_o";
  result.eer = 2.5;
  context.RecordResult(result);
  result.stage = 5;  // an explicit stage wins
  result.eer = 3.5;
  context.RecordResult(result);
  db::ResultFilter filter;
  filter.run_id = f.run_id;
  const auto rows = f.db->Results(filter);
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    EXPECT_EQ(row.record.stage, row.record.eer == 2.5 ? 9 : 5);
  }

  std::ofstream(f.dir / "lists" / "utt2spk") << "u1 s1\nu2 s2\n";  // 12 bytes
  std::ofstream(f.dir / "lists" / "cat" / "v1.txt") << "a\n";      // 2 bytes
  std::ofstream(f.dir / "lists" / "cat" / "v2.txt") << "bb\n";     // 3 bytes
  context.RecordFolderArtifacts(f.dir / "lists", "list");
  context.RecordArtifact(f.dir / "missing.ark", "features");
  const auto artifacts = f.db->Artifacts(f.run_id);
  ASSERT_EQ(artifacts.size(), 3u);
  EXPECT_EQ(artifacts[0].record.path, (f.dir / "lists" / "cat").string());
  EXPECT_EQ(artifacts[0].record.bytes, 5);
  EXPECT_EQ(artifacts[1].record.path, (f.dir / "lists" / "utt2spk").string());
  EXPECT_EQ(artifacts[1].record.bytes, 12);
  EXPECT_EQ(artifacts[2].record.bytes, 0);  // unreadable size: 0
  // Files carry their SHA-256; a folder and a missing file none.
  EXPECT_EQ(artifacts[1].record.checksum, fs::FileChecksum(f.dir / "lists" / "utt2spk"));
  EXPECT_EQ(artifacts[1].record.checksum.rfind("sha256:", 0), 0u);
  EXPECT_EQ(artifacts[1].record.checksum.size(), 7u + 64u);
  EXPECT_EQ(artifacts[0].record.checksum, "");
  EXPECT_EQ(artifacts[2].record.checksum, "");
  for (const auto& a : artifacts) EXPECT_EQ(a.record.stage_id, stage_id);

  db::EpochRecord epoch;
  epoch.epoch = 1;
  epoch.loss = 4.25;
  context.RecordEpoch(epoch);
  const auto epochs = f.db->Epochs(f.run_id);
  ASSERT_EQ(epochs.size(), 1u);
}

// Recipe "test/verify" of one stage that reads `file` as a checkpoint reader does
// (fs::VerifyOrRefuse) and remembers what it found.
class VerifyingRecipe : public PlainRecipe {
 public:
  std::string name() const override { return "test/verify"; }
  std::vector<StageInfo> stages() const override { return {{0, "read", "reads a checkpoint", false}}; }
};

class VerifyingRunner : public StageRunner {
 public:
  explicit VerifyingRunner(stdfs::path file) : file_(std::move(file)) {}
  bool HasStage(const StageInfo& stage) const override { return stage.number == 0; }
  void RunStage(const StageInfo&, RunContext&) const override {
    fs::VerifyOrRefuse(file_, fs::ReadFile(file_));
  }

 private:
  stdfs::path file_;
};

TEST(RunContextTest, StagesCheckAFileWithoutItsChecksumFileAgainstTheDatabase) {
  Fixture f;
  const stdfs::path checkpoint = f.dir / "networks" / "epoch.1.pt";
  fs::WriteFileAtomic(checkpoint, std::string("weights"));
  fs::WriteChecksumFile(checkpoint, fs::FileChecksum(checkpoint));
  RunContext context("test/verify", "c", f.settings, f.dir, f.db.get(), f.run_id);
  context.RecordArtifact(checkpoint, "checkpoint");
  const VerifyingRecipe recipe;
  const VerifyingRunner runner(checkpoint);
  RunStages(recipe, runner, context);  // verified by its checksum file

  // Without the checksum file, the checksum recorded in the database is the reference.
  fs::RemoveChecksumFile(checkpoint);
  RunStages(recipe, runner, context);
  fs::WriteFileAtomic(checkpoint, std::string("weightz"));
  try {
    RunStages(recipe, runner, context);
    FAIL() << "a corrupt checkpoint without its checksum file was used";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("in the experiment database (epoch.1.pt.sha256 is missing)"),
              std::string::npos)
        << e.what();
  }

  // With neither, it is refused unless network.allow_unverified_checkpoints.
  const stdfs::path copied = f.dir / "networks" / "epoch.2.pt";
  fs::WriteFileAtomic(copied, std::string("copied from elsewhere"));
  const VerifyingRunner copied_runner(copied);
  try {
    RunStages(recipe, copied_runner, context);
    FAIL() << "an unverifiable checkpoint was used";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(copied.string() + ": cannot be verified"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("set network.allow_unverified_checkpoints = True"), std::string::npos)
        << e.what();
  }
  f.settings.common().network.allow_unverified_checkpoints = true;
  EXPECT_NO_THROW(RunStages(recipe, copied_runner, context));
  // Outside a run nothing is refused: the policy lives as long as the stages run.
  EXPECT_NO_THROW(fs::VerifyOrRefuse(copied, fs::ReadFile(copied)));
}

TEST(RunContextTest, RecordsWaitForALockedDatabaseInsteadOfFailingTheRun) {
  Fixture f;
  db::DatabaseOptions options;
  options.busy_timeout = std::chrono::milliseconds(20);
  options.retry_limit = std::chrono::milliseconds(200);
  db::Database database(f.dir / "experiments.db", options);
  RunContext context("test/recipe", "c", f.settings, f.dir, &database, f.run_id);
  db::EpochRecord epoch;
  epoch.epoch = 1;
  epoch.loss = 4.0;
  context.RecordEpoch(epoch);
  {
    db::testing::RawDb locker(f.dir / "experiments.db");
    locker.Exec("BEGIN IMMEDIATE");  // another program holds the write lock
    epoch.epoch = 2;
    epoch.loss = 3.0;
    EXPECT_NO_THROW(context.RecordEpoch(epoch));
    db::ResultRecord result;
    result.trial_list = "vox1_o";
    result.eer = 5.0;
    EXPECT_NO_THROW(context.RecordResult(result));
    EXPECT_EQ(context.pending_records(), 2u);
    try {
      context.FlushRecords(std::chrono::milliseconds(300));
      FAIL() << "records were written into a locked database";
    } catch (const DbError& e) {
      EXPECT_NE(std::string(e.what()).find("2 records of run " + std::to_string(f.run_id) +
                                           " (the first: epoch) could not be written"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(context.pending_records(), 2u);  // nothing lost
    locker.Exec("COMMIT");
  }
  // The next record writes the waiting ones first, in order.
  epoch.epoch = 3;
  epoch.loss = 2.0;
  context.RecordEpoch(epoch);
  EXPECT_EQ(context.pending_records(), 0u);
  const auto epochs = database.Epochs(f.run_id);
  ASSERT_EQ(epochs.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(epochs[static_cast<std::size_t>(i)].record.epoch, i + 1);
  db::ResultFilter filter;
  filter.run_id = f.run_id;
  EXPECT_EQ(database.Results(filter).size(), 1u);
  EXPECT_NO_THROW(context.FlushRecords(std::chrono::milliseconds(1)));  // nothing waits
}

TEST(RunContextTest, WithoutADatabaseRecordingDoesNothing) {
  Fixture f;
  RunContext context("test/recipe", "c", f.settings, f.dir, nullptr, 0);
  EXPECT_EQ(context.device(), "cpu");
  EXPECT_FALSE(context.stage_number().has_value());
  context.RecordResult(db::ResultRecord{});
  context.RecordEpoch(db::EpochRecord{});
  context.RecordArtifact(f.dir / "x", "list");
  context.RecordFolderArtifacts(f.dir / "does-not-exist", "list");  // not even listed
  EXPECT_TRUE(f.db->Results().empty());
}

TEST(RunContextTest, AFolderThatCannotBeListedIsADataError) {
  Fixture f;
  RunContext context("test/recipe", "c", f.settings, f.dir, f.db.get(), f.run_id);
  EXPECT_THROW(context.RecordFolderArtifacts(f.dir / "does-not-exist", "list"), DataError);
}

}  // namespace
}  // namespace asv::recipe
