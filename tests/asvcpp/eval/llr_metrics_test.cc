#include "asvcpp/eval/llr_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/eval/metrics.h"

namespace asv::eval {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(LlrMetricsTest, CllrOfZeroLlrsIsOneBitAndOfPerfectOnesNearZero) {
  EXPECT_DOUBLE_EQ(Cllr({0.0, 0.0}, {0.0, 0.0, 0.0}), 1.0);
  // log(1 + 1/3) for each side: Cllr = log2(4/3).
  EXPECT_NEAR(Cllr({std::log(3.0)}, {-std::log(3.0)}), std::log2(4.0 / 3.0), 1e-15);
  EXPECT_LT(Cllr({40.0, 50.0}, {-40.0}), 1e-15);
  EXPECT_EQ(Cllr({kInf}, {-kInf}), 0.0);
  // A confidently wrong LLR costs without bound, and a large one does not overflow.
  EXPECT_EQ(Cllr({-kInf}, {0.0}), kInf);
  EXPECT_NEAR(Cllr({-1000.0}, {0.0}), (1000.0 + std::log(2.0)) / (2.0 * std::log(2.0)), 1e-9);
}

TEST(LlrMetricsTest, OptimalLlrsPoolViolatorsAndRemoveThePriorOdds) {
  // Sorted: 0 non, 0.5 tar, 1 non, 2 tar, 3 non -> labels 0 1 0 1 0; PAV bins {0} = 0,
  // {0.5, 1} = 1/2, {2, 3} = 1/2 (equal means stay apart, same value). Prior odds 2/3.
  std::vector<double> tar_llrs, non_llrs;
  OptimalLlrs({0.5, 2.0}, {0.0, 1.0, 3.0}, &tar_llrs, &non_llrs);
  ASSERT_EQ(tar_llrs.size(), 2u);
  ASSERT_EQ(non_llrs.size(), 3u);
  EXPECT_NEAR(tar_llrs[0], std::log(1.5), 1e-15);
  EXPECT_NEAR(tar_llrs[1], std::log(1.5), 1e-15);
  EXPECT_EQ(non_llrs[0], -kInf);
  EXPECT_NEAR(non_llrs[1], std::log(1.5), 1e-15);
  EXPECT_NEAR(non_llrs[2], std::log(1.5), 1e-15);
  const double expected =
      (std::log(5.0 / 3.0) + 2.0 / 3.0 * std::log(2.5)) / (2.0 * std::log(2.0));
  EXPECT_NEAR(MinCllr({0.5, 2.0}, {0.0, 1.0, 3.0}), expected, 1e-15);
}

TEST(LlrMetricsTest, MinCllrOfSeparatedTiedAndInterleavedScores) {
  EXPECT_EQ(MinCllr({2.0, 3.0}, {0.0, 1.0}), 0.0);  // separated: every bin is pure
  EXPECT_NEAR(MinCllr({1.0, 1.0}, {1.0, 1.0, 1.0}), 1.0, 1e-15);  // one tie: llr 0 for all
  // 0 non, 1 tar, 2 non, 3 tar: bins {0}, {1, 2} = 1/2, {3}: half the trials cost log 2.
  EXPECT_NEAR(MinCllr({1.0, 3.0}, {0.0, 2.0}), 0.5, 1e-15);
  // A tie between a target and a non-target is one bin whichever way it is listed.
  EXPECT_NEAR(MinCllr({1.0, 2.0}, {0.0, 1.0}), MinCllr({2.0, 1.0}, {1.0, 0.0}), 1e-15);
  EXPECT_NEAR(MinCllr({1.0, 2.0}, {0.0, 1.0}), 0.5, 1e-15);
  // minCllr depends only on the order of the scores.
  EXPECT_NEAR(MinCllr({0.3, -1.2, 2.5}, {-0.4, 0.1, 0.95}),
              MinCllr({std::exp(0.3), std::exp(-1.2), std::exp(2.5)}, {std::exp(-0.4), std::exp(0.1), std::exp(0.95)}),
              1e-15);
}

TEST(LlrMetricsTest, ActDcfThresholdsAtTheBayesThreshold) {
  // p = 0.5, equal costs: theta = 0; misses -1 (1 of 3); false alarms 0 and 0.5 (llr >= theta).
  ActDcfResult r = ComputeActDcf({-1.0, 1.0, 2.0}, {-2.0, 0.0, 0.5}, {0.5, 1.0, 1.0});
  EXPECT_EQ(r.threshold, 0.0);
  EXPECT_DOUBLE_EQ(r.p_miss, 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(r.p_fa, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(r.act_dcf, 1.0);
  // c_fa = 10: theta = log 10; misses -1 and 1, false alarm 2.5: (0.5 * 2/3 + 5 * 1/3) / 0.5 = 4.
  r = ComputeActDcf({-1.0, 1.0, 3.0}, {-2.0, 0.0, 2.5}, {0.5, 1.0, 10.0});
  EXPECT_NEAR(r.threshold, std::log(10.0), 1e-15);
  EXPECT_DOUBLE_EQ(r.act_dcf, 4.0);
  // p = 0.01: theta = log 99 = 4.595; everything is rejected: cost p * 1 / p = 1.
  r = ComputeActDcf({-1.0, 1.0, 3.0}, {-2.0, 0.0, 2.5}, {0.01, 1.0, 1.0});
  EXPECT_NEAR(r.threshold, std::log(99.0), 1e-14);
  EXPECT_DOUBLE_EQ(r.act_dcf, 1.0);
  EXPECT_NEAR(BayesThreshold({0.05, 1.0, 1.0}), std::log(19.0), 1e-14);
}

// The PAV-optimal LLRs are calibrated: without ties their actual cost equals the minimum cost over
// DET points that metrics.h computes, at every operating point.
TEST(LlrMetricsTest, OptimalLlrsReachMinDcfAtEveryOperatingPoint) {
  std::uint64_t state = 7;
  auto uniform = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) * 0x1.0p-53;
  };
  std::vector<double> tar, non;
  for (int i = 0; i < 700; ++i) tar.push_back(1.5 + 2.0 * (uniform() + uniform() - 1.0) + 1e-9 * i);
  for (int i = 0; i < 9000; ++i) non.push_back(-1.0 + 2.0 * (uniform() + uniform() - 1.0) - 1e-9 * i);
  std::vector<double> tar_llrs, non_llrs;
  OptimalLlrs(tar, non, &tar_llrs, &non_llrs);
  const SortedScores sorted(tar, non);
  for (const DcfParams& params : {DcfParams{0.05, 1, 1}, DcfParams{0.01, 1, 1}, DcfParams{0.5, 1, 1},
                                  DcfParams{0.001, 1, 1}, DcfParams{0.3, 2, 7}}) {
    SCOPED_TRACE(params.p_target);
    EXPECT_NEAR(ComputeActDcf(tar_llrs, non_llrs, params).act_dcf, sorted.MinDcf(params).min_dcf, 1e-12);
    // Raw scores read as LLRs are not calibrated: never below the minimum.
    EXPECT_GE(ComputeActDcf(tar, non, params).act_dcf, sorted.MinDcf(params).min_dcf - 1e-12);
  }
  const LlrMetrics m = ComputeLlrMetrics(tar, non, {DcfParams{0.05, 1, 1}, DcfParams{0.01, 1, 1}});
  EXPECT_LE(m.min_cllr, m.cllr);
  EXPECT_LE(m.min_cllr, 1.0);
  ASSERT_EQ(m.act_dcf.size(), 2u);
  EXPECT_EQ(m.act_dcf[1].params.p_target, 0.01);
  // Recalibrating the optimal LLRs again changes nothing.
  EXPECT_NEAR(MinCllr(tar_llrs, non_llrs), Cllr(tar_llrs, non_llrs), 1e-12);
}

TEST(LlrMetricsTest, EmptyClassesNanScoresAndBadParametersAreErrors) {
  EXPECT_THROW(Cllr({}, {0.0}), DataError);
  EXPECT_THROW(MinCllr({0.0}, {}), DataError);
  EXPECT_THROW(ComputeActDcf({std::nan("")}, {0.0}), DataError);
  EXPECT_THROW(MinCllr({0.0}, {std::nan("")}), DataError);
  EXPECT_THROW(ComputeActDcf({0.0}, {0.0}, {1.5, 1.0, 1.0}), std::invalid_argument);
  EXPECT_THROW(BayesThreshold({0.05, 0.0, 1.0}), std::invalid_argument);
}

}  // namespace
}  // namespace asv::eval
