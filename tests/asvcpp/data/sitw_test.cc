// SITW preparation (sitw.h) on a corpus layout written by the test: lists and trial lists as
// ASVtorch's prepare_sitw writes them, and every kind of bad input named with file:line.
#include "asvcpp/data/sitw.h"

#include <gtest/gtest.h>

#include <string>

#include "asvcpp/base/fs.h"
#include "asvcpp/data/data_dir.h"
#include "tests/asvcpp/data/data_test_util.h"

namespace asv::data {
namespace {

using testing::Contains;
using testing::ErrorOf;
using testing::TempDir;
using testing::Write;

// A tiny SITW part: models m1, m2 enrolled with a.flac, b.flac; test files c.flac, d.flac.
void WriteCorpus(const TempDir& dir, const std::string& part) {
  const auto root = dir / ("sitw/" + part);
  Write(root / "lists/enroll-core.lst", "m1 audio/a.flac\nm2 audio/b.flac\n");
  Write(root / "keys/core-core.lst", "m1 audio/c.flac tgt\nm1 audio/d.flac imp\n\nm2 audio/d.flac tgt\n");
  Write(root / "keys/core-multi.lst", "m2 audio/c.flac imp\nm2 audio/d.flac tgt\n");
  for (const char* file : {"a.flac", "b.flac", "c.flac", "d.flac"}) Write(root / "audio" / file, "x");
}

TEST(SitwTest, WritesAsvtorchsListsAndTrialLists) {
  TempDir dir("sitw_ok");
  WriteCorpus(dir, "eval");
  const auto out = dir / "lists/sitw";
  const PreparedDataset prepared = PrepareSitwPart(dir / "sitw", "eval", out);
  EXPECT_EQ(prepared.name, "sitw");
  EXPECT_EQ(prepared.utterances, 4u);
  EXPECT_EQ(prepared.trials, 5u);
  EXPECT_EQ(prepared.trial_lists, (std::vector<std::string>{kSitwCoreCore, kSitwCoreMulti}));
  // The model replaced by its enrollment file, labels in words, key order kept.
  EXPECT_EQ(fs::ReadFile(out / kSitwCoreCore), "a.flac c.flac target\na.flac d.flac nontarget\nb.flac d.flac target\n");
  EXPECT_EQ(fs::ReadFile(out / kSitwCoreMulti), "b.flac c.flac nontarget\nb.flac d.flac target\n");
  const DataDir lists = DataDir::Load(out);
  ASSERT_EQ(lists.wav_scp.size(), 4u);
  EXPECT_EQ(lists.wav_scp.at("c.flac"),
            std::filesystem::absolute(dir / "sitw/eval/audio/c.flac").lexically_normal().string());
  EXPECT_EQ(lists.utt2spk.at("c.flac"), "c.flac");  // each file its own speaker
  // The dev part goes to a dataset of its own.
  WriteCorpus(dir, "dev");
  EXPECT_EQ(PrepareSitwPart(dir / "sitw", "dev", dir / "lists/sitw_dev").name, "sitw_dev");
}

TEST(SitwTest, BadInputIsNamedWithFileAndLine) {
  TempDir dir("sitw_bad");
  WriteCorpus(dir, "eval");
  const auto root = dir / "sitw/eval";
  const auto prepare = [&] { PrepareSitwPart(dir / "sitw", "eval", dir / "lists/sitw"); };
  const std::string enroll = (root / "lists/enroll-core.lst").string();
  const std::string core = (root / "keys/core-core.lst").string();

  Write(root / "lists/enroll-core.lst", "m1 audio/a.flac\nm2\n");
  EXPECT_TRUE(Contains(ErrorOf(prepare), enroll + ":2: expected '<model> audio/<file>', got 1 field"));
  Write(root / "lists/enroll-core.lst", "m1 audio/a.flac\nm1 audio/b.flac\n");
  EXPECT_TRUE(Contains(ErrorOf(prepare), enroll + ":2: model 'm1' is enrolled again (first on line 1)"));
  Write(root / "lists/enroll-core.lst", "m1 wav/a.flac\n");
  EXPECT_TRUE(Contains(ErrorOf(prepare), enroll + ":1: 'wav/a.flac' is not a file of the part's audio folder"));
  Write(root / "lists/enroll-core.lst", "m1 audio/a.flac\n");
  EXPECT_TRUE(Contains(ErrorOf(prepare), core + ":4: model 'm2' has no enrollment file in " + enroll));

  Write(root / "lists/enroll-core.lst", "m1 audio/a.flac\nm2 audio/b.flac\n");
  Write(root / "keys/core-core.lst", "m1 audio/c.flac maybe\n");
  EXPECT_TRUE(Contains(ErrorOf(prepare), core + ":1: label 'maybe' is neither 'tgt' nor 'imp'"));
  Write(root / "keys/core-core.lst", "m1 audio/c.flac tgt\nm2 audio/c.flac tgt\n");
  EXPECT_TRUE(Contains(ErrorOf(prepare), core + ": 2 target, 0 non-target trials: a trial list needs both target "
                                              "and non-target trials"));
  Write(root / "keys/core-core.lst", "\n\n");
  EXPECT_TRUE(Contains(ErrorOf(prepare), core + ": empty list"));
  Write(root / "keys/core-core.lst", "m1 audio/c.flac tgt\nm1 audio/e.flac imp\n");
  EXPECT_TRUE(Contains(ErrorOf(prepare), (root / "audio/e.flac").string() + ": no such audio file"));
  std::filesystem::remove(root / "keys/core-multi.lst");
  Write(root / "keys/core-core.lst", "m1 audio/c.flac tgt\nm1 audio/d.flac imp\n");
  EXPECT_TRUE(Contains(ErrorOf(prepare), (root / "keys/core-multi.lst").string() + ": no such list"));
  // Nothing was written by any failed preparation.
  EXPECT_FALSE(std::filesystem::exists(dir / "lists/sitw"));
}

}  // namespace
}  // namespace asv::data
