#include "asvcpp/eval/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "asvcpp/base/error.h"

namespace asv::eval {
namespace {

// Straightforward O(n log n) transcription of the definitions in metrics.h, with std::stable_sort
// on (score, label) pairs: the independent reference for the randomised tests.
struct Reference {
  std::vector<double> frr, far, thr;
};
Reference ReferenceCurve(const std::vector<double>& tar, const std::vector<double>& non) {
  std::vector<std::pair<double, int>> all;
  for (double s : tar) all.emplace_back(s, 1);
  for (double s : non) all.emplace_back(s, 0);
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Reference r;
  r.frr.push_back(0);
  r.far.push_back(1);
  r.thr.push_back(all[0].first - 0.001);
  double t = 0;
  for (std::size_t k = 1; k <= all.size(); ++k) {
    t += all[k - 1].second;
    r.frr.push_back(t / static_cast<double>(tar.size()));
    r.far.push_back((static_cast<double>(non.size()) - (static_cast<double>(k) - t)) / static_cast<double>(non.size()));
    r.thr.push_back(all[k - 1].first);
  }
  return r;
}

// The sorted sequence of `s` (SortedScores::SortedSequence) as one value.
std::pair<std::vector<double>, std::vector<std::uint8_t>> Sequence(const SortedScores& s) {
  std::pair<std::vector<double>, std::vector<std::uint8_t>> out;
  s.SortedSequence(&out.first, &out.second);
  return out;
}

// Every metric of `s` against a sweep over all n + 1 points of the reference curve: the same k
// (first minimiser), the same doubles, the same thresholds.
void ExpectMatchesSweep(const SortedScores& s, const std::vector<double>& tar, const std::vector<double>& non,
                        const std::vector<DcfParams>& params) {
  const Reference ref = ReferenceCurve(tar, non);
  std::size_t best = 0;
  for (std::size_t k = 1; k < ref.frr.size(); ++k) {
    if (std::fabs(ref.frr[k] - ref.far[k]) < std::fabs(ref.frr[best] - ref.far[best])) best = k;
  }
  const EerResult eer = s.Eer();
  EXPECT_EQ(eer.index, static_cast<std::int64_t>(best));
  EXPECT_EQ(eer.eer, (ref.frr[best] + ref.far[best]) / 2);
  EXPECT_EQ(eer.threshold, ref.thr[best]);
  for (const DcfParams& p : params) {
    SCOPED_TRACE(testing::Message() << "p_target " << p.p_target << " c_miss " << p.c_miss << " c_fa " << p.c_fa);
    std::size_t kb = 0;
    double cb = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < ref.frr.size(); ++k) {
      volatile double a = p.c_miss * ref.frr[k];  // volatile: no fused multiply-add here either
      volatile double b = p.c_fa * ref.far[k];
      const double cdet = a * p.p_target + b * (1 - p.p_target);
      if (cdet < cb) cb = cdet, kb = k;
    }
    const MinDcfResult dcf = s.MinDcf(p);
    EXPECT_EQ(dcf.index, static_cast<std::int64_t>(kb));
    EXPECT_EQ(dcf.min_dcf, cb / std::min(p.c_miss * p.p_target, p.c_fa * (1 - p.p_target)));
    EXPECT_EQ(dcf.threshold, ref.thr[kb]);
  }
}

TEST(Metrics, PerfectSeparationGivesZeroEerAndDcf) {
  const EerResult eer = ComputeEer({3, 4, 5}, {0, 1, 2});
  EXPECT_EQ(eer.eer, 0.0);
  EXPECT_EQ(eer.percent(), 0.0);
  EXPECT_EQ(eer.index, 3);  // reject the three non-targets
  EXPECT_EQ(eer.threshold, 2.0);
  const MinDcfResult dcf = ComputeMinDcf({3, 4, 5}, {0, 1, 2});
  EXPECT_EQ(dcf.min_dcf, 0.0);
  EXPECT_EQ(dcf.threshold, 2.0);
}

TEST(Metrics, HandComputedOverlap) {
  // Sorted: 0(n) 1(t) 2(n) 3(t). k: FRR / FAR = 0:0/1, 1:0/.5, 2:.5/.5, 3:.5/0, 4:1/0.
  const EerResult eer = ComputeEer({1, 3}, {0, 2});
  EXPECT_EQ(eer.index, 2);
  EXPECT_EQ(eer.eer, 0.5);
  EXPECT_EQ(eer.threshold, 1.0);
  // C_det(p=0.5, 1, 1) = 0.5 FRR + 0.5 FAR: 0.5, 0.25, 0.5, 0.25, 0.5 -> first minimum at k = 1.
  const MinDcfResult dcf = ComputeMinDcf({1, 3}, {0, 2}, {0.5, 1, 1});
  EXPECT_EQ(dcf.index, 1);
  EXPECT_EQ(dcf.threshold, 0.0);
  EXPECT_EQ(dcf.min_dcf, 0.5);  // 0.25 / min(0.5, 0.5)
}

TEST(Metrics, TiesAreNotMergedAndTargetsSortFirst) {
  // Every score equal: sorted labels t t n n; FRR 0 .5 1 1 1, FAR 1 1 1 .5 0 -> first argmin of
  // |FRR-FAR| is k = 2 (|1-1| = 0).
  const SortedScores s({7, 7}, {7, 7});
  EXPECT_EQ(Sequence(s).second, (std::vector<std::uint8_t>{1, 1, 0, 0}));
  const EerResult eer = s.Eer();
  EXPECT_EQ(eer.index, 2);
  EXPECT_EQ(eer.eer, 1.0);
  const DetCurve c = s.Curve();
  EXPECT_EQ(c.frr, (std::vector<double>{0, 0.5, 1, 1, 1}));
  EXPECT_EQ(c.far, (std::vector<double>{1, 1, 1, 0.5, 0}));
  EXPECT_EQ(c.thresholds, (std::vector<double>{7 - 0.001, 7, 7, 7, 7}));
}

// Straightforward transcription of the tie-aware EER of metrics.h: distinct scores, point j
// rejects the scores <= v_j, the first point with FRR >= FAR and the segment before it.
TieAwareEerResult ReferenceTieAwareEer(const std::vector<double>& tar, const std::vector<double>& non) {
  std::vector<double> values(tar);
  values.insert(values.end(), non.begin(), non.end());
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  const auto nt = static_cast<double>(tar.size()), nn = static_cast<double>(non.size());
  double frr_a = 0, far_a = 1;
  for (const double v : values) {
    const auto at_or_below = [v](const std::vector<double>& x) {
      return static_cast<double>(std::count_if(x.begin(), x.end(), [v](double y) { return y <= v; }));
    };
    const double frr_b = at_or_below(tar) / nt, far_b = (nn - at_or_below(non)) / nn;
    if (frr_b - far_b >= 0) {
      TieAwareEerResult r;
      r.threshold = v;
      r.reject_fraction = (far_a - frr_a) / ((far_a - frr_a) + (frr_b - far_b));
      r.eer = frr_a + r.reject_fraction * (frr_b - frr_a);
      r.tied_targets = std::count(tar.begin(), tar.end(), v);
      r.tied_nontargets = std::count(non.begin(), non.end(), v);
      return r;
    }
    frr_a = frr_b;
    far_a = far_b;
  }
  ADD_FAILURE() << "no crossing";
  return {};
}

TEST(Metrics, TieAwareEerWithAllScoresEqualIsHalf) {
  // ASVtorch: targets first within the tie, EER 100 %; tie-aware: the one segment from
  // (FRR 0, FAR 1) to (1, 0) crosses at 50 %, rejecting half of the tied trials.
  for (const auto& [nt, nn] : {std::pair<int, int>{2, 2}, {3, 5}, {7, 1}}) {
    const SortedScores s(std::vector<double>(nt, 7.0), std::vector<double>(nn, 7.0));
    const TieAwareEerResult tie = s.TieAwareEer();
    EXPECT_EQ(s.Eer().eer, 1.0);
    EXPECT_DOUBLE_EQ(tie.eer, 0.5);
    EXPECT_DOUBLE_EQ(tie.reject_fraction, 0.5);
    EXPECT_EQ(tie.threshold, 7.0);
    EXPECT_EQ(tie.tied_targets, nt);
    EXPECT_EQ(tie.tied_nontargets, nn);
    EXPECT_TRUE(TiesDecideEer(s.Eer(), tie));
    EXPECT_NE(DescribeTiedEer(s.Eer(), tie).find("100.0000 % with targets before non-targets"), std::string::npos);
    EXPECT_NE(DescribeTiedEer(s.Eer(), tie).find("50.0000 % tie-aware"), std::string::npos);
  }
}

TEST(Metrics, TieAwareEerOfAHandComputedPartialTie) {
  // Targets 0.2 0.5 0.5 0.9, non-targets 0.1 0.3 0.5 0.5. ASVtorch's sequence
  // n t n t t n n t: at k = 4 FRR = 2/4 = FAR, EER 50 %. Merged: rejecting <= 0.3 gives
  // (FRR 1/4, FAR 2/4), rejecting <= 0.5 gives (3/4, 0); the segment crosses at
  // a = (1/2 - 1/4) / ((1/2 - 1/4) + (3/4 - 0)) = 1/4: EER = 1/4 + 1/4 * 2/4 = 3/8.
  const std::vector<double> tar = {0.2, 0.5, 0.5, 0.9}, non = {0.1, 0.3, 0.5, 0.5};
  for (const bool swapped_pivots : {false, true}) {
    // More targets than non-targets makes the non-targets the sorted class: the same answer.
    std::vector<double> t = tar, n = non;
    if (swapped_pivots) t.push_back(0.95);
    const SortedScores s(t, n);
    const TieAwareEerResult tie = s.TieAwareEer();
    SCOPED_TRACE(swapped_pivots);
    if (!swapped_pivots) {
      EXPECT_EQ(s.Eer().eer, 0.5);
      EXPECT_DOUBLE_EQ(tie.eer, 3.0 / 8.0);
      EXPECT_DOUBLE_EQ(tie.reject_fraction, 0.25);
      EXPECT_TRUE(TiesDecideEer(s.Eer(), tie));
    } else {
      // 5 targets: (FRR 1/5, FAR 2/4) -> (3/5, 0); a = 0.3 / (0.3 + 0.6) = 1/3, EER = 1/5 + 2/15.
      EXPECT_DOUBLE_EQ(tie.eer, 1.0 / 3.0);
      EXPECT_DOUBLE_EQ(tie.reject_fraction, 1.0 / 3.0);
    }
    EXPECT_EQ(tie.threshold, 0.5);
    EXPECT_EQ(tie.tied_targets, 2);
    EXPECT_EQ(tie.tied_nontargets, 2);
  }
}

TEST(Metrics, TieAwareEerWithoutTiesInterpolatesTheDetCurve) {
  // Targets 2 4 6, non-targets 1 3 5 7, no ties: FRR - FAR is -1/6 at k = 3 (reject 1 2 3:
  // FRR 1/3, FAR 2/4) and 1/6 at k = 4 (FRR 2/3, FAR 2/4); in doubles |1/6| at k = 4 is the
  // smaller (2/3 rounds down), so ASVtorch (NumPy, the same operations) takes k = 4: EER 7/12.
  // The tie-aware one is the linear interpolation between k = 3 and k = 4: FRR = FAR = 1/2 at
  // a = 1/2. The 8.3 points between them are the curve's step, not ties: TiesDecideEer says no.
  const SortedScores s({2, 4, 6}, {1, 3, 5, 7});
  const TieAwareEerResult tie = s.TieAwareEer();
  EXPECT_EQ(s.Eer().index, 4);
  EXPECT_DOUBLE_EQ(s.Eer().eer, 7.0 / 12.0);
  EXPECT_DOUBLE_EQ(tie.eer, 0.5);
  EXPECT_DOUBLE_EQ(tie.reject_fraction, 0.5);
  EXPECT_EQ(tie.threshold, 4.0);
  EXPECT_EQ(tie.tied_targets, 1);
  EXPECT_EQ(tie.tied_nontargets, 0);
  EXPECT_FALSE(TiesDecideEer(s.Eer(), tie));
  // A crossing exactly at a DET point: targets 1 3 5 7, non-targets 0 2 4 6: rejecting <= 3
  // gives FRR 2/4 = FAR 2/4, the EER of both.
  const SortedScores exact({1, 3, 5, 7}, {0, 2, 4, 6});
  EXPECT_DOUBLE_EQ(exact.TieAwareEer().eer, 0.5);
  EXPECT_DOUBLE_EQ(exact.Eer().eer, 0.5);
  EXPECT_DOUBLE_EQ(exact.TieAwareEer().reject_fraction, 1.0);
  // Perfect separation: EER 0 at the gap.
  EXPECT_DOUBLE_EQ(SortedScores({5, 6}, {1, 2, 3}).TieAwareEer().eer, 0.0);
  // Ties within one class only do not decide the EER.
  const SortedScores one_class({3, 3, 3, 8}, {1, 2, 4, 4});
  EXPECT_FALSE(TiesDecideEer(one_class.Eer(), one_class.TieAwareEer()));
}

TEST(Metrics, TieAwareEerMatchesTheReferenceOnRandomScores) {
  std::mt19937_64 rng(777);
  const double inf = std::numeric_limits<double>::infinity();
  for (int round = 0; round < 60; ++round) {
    const int nt = 1 + static_cast<int>(rng() % (round % 2 ? 300 : 40));
    const int nn = 1 + static_cast<int>(rng() % 200);
    const int kind = round % 3;  // 0: few distinct values, 1: half steps, 2: doubles
    std::normal_distribution<double> g(0, 2);
    auto draw = [&](double mean) {
      const double v = mean + g(rng);
      if (kind == 0) return std::round(v / 3);
      if (kind == 1) return std::floor(v * 2) / 2;
      return rng() % 50 == 0 ? (v < 0 ? -inf : inf) : v;
    };
    std::vector<double> tar(nt), non(nn);
    for (double& v : tar) v = draw(1.0);
    for (double& v : non) v = draw(-0.5);
    const TieAwareEerResult ref = ReferenceTieAwareEer(tar, non);
    const TieAwareEerResult got = ComputeTieAwareEer(tar, non);
    ASSERT_NEAR(got.eer, ref.eer, 1e-12) << round;
    ASSERT_NEAR(got.reject_fraction, ref.reject_fraction, 1e-12) << round;
    ASSERT_EQ(got.threshold, ref.threshold) << round;
    ASSERT_EQ(got.tied_targets, ref.tied_targets) << round;
    ASSERT_EQ(got.tied_nontargets, ref.tied_nontargets) << round;
    // FRR = FAR on the segment: the EER also equals the FAR side of the interpolation.
    EXPECT_GE(got.eer, 0.0);
    EXPECT_LE(got.eer, 1.0);
  }
}

TEST(Metrics, MatchesReferenceOnRandomScoresWithTies) {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 40; ++round) {
    // Fewer targets than non-targets, and (odd rounds) often more: both classes serve as pivots.
    const int nt = 1 + static_cast<int>(rng() % (round % 2 ? 400 : 60));
    const int nn = 1 + static_cast<int>(rng() % 300);
    // Coarse values (many ties) and float32 values sort on 32-bit keys, the others on 64-bit ones.
    const int kind = round % 3;
    std::normal_distribution<double> g(0, 2);
    auto draw = [&](double mean) {
      double v = mean + g(rng);
      return kind == 0 ? std::floor(v * 2) / 2 : kind == 1 ? static_cast<double>(static_cast<float>(v)) : v;
    };
    std::vector<double> tar(nt), non(nn);
    for (double& v : tar) v = draw(1.5);
    for (double& v : non) v = draw(-0.5);
    const Reference ref = ReferenceCurve(tar, non);
    const SortedScores s(tar, non);
    const DetCurve c = s.Curve();
    ASSERT_EQ(c.frr, ref.frr);
    ASSERT_EQ(c.far, ref.far);
    ASSERT_EQ(c.thresholds, ref.thr);
    for (std::size_t k = 0; k < ref.thr.size(); ++k) ASSERT_EQ(s.Threshold(static_cast<std::int64_t>(k)), ref.thr[k]) << k;
    ExpectMatchesSweep(s, tar, non, {DcfParams{0.05, 1, 1}, DcfParams{0.01, 2, 1}, DcfParams{0.3, 1, 5}});
  }
}

