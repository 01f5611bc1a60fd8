// ExponentialLrAt and MarginAt against values worked out by hand from WeSpeaker's formulas
// (wespeaker_schedules_golden_test.cc compares them with WeSpeaker's own code).
#include <cmath>
#include <stdexcept>

#include <gtest/gtest.h>

#include "asvcpp/base/error.h"
#include "asvcpp/train/exponential_lr.h"
#include "asvcpp/train/margin_schedule.h"

namespace asv::train {
namespace {

ExponentialLrOptions Recipe(std::int64_t epoch_iter, double scale_ratio) {
  ExponentialLrOptions o;  // defaults: 0.1 -> 5e-5 over 150 epochs, 6 warm-up epochs from zero
  o.epoch_iter = epoch_iter;
  o.scale_ratio = scale_ratio;
  return o;
}

TEST(ExponentialLrTest, WarmUpFromZeroMultipliesTheDecay) {
  const auto o = Recipe(100, 4.0);
  const double decay_rate = std::log(5e-5 / 0.1) / (150 * 100);  // ln(final/initial) / max_iter
  EXPECT_EQ(ExponentialLrAt(o, 0), 0.0);
  // Half-way through the warm-up (3 epochs): coefficient 2, decay already running.
  EXPECT_NEAR(ExponentialLrAt(o, 300), 2.0 * 0.1 * std::exp(300 * decay_rate), 1e-15);
  // End of the warm-up: the full scale_ratio.
  EXPECT_NEAR(ExponentialLrAt(o, 600), 4.0 * 0.1 * std::exp(600 * decay_rate), 1e-15);
  EXPECT_NEAR(ExponentialLrAt(o, 599), 4.0 * 599 / 600 * 0.1 * std::exp(599 * decay_rate), 1e-15);
  // Last iteration of training reaches scale_ratio · final_lr.
  EXPECT_NEAR(ExponentialLrAt(o, 150 * 100), 4.0 * 5e-5, 1e-15);
  // Geometric: equal steps in iterations give equal ratios after the warm-up.
  EXPECT_NEAR(ExponentialLrAt(o, 2000) / ExponentialLrAt(o, 1000), ExponentialLrAt(o, 3000) / ExponentialLrAt(o, 2000),
              1e-12);
  // The peak is at the end of the warm-up.
  EXPECT_GT(ExponentialLrAt(o, 600), ExponentialLrAt(o, 599));
  EXPECT_GT(ExponentialLrAt(o, 600), ExponentialLrAt(o, 601));
}

TEST(ExponentialLrTest, OtherWarmUpModes) {
  auto o = Recipe(10, 3.0);
  o.warm_from_zero = false;  // the class default: linear from 1 to scale_ratio
  EXPECT_EQ(ExponentialLrAt(o, 0), 0.1);
  EXPECT_NEAR(ExponentialLrAt(o, 30), 2.0 * 0.1 * std::exp(30.0 / 1500 * std::log(5e-4)), 1e-15);
  o.scale_ratio = 1.0;  // no warm-up at all
  EXPECT_EQ(ExponentialLrAt(o, 0), 0.1);
  EXPECT_NEAR(ExponentialLrAt(o, 5), 0.1 * std::exp(5.0 / 1500 * std::log(5e-4)), 1e-15);
  o.warm_up_epochs = 0;
  o.warm_from_zero = true;  // nothing to warm up: no division by zero
  EXPECT_EQ(ExponentialLrAt(o, 0), 0.1);
}

TEST(ExponentialLrTest, WorldSizeScalingAndIterationCounting) {
  EXPECT_EQ(ScaleRatio(2, 128), 4.0);
  EXPECT_EQ(ScaleRatio(1, 64), 1.0);
  EXPECT_EQ(ScaleRatio(1, 32), 0.5);
  EXPECT_EQ(EpochIterations(1000, 2, 128), 3);  // 1000 // 2 = 500, 500 // 128 = 3
  EXPECT_EQ(EpochIterations(1000, 1, 1000), 1);
  EXPECT_EQ(GlobalIteration(1, 7, 0), 0);
  EXPECT_EQ(GlobalIteration(3, 7, 4), 18);
  EXPECT_THROW(ScaleRatio(0, 128), std::invalid_argument);
  EXPECT_THROW(EpochIterations(1000, 1, 0), std::invalid_argument);
  EXPECT_THROW(GlobalIteration(0, 7, 0), std::invalid_argument);
  auto o = Recipe(10, 1.0);
  EXPECT_THROW(ExponentialLrAt(o, -1), std::invalid_argument);
  o.final_lr = 0;
  EXPECT_THROW(ExponentialLrAt(o, 0), std::invalid_argument);
  o = Recipe(0, 1.0);
  EXPECT_THROW(ExponentialLrAt(o, 0), std::invalid_argument);
}

MarginScheduleOptions MarginRecipe(std::int64_t epoch_iter) {
  MarginScheduleOptions o;  // defaults: 0 -> 0.2, exp, epochs 20..40
  o.epoch_iter = epoch_iter;
  return o;
}

TEST(MarginScheduleTest, ZeroUntilEpochTwentyExponentialToEpochFortyThenFixed) {
  const auto o = MarginRecipe(10);
  const std::int64_t start = 19 * 10;  // first iteration of epoch 20
  const std::int64_t fix = 39 * 10;    // first iteration of epoch 40
  EXPECT_EQ(MarginAt(o, 0), 0.0);
  EXPECT_EQ(MarginAt(o, start - 1), 0.0);
  EXPECT_EQ(MarginAt(o, start), 0.0);  // ratio 1 − exp(0) = 0
  const double k = std::log(1e-3 / (1 + 1e-6));
  EXPECT_NEAR(MarginAt(o, start + 1), 0.2 * (1 - std::exp(k / 200)), 1e-15);
  EXPECT_NEAR(MarginAt(o, start + 100), 0.2 * (1 - std::exp(k / 2)), 1e-15);  // ≈ 0.2 · (1 − 0.0316)
  EXPECT_NEAR(MarginAt(o, fix - 1), 0.2 * (1 - std::exp(k * 199 / 200)), 1e-15);
  EXPECT_LT(MarginAt(o, fix - 1), 0.2);
  EXPECT_EQ(MarginAt(o, fix), 0.2);
  EXPECT_EQ(MarginAt(o, 149 * 10), 0.2);
  // Increasing throughout the ramp.
  for (std::int64_t it = start; it < fix; ++it) EXPECT_LT(MarginAt(o, it), MarginAt(o, it + 1)) << it;
}

TEST(MarginScheduleTest, LinearNoUpdateAndErrors) {
  MarginScheduleOptions o;
  o.initial_margin = 0.1;
  o.final_margin = 0.3;
  o.increase_start_epoch = 3;
  o.fix_start_epoch = 5;
  o.epoch_iter = 4;
  o.increase = ParseMarginIncrease("linear");
  EXPECT_EQ(MarginAt(o, 7), 0.1);
  EXPECT_NEAR(MarginAt(o, 8 + 4), 0.2, 1e-15);  // half-way
  EXPECT_NEAR(MarginAt(o, 8 + 2), 0.1 + 0.2 * 2 / 8, 1e-15);
  EXPECT_EQ(MarginAt(o, 16), 0.3);
  o.update_margin = false;
  EXPECT_EQ(MarginAt(o, 12), 0.1);
  EXPECT_EQ(MarginAt(o, 100), 0.1);
  o.update_margin = true;
  o.fix_start_epoch = 3;  // no ramp: a step from initial to final
  EXPECT_EQ(MarginAt(o, 7), 0.1);
  EXPECT_EQ(MarginAt(o, 8), 0.3);
  EXPECT_EQ(ParseMarginIncrease("exp"), MarginIncrease::kExp);
  EXPECT_THROW(ParseMarginIncrease("cosine"), ConfigError);
  EXPECT_THROW(MarginAt(o, -1), std::invalid_argument);
  o.fix_start_epoch = 2;
  EXPECT_THROW(MarginAt(o, 0), std::invalid_argument);
  o.fix_start_epoch = 5;
  o.final_margin = -0.2;
  EXPECT_THROW(MarginAt(o, 0), std::invalid_argument);
  o.final_margin = 0.2;
  o.epoch_iter = 0;
  EXPECT_THROW(MarginAt(o, 0), std::invalid_argument);
}

}  // namespace
}  // namespace asv::train
