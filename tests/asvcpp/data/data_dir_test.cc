#include "asvcpp/data/data_dir.h"

#include <gtest/gtest.h>

#include "tests/asvcpp/data/data_test_util.h"

namespace asv::data {
namespace {

using testing::Contains;
using testing::ErrorOf;
using testing::TempDir;
using testing::Write;

TEST(DataDirTest, LayoutHelpers) {
  EXPECT_EQ(ListFolder(DatasetRoot("/out", "datasets"), "voxceleb1"),
            std::filesystem::path("/out/datasets/voxceleb1/lists"));
  EXPECT_EQ(FeatureFolder("/out/datasets", "voxceleb2_cat"),
            std::filesystem::path("/out/datasets/voxceleb2_cat/features"));
}

TEST(DataDirTest, SaveLoadRoundTripWritesSortedFilesAndSpk2Utt) {
  TempDir dir("roundtrip");
  DataDir data;
  data.wav_scp = {{"s2-u1", "/w/s2 u1.wav"}, {"s1-u1", "cmd x |"}};
  data.utt2spk = {{"s2-u1", "s2"}, {"s1-u1", "s1"}};
  data.feats_scp = {{"s1-u1", "/f/feats.ark:12"}, {"s2-u1", "/f/feats.ark:3456"}};
  data.vad_scp = {{"s1-u1", "/f/vad.ark:9"}, {"s2-u1", "/f/vad.ark:99"}};
  data.utt2num_frames = {{"s1-u1", 100}, {"s2-u1", 250}};
  data.Save(dir / "lists");
  EXPECT_EQ(fs::ReadFile(dir / "lists" / "wav.scp"), "s1-u1 cmd x |\ns2-u1 /w/s2 u1.wav\n");
  EXPECT_EQ(fs::ReadFile(dir / "lists" / "spk2utt"), "s1 s1-u1\ns2 s2-u1\n");
  const DataDir back = DataDir::Load(dir / "lists");
  EXPECT_EQ(back.wav_scp, data.wav_scp);
  EXPECT_EQ(back.utt2spk, data.utt2spk);
  EXPECT_EQ(back.feats_scp, data.feats_scp);
  EXPECT_EQ(back.vad_scp, data.vad_scp);
  EXPECT_EQ(back.utt2num_frames, data.utt2num_frames);
  EXPECT_EQ(back.size(), 2u);
}

TEST(DataDirTest, LoadErrors) {
  TempDir dir("load");
  EXPECT_TRUE(Contains(ErrorOf([&] { DataDir::Load(dir / "none"); }), "data directory does not exist"));
  EXPECT_TRUE(Contains(ErrorOf([&] { DataDir::Load(dir.path()); }), "no data files"));
  Write(dir / "utt2spk", "u1 s1\nu2 s1\n");
  Write(dir / "spk2utt", "s1 u1\n");
  EXPECT_TRUE(Contains(ErrorOf([&] { DataDir::Load(dir.path()); }), "disagree"));
  std::filesystem::remove(dir / "utt2spk");
  EXPECT_EQ(DataDir::Load(dir.path()).utt2spk, (Table{{"u1", "s1"}}));
}

TEST(DataDirTest, FixKeepsUtterancesPresentEverywhereAndReports) {
  TempDir dir("fix");
  Write(dir / "wav.scp", "a-1 /a1.wav\na-2 /a2.wav\nb-1 /b1.wav\n");
  Write(dir / "utt2spk", "a-1 a\na-2 a\nb-1 b\nc-1 c\n");
  Write(dir / "utt2num_frames", "a-1 10\nb-1 20\nc-1 5\n");
  const FixReport report = FixDataDirOnDisk(dir.path());
  EXPECT_EQ(report.kept, 2u);
  EXPECT_EQ(report.dropped.at("wav.scp"), (std::vector<std::string>{"a-2"}));
  EXPECT_EQ(report.dropped.at("utt2spk"), (std::vector<std::string>{"a-2", "c-1"}));
  EXPECT_EQ(report.dropped.at("utt2num_frames"), (std::vector<std::string>{"c-1"}));
  EXPECT_EQ(report.dropped.count("feats.scp"), 0u);
  EXPECT_EQ(report.dropped_total(), 4u);
  EXPECT_TRUE(Contains(report.Describe(), "utt2spk: dropped 2 (a-2, c-1)"));
  EXPECT_TRUE(report.sorted_by_speaker);
  EXPECT_EQ(fs::ReadFile(dir / "wav.scp"), "a-1 /a1.wav\nb-1 /b1.wav\n");
  EXPECT_EQ(fs::ReadFile(dir / "spk2utt"), "a a-1\nb b-1\n");

  // Nothing in common: an error, files untouched.
  Write(dir / "feats.scp", "z-1 /f.ark:1\n");
  EXPECT_TRUE(Contains(ErrorOf([&] { FixDataDirOnDisk(dir.path()); }), "no utterance is present in every list"));
  EXPECT_EQ(fs::ReadFile(dir / "wav.scp"), "a-1 /a1.wav\nb-1 /b1.wav\n");
}

TEST(DataDirTest, FixFlagsIdsThatDoNotSortWithSpeakers) {
  DataDir data;
  data.utt2spk = {{"u1", "zed"}, {"u2", "amy"}};
  const FixReport report = FixDataDir(data);
  EXPECT_EQ(report.kept, 2u);
  EXPECT_FALSE(report.sorted_by_speaker);
}

}  // namespace
}  // namespace asv::data