TEST(Metrics, LargeListsMatchTheSweepAtEveryTargetShare) {
  // 1 % targets (all-vs-all lists), 50 % (VoxCeleb1-O/E/H), 90 % (non-targets are the pivots);
  // float scores, double scores, and scores rounded to 0.01 (long runs of ties).
  std::mt19937_64 rng(2024);
  std::normal_distribution<double> g(0, 1);
  for (const double share : {0.01, 0.5, 0.9}) {
    for (int kind = 0; kind < 3; ++kind) {
      SCOPED_TRACE(testing::Message() << "target share " << share << " kind " << kind);
      std::vector<double> tar, non;
      for (int i = 0; i < 60000; ++i) {
        const bool target = std::uniform_real_distribution<double>(0, 1)(rng) < share;
        double v = (target ? 2.0 : 0.0) + g(rng);
        v = kind == 0 ? static_cast<double>(static_cast<float>(v)) : kind == 1 ? v : std::round(v * 100) / 100;
        (target ? tar : non).push_back(v);
      }
      const SortedScores s(tar, non);
      ExpectMatchesSweep(s, tar, non, {DcfParams{0.05, 1, 1}, DcfParams{0.01, 1, 1}, DcfParams{0.001, 1, 1}});
    }
  }
}

TEST(Metrics, PlateausOfTheCostKeepTheFirstMinimiser) {
  // Costs so small that C_det is a subnormal number: a false alarm (c_fa = 1e-320) or a miss
  // (c_miss = 1e-320) changes it by less than its spacing, so C_det is flat over several points of
  // a run of non-target (target) scores, and the first point of the minimal plateau, not the
  // run's end, is the reported one, as in the sweep. p_target near 1 or 0 flattens it likewise.
  std::mt19937_64 rng(99);
  std::normal_distribution<double> g(0, 1);
  std::vector<double> tar(3000), non(5000);
  for (double& v : tar) v = std::round((1 + g(rng)) * 4) / 4;
  for (double& v : non) v = std::round(g(rng) * 4) / 4;
  const std::vector<DcfParams> params = {DcfParams{0.5, 1, 1e-320}, DcfParams{0.5, 1e-320, 1},
                                         DcfParams{1 - 1e-15, 1, 1}, DcfParams{1e-17, 1, 1}};
  ExpectMatchesSweep(SortedScores(tar, non), tar, non, params);
  ExpectMatchesSweep(SortedScores(non, tar), non, tar, params);  // more targets: the other pivot class
  // The plateau is really there: the reported point is not the end of its run of non-targets.
  const SortedScores s(tar, non);
  const MinDcfResult dcf = s.MinDcf(params[0]);
  const auto [scores, is_target] = Sequence(s);
  EXPECT_EQ(is_target[static_cast<std::size_t>(dcf.index)], 0) << "index " << dcf.index;
}

