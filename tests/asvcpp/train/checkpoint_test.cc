#include "asvcpp/train/checkpoint.h"

#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

namespace asv::train {
namespace {

namespace stdfs = std::filesystem;

stdfs::path TempFolder(const std::string& name) {
  auto p = stdfs::temp_directory_path() / ("asv_checkpoint_test_" + name + "_" + std::to_string(::getpid()));
  stdfs::remove_all(p);
  stdfs::create_directories(p);
  return p;
}

TEST(CheckpointTest, PathNaming) {
  EXPECT_EQ(CheckpointPath("/out/networks", 12), stdfs::path("/out/networks/epoch.12.pt"));
}

TEST(CheckpointTest, FindLastEpochSeesPastAGap) {
  const auto dir = TempFolder("find_last");
  EXPECT_EQ(FindLastEpoch(dir), 0);
  EXPECT_EQ(FindLastEpoch(dir / "missing"), 0);
  for (int e : {1, 2, 4}) std::ofstream(CheckpointPath(dir, e)) << "x";
  std::ofstream(dir / "epoch.07.pt") << "x";  // not a checkpoint name
  std::ofstream(dir / "epoch.9.pt.sha256") << "x";
  stdfs::create_directories(dir / "epoch.12.pt");  // a folder, not a checkpoint
  EXPECT_EQ(FindLastEpoch(dir), 4);
  stdfs::remove(CheckpointPath(dir, 1));
  EXPECT_EQ(FindLastEpoch(dir), 4);
  stdfs::remove_all(dir);
}

TEST(CheckpointTest, EpochOfCheckpointReadsOnlyCheckpointNames) {
  EXPECT_EQ(EpochOfCheckpoint("/out/networks/epoch.12.pt"), 12);
  EXPECT_EQ(EpochOfCheckpoint(CheckpointPath("x", 3)), 3);
  for (const char* other : {"epoch.0.pt", "epoch.-1.pt", "epoch.+1.pt", "epoch.01.pt", "epoch..pt", "epoch.1.pth",
                            "epoch.1.pt.sha256", "avg_model.pt", "epoch.1x.pt", "epoch.99999999999.pt"}) {
    EXPECT_FALSE(EpochOfCheckpoint(other).has_value()) << other;
  }
}

TEST(CheckpointTest, ResumeEpochSemantics) {
  EXPECT_EQ(PlanResume(0).load_epoch, 0);
  EXPECT_FALSE(PlanResume(0).evaluate_only);
  EXPECT_EQ(PlanResume(7).load_epoch, 7);
  EXPECT_FALSE(PlanResume(7).evaluate_only);
  EXPECT_EQ(PlanResume(-7).load_epoch, 7);
  EXPECT_TRUE(PlanResume(-7).evaluate_only);
}

}  // namespace
}  // namespace asv::train
