#include "asvcpp/eval/det.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"

namespace asv::eval {
namespace {

double Phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

TEST(DetTest, ProbitIsTheInverseOfTheNormalCdf) {
  EXPECT_EQ(Probit(0.5), 0.0);
  EXPECT_NEAR(Probit(0.975), 1.959963984540054, 1e-14);
  EXPECT_NEAR(Probit(0.001), -3.090232306167813, 1e-13);
  EXPECT_NEAR(Probit(0.8413447460685429), 1.0, 1e-13);
  for (double p : {1e-300, 1e-100, 1e-20, 1e-9, 3e-5, 0.01, 0.02425, 0.1, 0.3, 0.49999}) {
    SCOPED_TRACE(p);
    // One ulp of z moves Phi(z) by about z^2 ulps relative in the far tail.
    const double z = Probit(p);
    EXPECT_NEAR(Phi(z) / p, 1.0, 1e-14 * std::max(1.0, z * z));
    EXPECT_EQ(Probit(1.0 - p), -Probit(1.0 - (1.0 - p)));
  }
  EXPECT_EQ(Probit(0.0), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(Probit(1.0), std::numeric_limits<double>::infinity());
  EXPECT_LT(Probit(4.9e-324), -38.0);
  EXPECT_THROW(Probit(-0.1), std::invalid_argument);
  EXPECT_THROW(Probit(std::nan("")), std::invalid_argument);
}

TEST(DetTest, SmallCurvesKeepEveryPointInsideTheAxes) {
  // 3 targets, 3 non-targets, no ties: 7 DET points, of which those with both rates in (0, 1).
  const SortedScores scores({1.0, 3.0, 5.0}, {0.0, 2.0, 4.0});
  const DetCurve curve = scores.Curve();
  std::vector<DetPoint> expected;
  for (std::size_t k = 0; k < curve.frr.size(); ++k) {
    if (curve.frr[k] > 0 && curve.frr[k] < 1 && curve.far[k] > 0 && curve.far[k] < 1) {
      expected.push_back({curve.frr[k], curve.far[k], curve.thresholds[k]});
    }
  }
  const std::vector<DetPoint> points = DetPoints(scores, 1000);
  ASSERT_EQ(points.size(), expected.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(points[i].p_miss, expected[i].p_miss);
    EXPECT_EQ(points[i].p_fa, expected[i].p_fa);
    EXPECT_EQ(points[i].threshold, expected[i].threshold);
  }
  EXPECT_TRUE(DetPoints(SortedScores({5.0}, {0.0}), 10).empty());  // separated: nothing inside
  EXPECT_THROW(DetPoints(scores, 1), std::invalid_argument);
}

TEST(DetTest, LargeCurvesAreThinnedKeepingShapeEndsAndTheEerPoint) {
  std::uint64_t state = 99;
  auto uniform = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (static_cast<double>(state >> 11) + 0.5) * 0x1.0p-53;
  };
  std::vector<double> tar, non;
  for (int i = 0; i < 20000; ++i) tar.push_back(2.0 + Probit(uniform()));
  for (int i = 0; i < 200000; ++i) non.push_back(Probit(uniform()));
  const SortedScores scores(tar, non);
  const std::vector<DetPoint> points = DetPoints(scores, 500);
  EXPECT_GE(points.size(), 250u);
  EXPECT_LE(points.size(), 503u);
  for (std::size_t i = 1; i < points.size(); ++i) {
    EXPECT_GE(points[i].p_miss, points[i - 1].p_miss);
    EXPECT_LE(points[i].p_fa, points[i - 1].p_fa);
    EXPECT_GT(points[i].threshold, points[i - 1].threshold);
  }
  const DetCurve curve = scores.Curve();
  const auto eer = scores.Eer();
  bool has_eer = false;
  for (const DetPoint& p : points) has_eer |= p.p_miss == curve.frr[eer.index] && p.p_fa == curve.far[eer.index];
  EXPECT_TRUE(has_eer);
  EXPECT_EQ(points.front().p_miss, 1.0 / 20000);  // the first point off the axes
  EXPECT_EQ(points.back().p_fa, 1.0 / 200000);    // the last one
  // Equal-variance Gaussians 2 apart: a straight DET line probit_miss = -2 - probit_fa (the
  // empirical curve stays within sampling noise of it in the middle).
  for (const DetPoint& p : points) {
    if (p.p_miss > 0.01 && p.p_fa > 0.01) {
      EXPECT_NEAR(Probit(p.p_miss), -2.0 - Probit(p.p_fa), 0.1);
    }
  }
}

// One DET file per run and trial list; the list is read back from either form of the name.
TEST(DetTest, DetFileNamesNameTheRunAndGiveBackTheTrialList) {
  EXPECT_EQ(DetFileName("veri_test", 12), "det_veri_test.run12.tsv");
  EXPECT_EQ(DetFileName("veri_test", 0), "det_veri_test.tsv");
  EXPECT_EQ(TrialListOfDetFile("out/scores/det_veri_test.run12.tsv"), std::optional<std::string>("veri_test"));
  EXPECT_EQ(TrialListOfDetFile("det_list_test_hard2.tsv"), std::optional<std::string>("list_test_hard2"));
  EXPECT_EQ(TrialListOfDetFile("det_a.b.tsv"), std::optional<std::string>("a.b"));
  EXPECT_EQ(TrialListOfDetFile("det_a.run.tsv"), std::optional<std::string>("a.run"));
  EXPECT_EQ(TrialListOfDetFile("det_a.run1x.tsv"), std::optional<std::string>("a.run1x"));
  EXPECT_EQ(TrialListOfDetFile("det_.tsv"), std::nullopt);
  EXPECT_EQ(TrialListOfDetFile("scores_veri_test.txt"), std::nullopt);
  EXPECT_EQ(TrialListOfDetFile("det_veri_test.txt"), std::nullopt);
}

TEST(DetTest, WrittenPointsHaveAHeaderAndProbitColumns) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("asv_det_test_" + std::to_string(::getpid()) + ".tsv");
  WriteDetPoints(path, {{0.25, 0.5, 1.5}, {0.5, 0.1, 2.0}});
  std::istringstream in(fs::ReadFile(path));
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header, "p_miss\tp_fa\tprobit_miss\tprobit_fa\tthreshold");
  std::getline(in, line);
  double miss, fa, pm, pf, thr;
  std::istringstream(line) >> miss >> fa >> pm >> pf >> thr;
  EXPECT_EQ(miss, 0.25);
  EXPECT_EQ(fa, 0.5);
  EXPECT_NEAR(pm, -0.6744897501960817, 1e-14);
  EXPECT_EQ(pf, 0.0);
  EXPECT_EQ(thr, 1.5);
  std::getline(in, line);
  EXPECT_FALSE(line.empty());
  EXPECT_FALSE(std::getline(in, line));
  std::filesystem::remove(path);
}