TEST(Metrics, InfiniteAndWidelySpreadScoresRankExactly) {
  // Score ranges that give the ranking table one range (infinite quantiles, a spread beyond the
  // largest double) must still rank every score.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> tar = {inf, inf, -inf, 3, 1e308, -1e308, 0.0, -0.0, inf, -inf};
  std::vector<double> non = {-inf, 2, 1e308, -1e308, 0.0, -0.0, inf, 5, -5, 1e-300, -1e-300, 7, -inf, 0.5};
  ExpectMatchesSweep(SortedScores(tar, non), tar, non, {DcfParams{0.05, 1, 1}, DcfParams{0.5, 1, 1}});
  ExpectMatchesSweep(SortedScores(non, tar), non, tar, {DcfParams{0.05, 1, 1}, DcfParams{0.5, 1, 1}});
  const SortedScores s(tar, non);
  const Reference ref = ReferenceCurve(tar, non);
  for (std::size_t k = 0; k < ref.thr.size(); ++k) EXPECT_EQ(s.Threshold(static_cast<std::int64_t>(k)), ref.thr[k]) << k;
  EXPECT_THROW(s.Threshold(-1), std::out_of_range);
  EXPECT_THROW(s.Threshold(s.size() + 1), std::out_of_range);
}

TEST(Metrics, SortsNegativesInfinitiesAndSignedZeros) {
  const double inf = std::numeric_limits<double>::infinity();
  const SortedScores s({-0.0, 1e300, -inf, -1e-300}, {0.0, -2.5, inf, 5e-324});
  const auto [scores, is_target] = Sequence(s);
  EXPECT_EQ(scores, (std::vector<double>{-inf, -2.5, -1e-300, 0.0, 0.0, 5e-324, 1e300, inf}));
  EXPECT_EQ(is_target, (std::vector<std::uint8_t>{1, 0, 1, 1, 0, 0, 1, 0}));
}

