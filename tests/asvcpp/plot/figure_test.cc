// The figure descriptions of asvcpp/plot/figure.h checked by their data: DET axes, EER point,
// series and training-curve axes.
#include "asvcpp/plot/figure.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "asvcpp/eval/det.h"

namespace asv::plot {
namespace {

// A DET curve of two Gaussian score distributions with d' = 2 * z: p_miss = Phi(t - z),
// p_fa = Phi(-t - z) for thresholds t; it crosses the diagonal at t = 0, EER Phi(-z).
std::vector<eval::DetPoint> GaussianDet(double z, int n) {
  std::vector<eval::DetPoint> points;
  for (int i = 0; i < n; ++i) {
    const double t = -4 + 8.0 * i / (n - 1);
    const auto phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
    points.push_back({phi(t - z), phi(-t - z), t});
  }
  return points;
}

TEST(DetFigureTest, ProbitAxesWithTicksInPercentAtTheStandardProbabilities) {
  const Figure figure = DetFigure({{"a", GaussianDet(1.5, 51)}});
  const std::vector<double> expected = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4};
  const std::vector<std::string> labels = {"0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "40"};
  for (const Axis* axis : {&figure.x, &figure.y}) {
    EXPECT_EQ(axis->scale, Scale::kProbit);
    EXPECT_DOUBLE_EQ(axis->min, 0.001);
    EXPECT_DOUBLE_EQ(axis->max, 0.4);
    ASSERT_EQ(axis->ticks.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_DOUBLE_EQ(axis->ticks[i].value, expected[i]);
      EXPECT_EQ(axis->ticks[i].label, labels[i]);
      EXPECT_DOUBLE_EQ(axis->Transform(axis->ticks[i].value), eval::Probit(expected[i]));
      // Positions along the axis are linear in the probit: 1 % lies at
      // (Probit(0.01) - Probit(0.001)) / (Probit(0.4) - Probit(0.001)).
      EXPECT_NEAR(axis->Fraction(expected[i]),
                  (eval::Probit(expected[i]) - eval::Probit(0.001)) / (eval::Probit(0.4) - eval::Probit(0.001)),
                  1e-12);
    }
    EXPECT_DOUBLE_EQ(axis->Fraction(0.001), 0);
    EXPECT_DOUBLE_EQ(axis->Fraction(0.4), 1);
  }
  EXPECT_EQ(figure.x.title, "False alarm probability (%)");
  EXPECT_EQ(figure.y.title, "Miss probability (%)");
  EXPECT_TRUE(figure.equal_aspect);
  EXPECT_TRUE(figure.diagonal);
}

TEST(DetFigureTest, AxesReachDownToTheStandardTickBelowTheLowestRateOfACurve) {
  // d' = 3.6: inside the 40 % square the curve reaches p_fa = Phi(-3.3) = 0.048 % (t = 1.5), so
  // both axes start at the tick below it, 0.02 %, for this curve and any plot it is part of.
  const auto low = GaussianDet(1.8, 81);
  EXPECT_DOUBLE_EQ(eval::DetAxisMin(low), 0.0002);
  EXPECT_DOUBLE_EQ(eval::DetAxisMin(GaussianDet(1.5, 51)), 0.001);
  const Figure figure = DetFigure({{"within", GaussianDet(1.5, 51)}, {"low", low}});
  const std::vector<std::string> labels = {"0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "40"};
  for (const Axis* axis : {&figure.x, &figure.y}) {
    EXPECT_DOUBLE_EQ(axis->min, 0.0002);
    EXPECT_DOUBLE_EQ(axis->max, 0.4);
    std::vector<std::string> got;
    for (const auto& tick : axis->ticks) got.push_back(tick.label);
    EXPECT_EQ(got, labels);
    EXPECT_DOUBLE_EQ(axis->Fraction(0.0002), 0);
  }
  // Further down than the smallest tick: the axes stop at 0.01 %; a point with a rate above 40 %
  // or of 0 does not move them; nothing: 0.1 %.
  EXPECT_DOUBLE_EQ(eval::DetAxisMin({{0.3, 0.00001, 0}}), 0.0001);
  EXPECT_DOUBLE_EQ(eval::DetAxisMin({{0.5, 0.00001, 0}, {0.3, 0, 0}, {0.02, 0.02, 0}}), 0.001);
  EXPECT_DOUBLE_EQ(eval::DetAxisMin({}), 0.001);
  EXPECT_DOUBLE_EQ(DetFigure({}).x.min, 0.001);
}

TEST(DetFigureTest, SeriesArePfaAgainstPmissInOrderWithoutRatesOfZeroOrOne) {
  std::vector<eval::DetPoint> points = {{0, 1, -9}, {0.01, 0.3, -1}, {0.1, 0.1, 0}, {0.3, 0.02, 1}, {1, 0, 9}};
  const Figure figure = DetFigure({{"first", points}, {"second", GaussianDet(1, 11)}}, "title");
  EXPECT_EQ(figure.title, "title");
  ASSERT_EQ(figure.series.size(), 2u);
  ASSERT_EQ(figure.series[0].points.size(), 3u);
  EXPECT_DOUBLE_EQ(figure.series[0].points[0].x, 0.3);   // p_fa
  EXPECT_DOUBLE_EQ(figure.series[0].points[0].y, 0.01);  // p_miss
  EXPECT_DOUBLE_EQ(figure.series[0].points[2].x, 0.02);
  EXPECT_DOUBLE_EQ(figure.series[0].points[2].y, 0.3);
  EXPECT_EQ(figure.series[0].name, "first EER 10.00 %");
  EXPECT_EQ(figure.series[1].name.rfind("second EER ", 0), 0u);
}

TEST(DetFigureTest, EerMarkerWhereTheCurveCrossesTheDiagonal) {
  for (double z : {0.5, 1.0, 2.0}) {
    // Thresholds at odd multiples of a step: no point on the diagonal itself, the crossing is
    // interpolated; the curve is a straight line on probit axes, so the interpolation is exact.
    const auto points = GaussianDet(z, 40);
    const double eer = 0.5 * std::erfc(z / std::sqrt(2.0));
    const auto found = DetEer(points);
    ASSERT_TRUE(found.has_value());
    EXPECT_NEAR(*found, eer, 1e-9) << "z " << z;
    const Figure figure = DetFigure({{"run", points}});
    ASSERT_EQ(figure.markers.size(), 1u);
    EXPECT_EQ(figure.markers[0].series, 0u);
    EXPECT_NEAR(figure.markers[0].at.x, eer, 1e-9);
    EXPECT_NEAR(figure.markers[0].at.y, eer, 1e-9);
    EXPECT_EQ(figure.markers[0].label, "EER");
  }
}

TEST(DetFigureTest, NoMarkerForACurveThatNeverCrossesTheDiagonal) {
  const std::vector<eval::DetPoint> above = {{0.2, 0.01, 0}, {0.3, 0.005, 1}};
  EXPECT_FALSE(DetEer(above).has_value());
  EXPECT_FALSE(DetEer({}).has_value());
  const Figure figure = DetFigure({{"x", above}});
  EXPECT_TRUE(figure.markers.empty());
  EXPECT_EQ(figure.series[0].name, "x");
}

TEST(NiceTicksTest, StepsOfOneTwoOrFiveCoveringTheRange) {
  EXPECT_EQ(NiceTicks(0, 10, 6), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(NiceTicks(0.13, 0.87, 6), (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}));
  const auto t = NiceTicks(2.31, 23.9, 6);
  EXPECT_LE(t.front(), 2.31);
  EXPECT_GE(t.back(), 23.9);
  EXPECT_DOUBLE_EQ(t[1] - t[0], 5);
  const auto single = NiceTicks(3, 3);
  EXPECT_LT(single.front(), 3);
  EXPECT_GT(single.back(), 3);
  EXPECT_THROW(NiceTicks(2, 1), std::invalid_argument);
  EXPECT_THROW(NiceTicks(0, NAN), std::invalid_argument);
}

TEST(NiceTicksTest, LabelsWithTheDecimalsTheStepNeeds) {
  EXPECT_EQ(TickLabel(10, 5), "10");
  EXPECT_EQ(TickLabel(0.6000000000000001, 0.2), "0.6");
  EXPECT_EQ(TickLabel(0.05, 0.05), "0.05");
  EXPECT_EQ(TickLabel(2000000, 1000000), "2e+06");
}

TEST(CurvesFigureTest, EpochOnXMetricOnYWithNiceTicksOverEverySeries) {
  const std::vector<Series> series = {{"a", {{1, 3.5}, {2, 2.0}, {3, 1.2}}}, {"b", {{1, 4.2}, {5, 0.7}}}};
  const Figure figure = CurvesFigure(series, "loss", "t");
  EXPECT_EQ(figure.x.title, "epoch");
  EXPECT_EQ(figure.y.title, "loss");
  EXPECT_EQ(figure.x.scale, Scale::kLinear);
  EXPECT_EQ(figure.y.scale, Scale::kLinear);
  EXPECT_LE(figure.x.min, 1);
  EXPECT_GE(figure.x.max, 5);
  EXPECT_LE(figure.y.min, 0.7);
  EXPECT_GE(figure.y.max, 4.2);
  EXPECT_FALSE(figure.equal_aspect);
  EXPECT_FALSE(figure.diagonal);
  EXPECT_TRUE(figure.point_dots);
  EXPECT_FALSE(DetFigure({}).point_dots);
  // Whole epochs on x.
  for (const auto& tick : figure.x.ticks) EXPECT_EQ(tick.value, std::round(tick.value));
  EXPECT_EQ(figure.x.ticks.front().value, figure.x.min);
  EXPECT_EQ(figure.x.ticks.back().value, figure.x.max);
  ASSERT_EQ(figure.series.size(), 2u);
  EXPECT_EQ(figure.series[0].name, "a");
  EXPECT_EQ(figure.series[1].points.size(), 2u);
  EXPECT_DOUBLE_EQ(figure.y.Fraction(figure.y.min), 0);
  EXPECT_THROW(CurvesFigure({{"empty", {}}}, "loss"), std::invalid_argument);
}

}  // namespace
}  // namespace asv::plot
