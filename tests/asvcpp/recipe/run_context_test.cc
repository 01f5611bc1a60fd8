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
#include "asvcpp/settings/settings.h"
#include "tests/asvcpp/recipe/plain_recipe.h"

namespace asv::recipe {
namespace {

namespace stdfs = std::filesystem;

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