TEST(Metrics, SortsFloatScoresWithNegativesInfinitiesAndSignedZeros) {
  // Every value is exactly a float: the 32-bit key path.
  const double inf = std::numeric_limits<double>::infinity();
  const double tiny = static_cast<double>(std::numeric_limits<float>::denorm_min());
  const SortedScores s({-0.0, 3.5, -inf, -tiny, 0.25}, {0.0, -2.5, inf, tiny, 0.25, -3.5});
  EXPECT_EQ(Sequence(s).first,
            (std::vector<double>{-inf, -3.5, -2.5, -tiny, 0.0, 0.0, tiny, 0.25, 0.25, 3.5, inf}));
  EXPECT_EQ(Sequence(s).second, (std::vector<std::uint8_t>{1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0}));
  // One value that is not a float puts both classes on 64-bit keys, with the same order.
  const SortedScores mixed({-0.0, 3.5, -inf, -tiny, 0.25}, {0.0, -2.5, inf, tiny, 0.25, -3.5, 0.1});
  EXPECT_EQ(Sequence(mixed).first,
            (std::vector<double>{-inf, -3.5, -2.5, -tiny, 0.0, 0.0, tiny, 0.1, 0.25, 0.25, 3.5, inf}));
  EXPECT_EQ(Sequence(mixed).second, (std::vector<std::uint8_t>{1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 1, 0}));
}

