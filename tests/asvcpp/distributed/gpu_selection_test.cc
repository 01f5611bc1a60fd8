#include "asvcpp/distributed/gpu_selection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "asvcpp/base/error.h"

namespace asv::distributed {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string SelectionErrorOf(const std::vector<int>& ids, const std::optional<std::string>& visible, int count) {
  try {
    WorkerVisibleDevices(ids, visible, count);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(GpuSelectionTest, AllGpusVisible) {
  EXPECT_THAT(WorkerVisibleDevices({2, 0}, std::nullopt, 4), ElementsAre("2", "0"));
  EXPECT_THAT(WorkerVisibleDevices({0}, std::nullopt, 1), ElementsAre("0"));
}

TEST(GpuSelectionTest, GpuThatDoesNotExist) {
  EXPECT_EQ(SelectionErrorOf({0, 3}, std::nullopt, 2),
            "computing.gpu_ids: GPU 3 does not exist: this machine has 2 GPUs (0, 1)");
  EXPECT_EQ(SelectionErrorOf({1}, std::nullopt, 1),
            "computing.gpu_ids: GPU 1 does not exist: this machine has 1 GPU (0)");
  EXPECT_EQ(SelectionErrorOf({0}, std::nullopt, 0),
            "computing.gpu_ids: GPU 0 does not exist: this machine has no GPUs");
}

TEST(GpuSelectionTest, ListProblems) {
  EXPECT_EQ(SelectionErrorOf({}, std::nullopt, 2), "computing.gpu_ids is empty");
  EXPECT_EQ(SelectionErrorOf({1, 0, 1}, std::nullopt, 2), "computing.gpu_ids lists GPU 1 twice");
  EXPECT_THAT(SelectionErrorOf({-1}, std::nullopt, 2), HasSubstr("computing.gpu_ids: GPU -1 is negative"));
}

TEST(GpuSelectionTest, NumericVisibleListKeepsPhysicalIds) {
  // The scheduler gave us GPUs 2 and 5; the user names them by their physical ids.
  EXPECT_THAT(WorkerVisibleDevices({5, 2}, std::string("2,5"), 2), ElementsAre("5", "2"));
  EXPECT_THAT(WorkerVisibleDevices({5}, std::string(" 2, 5 "), 2), ElementsAre("5"));
  EXPECT_EQ(SelectionErrorOf({0, 3}, std::string("0,1"), 2),
            "computing.gpu_ids: GPU 3 is not in CUDA_VISIBLE_DEVICES=0,1");
  // Position 1 is not what the user meant: with a numeric list ids are never positions.
  EXPECT_THAT(SelectionErrorOf({1}, std::string("2,5"), 2), HasSubstr("GPU 1 is not in CUDA_VISIBLE_DEVICES=2,5"));
}

TEST(GpuSelectionTest, NumericEntriesCudaCannotUse) {
  // CUDA stops at the first entry it cannot use: with "0,7,1" on a two-GPU machine it reports one device.
  EXPECT_THAT(WorkerVisibleDevices({0}, std::string("0,7,1"), 1), ElementsAre("0"));
  EXPECT_EQ(SelectionErrorOf({1}, std::string("0,7,1"), 1),
            "computing.gpu_ids: GPU 1 is in CUDA_VISIBLE_DEVICES=0,7,1 but CUDA finds only 1 of them (0)");
  EXPECT_EQ(SelectionErrorOf({0}, std::string("-1"), 0), "computing.gpu_ids: GPU 0 is not in CUDA_VISIBLE_DEVICES=-1");
  EXPECT_EQ(SelectionErrorOf({0}, std::string("0"), 0),
            "computing.gpu_ids: GPU 0 is in CUDA_VISIBLE_DEVICES=0 but CUDA finds none of them");
}

TEST(GpuSelectionTest, UuidListUsesPositions) {
  const std::string visible = "GPU-8f2c1a3e-0000-1111-2222-333344445555,MIG-1b2c3d4e-aaaa-bbbb-cccc-ddddeeeeffff";
  EXPECT_THAT(WorkerVisibleDevices({1, 0}, visible, 2),
              ElementsAre("MIG-1b2c3d4e-aaaa-bbbb-cccc-ddddeeeeffff", "GPU-8f2c1a3e-0000-1111-2222-333344445555"));
  const std::string error = SelectionErrorOf({2}, visible, 2);
  EXPECT_THAT(error, HasSubstr("computing.gpu_ids: GPU 2 is not visible: CUDA_VISIBLE_DEVICES=" + visible));
  EXPECT_THAT(error, HasSubstr("positions"));
  EXPECT_THAT(error, HasSubstr("2 GPUs (0, 1)"));
  // CUDA may find fewer devices than listed (one MIG instance per process on older drivers).
  EXPECT_THAT(SelectionErrorOf({1}, visible, 1), HasSubstr("1 GPU (0)"));
}

TEST(GpuSelectionTest, EmptyVisibleListHidesEverything) {
  EXPECT_EQ(SelectionErrorOf({0}, std::string(""), 0),
            "computing.gpu_ids: GPU 0 is not visible: CUDA_VISIBLE_DEVICES is set but empty");
  EXPECT_THAT(SelectionErrorOf({0}, std::string(" "), 0), HasSubstr("set but empty"));
}

TEST(GpuSelectionTest, SplitVisibleDevices) {
  EXPECT_EQ(SplitVisibleDevices("2, 3"), (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ(SplitVisibleDevices("GPU-8f2c,MIG-1"), (std::vector<std::string>{"GPU-8f2c", "MIG-1"}));
  EXPECT_TRUE(SplitVisibleDevices("").empty());
  EXPECT_TRUE(SplitVisibleDevices("  ").empty());
}

}  // namespace
}  // namespace asv::distributed
