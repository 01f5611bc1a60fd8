#include "asvcpp/train/test_batching.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "asvcpp/base/error.h"
#include "asvcpp/train/rng.h"

namespace asv::train {
namespace {

TEST(TestBatchingTest, HandWorkedExample) {
  // Sorted: 98 (item 3), 100 (0), 101 (1), 150 (2), 5000 (4); budget 400, cut 0.1.
  // Batch 1: fixed 98, max_len 108.9 -> 98, 100, 101 (294 frames); 150 is too long.
  // Batch 2: fixed 150, max_len 166.7 -> 150; 5000 too long.
  // Batch 3: fixed min(5000, 400) = 400 -> 5000, truncated to the budget.
  const auto batches = MakeTestBatches({100, 101, 150, 98, 5000}, 400, 0.1);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].frames, 98);
  EXPECT_EQ(batches[0].items, (std::vector<std::size_t>{3, 0, 1}));
  EXPECT_TRUE(batches[0].truncated.empty());
  EXPECT_EQ(batches[1].frames, 150);
  EXPECT_EQ(batches[1].items, (std::vector<std::size_t>{2}));
  EXPECT_EQ(batches[2].frames, 400);
  EXPECT_EQ(batches[2].items, (std::vector<std::size_t>{4}));
  EXPECT_EQ(batches[2].truncated, (std::vector<std::size_t>{4}));
}

TEST(TestBatchingTest, FrameBudgetAndCutBoundsHoldOnRandomLengths) {
  Rng rng(4);
  std::vector<std::int64_t> lengths;
  for (int i = 0; i < 500; ++i) lengths.push_back(rng.Uniform(1, 3000));
  for (double cut : {0.0, 0.02, 0.1, 0.5}) {
    const auto batches = MakeTestBatches(lengths, 2000, cut);
    std::vector<int> seen(lengths.size(), 0);
    std::int64_t previous = 0;
    for (const auto& b : batches) {
      ASSERT_FALSE(b.items.empty());
      EXPECT_LE(b.frames * static_cast<std::int64_t>(b.items.size()), 2000);
      EXPECT_GE(b.frames, previous);  // ascending length order
      previous = b.frames;
      for (std::size_t i : b.items) {
        ++seen[i];
        EXPECT_GE(lengths[i], b.frames);
        if (lengths[i] <= 2000) {
          EXPECT_LE(static_cast<double>(lengths[i] - b.frames), cut * static_cast<double>(lengths[i]) + 1e-9);
        } else {
          EXPECT_EQ(b.frames, 2000);
        }
      }
    }
    for (int n : seen) EXPECT_EQ(n, 1);
  }
}

TEST(TestBatchingTest, EqualLengthsFillTheBudget) {
  const auto batches = MakeTestBatches(std::vector<std::int64_t>(5, 100), 250, 0.02);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].items.size(), 2u);
  EXPECT_EQ(batches[1].items.size(), 2u);
  EXPECT_EQ(batches[2].items.size(), 1u);
}

TEST(TestBatchingTest, RejectsEmptyItemsAndBadBudget) {
  EXPECT_THROW(MakeTestBatches({10, 0}, 100, 0.1), DataError);
  EXPECT_THROW(MakeTestBatches({10}, 0, 0.1), DataError);
  EXPECT_TRUE(MakeTestBatches({}, 100, 0.1).empty());
}

}  // namespace
}  // namespace asv::train