TEST(Metrics, RejectsEmptyClassesNanAndBadParams) {
  EXPECT_THROW(ComputeEer({}, {1.0}), DataError);
  EXPECT_THROW(ComputeEer({1.0}, {}), DataError);
  EXPECT_THROW(ComputeEer({1.0, std::nan("")}, {0.0}), DataError);
  EXPECT_THROW(ComputeMinDcf({1.0}, {0.0}, {0.0, 1, 1}), std::invalid_argument);
  EXPECT_THROW(ComputeMinDcf({1.0}, {0.0}, {1.0, 1, 1}), std::invalid_argument);
  EXPECT_THROW(ComputeMinDcf({1.0}, {0.0}, {0.5, -1, 1}), std::invalid_argument);
  EXPECT_THROW(ComputeMinDcf({1.0}, {0.0}, {0.5, 1, std::nan("")}), std::invalid_argument);
  try {
    ComputeEer({2.0}, {1.0, std::nan("")});
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("non-target score 1"), std::string::npos) << e.what();
  }
  // A NaN inside the unrolled part of the larger class's pass, for either class being the larger.
  std::vector<double> many(20, 0.5);
  many[13] = std::nan("");
  try {
    ComputeEer({2.0}, many);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("non-target score 13 (0-based, of 20) is NaN"), std::string::npos) << e.what();
  }
  try {
    ComputeEer(many, {0.1});
    FAIL();
  } catch (const DataError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("target score 13 (0-based, of 20) is NaN"), std::string::npos) << what;
    EXPECT_EQ(what.find("non-target"), std::string::npos) << what;
  }
}