// ReadDetPoints reads back what WriteDetPoints wrote, exactly (17 significant digits), infinite
// thresholds included, and names the line of a malformed file.
TEST(DetTest, ReadDetPointsReadsBackWhatWasWritten) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("asv_det_read_test_" + std::to_string(::getpid()) + ".tsv");
  const std::vector<DetPoint> written = {
      {0.0, 1.0, -std::numeric_limits<double>::infinity()}, {1.0 / 3, 0.1, 0.123456789}, {1.0, 0.0, 7.5}};
  WriteDetPoints(path, written);
  const auto read = ReadDetPoints(path);
  ASSERT_EQ(read.size(), written.size());
  for (std::size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(read[i].p_miss, written[i].p_miss) << i;
    EXPECT_EQ(read[i].p_fa, written[i].p_fa) << i;
    EXPECT_EQ(read[i].threshold, written[i].threshold) << i;
  }
  fs::WriteFileAtomic(path, "p_miss\tp_fa\tprobit_miss\tprobit_fa\tthreshold\n0.1\t0.2\t0\t0\t0\n0.1\tx\n");
  try {
    ReadDetPoints(path);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(":3:"), std::string::npos) << e.what();
  }
  // Every field is read whole: trailing characters are an error too (a carriage return is not).
  fs::WriteFileAtomic(path, "p_miss\tp_fa\tprobit_miss\tprobit_fa\tthreshold\n0.1\t0.2\t0\t0\t0\r\n0.1\t0.2x\t0\t0\t0\n");
  try {
    ReadDetPoints(path);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(":3: expected 5 tab-separated numbers, got \"0.1\t0.2x"), std::string::npos)
        << e.what();
  }
  fs::WriteFileAtomic(path, "p_miss\tp_fa\tprobit_miss\tprobit_fa\tthreshold\n0.1\t0.2\t0\t0\t0\r\n0.1\t0.2\t0\t0\t0\t1\n");
  EXPECT_THROW(ReadDetPoints(path), DataError);  // six fields
  std::filesystem::remove(path);
  EXPECT_THROW(ReadDetPoints(path), DataError);
}

}  // namespace
}  // namespace asv::eval
