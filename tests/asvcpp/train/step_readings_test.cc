#include "asvcpp/train/step_readings.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace asv::train {
namespace {

TEST(StepReadingsTest, ReadsEveryPendingStepInOrderWithItemsValues) {
  StepReadings readings;
  EXPECT_TRUE(readings.Read().empty());
  std::vector<double> expected_loss;
  std::vector<double> expected_correct;
  for (std::size_t k = 0; k < StepReadings::kReadInterval; ++k) {
    // A loss that needs a gradient (as the training loss does) and a float32 value that is not
    // a round double: the reading must be the float32 value exactly, as item<double>() gives it.
    const auto w = torch::full({}, 0.1f * static_cast<float>(k + 1)).requires_grad_(true);
    const auto loss = w * 1.7f;
    const auto correct = torch::full({}, static_cast<std::int64_t>(3 * k), torch::kLong);
    expected_loss.push_back(loss.item<double>());
    expected_correct.push_back(correct.item<double>());
    const bool due = readings.Add(loss, correct);
    EXPECT_EQ(due, k + 1 == StepReadings::kReadInterval) << k;
    EXPECT_EQ(readings.pending(), k + 1);
  }
  const auto steps = readings.Read();
  ASSERT_EQ(steps.size(), StepReadings::kReadInterval);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    EXPECT_EQ(steps[k].loss, expected_loss[k]) << k;
    EXPECT_EQ(steps[k].correct, expected_correct[k]) << k;
  }
  EXPECT_EQ(readings.pending(), 0u);
  EXPECT_TRUE(readings.Read().empty());

  // Fewer than the interval are read too (the end of an epoch), non-finite values as they are.
  EXPECT_FALSE(readings.Add(torch::full({}, std::numeric_limits<float>::infinity()), torch::zeros({}, torch::kLong)));
  const auto last = readings.Read();
  ASSERT_EQ(last.size(), 1u);
  EXPECT_TRUE(std::isinf(last[0].loss));
}

TEST(StepReadingsTest, RejectsTensorsThatAreNotScalars) {
  StepReadings readings;
  EXPECT_THROW(readings.Add(torch::zeros({1}), torch::zeros({})), std::invalid_argument);
  EXPECT_THROW(readings.Add(torch::zeros({}), torch::zeros({2, 2})), std::invalid_argument);
  EXPECT_EQ(readings.pending(), 0u);
}

}  // namespace
}  // namespace asv::train