TEST(Metrics, ComputeMetricsCountsOtherLabels) {
  const std::vector<double> scores = {3, 0, 2, 9, 1, -4};
  const std::vector<std::string> labels = {"target", "nontarget", "T", "maybe", "0", "maybe"};
  const Metrics m = ComputeMetrics(scores, labels);
  EXPECT_EQ(m.counts.n_target, 2);
  EXPECT_EQ(m.counts.n_nontarget, 2);
  EXPECT_EQ(m.counts.n_other, 2);
  EXPECT_EQ(m.counts.other_labels.at("maybe"), 2);
  EXPECT_EQ(m.counts.Describe(), "2 target, 2 non-target, 2 other (labels 'maybe' x2)");
  EXPECT_EQ(m.eer.eer, 0.0);
  EXPECT_EQ(FormatMetrics(m), "EER = 0.0000  minDCF = 0.0000");
  EXPECT_THROW(ComputeMetrics({1.0}, std::vector<std::string>{"1", "0"}), std::invalid_argument);
  // Custom single-label vocabulary (ASVtorch's tar_label / nontar_label).
  const Metrics m2 = ComputeMetrics({1, 0, 5}, std::vector<std::string>{"same", "diff", "target"}, {},
                                    LabelVocabulary::Single("same", "diff"));
  EXPECT_EQ(m2.counts.n_other, 1);
  EXPECT_THROW(LabelVocabulary::Single("a", "a"), std::invalid_argument);
}

TEST(Metrics, DefaultVocabularyIsAsvtorchs) {
  const LabelVocabulary v = LabelVocabulary::Default();
  for (const char* l : {"Target", "target", "TARGET", "1", "t", "T"}) EXPECT_EQ(v.Classify(l), TrialLabel::kTarget) << l;
  for (const char* l : {"Nontarget", "nontarget", "NONTARGET", "Non-target", "non-target", "NON-TARGET", "0", "n",
                        "N", "f", "F"}) {
    EXPECT_EQ(v.Classify(l), TrialLabel::kNonTarget) << l;
  }
  for (const char* l : {"yes", "no", "tar", "nontar", "true", "false", "TRUE", "", "1.0"}) {
    EXPECT_EQ(v.Classify(l), TrialLabel::kOther) << l;
  }
}

TEST(Metrics, MillionTrialsGiveTheNormalModelsEer) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> g(0, 1);
  std::vector<double> tar(100000), non(900000);
  for (double& v : tar) v = 2 + g(rng);
  for (double& v : non) v = g(rng);
  const SortedScores s(std::move(tar), std::move(non));
  const EerResult eer = s.Eer();
  const MinDcfResult dcf = s.MinDcf();
  // Two unit normals 2 apart: EER = Phi(-1) = 15.87 %; the threshold near their midpoint, 1.
  EXPECT_NEAR(eer.percent(), 15.87, 0.3);
  EXPECT_NEAR(eer.threshold, 1.0, 0.02);
  EXPECT_GT(dcf.min_dcf, 0.0);
  EXPECT_LT(dcf.min_dcf, 1.0);
}

}  // namespace
}  // namespace asv::eval
