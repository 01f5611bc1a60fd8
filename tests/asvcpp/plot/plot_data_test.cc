// The data of asvrun's plots from a small experiment database (asvcpp/plot/plot_data.h).
#include "asvcpp/plot/plot_data.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>

#include "asvcpp/base/checksum.h"
#include "asvcpp/base/error.h"
#include "tests/asvcpp/db/db_test_util.h"

namespace asv::plot {
namespace {

namespace fs = std::filesystem;

std::string MessageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no DataError)";
}

class PlotDataTest : public ::testing::Test {
 protected:
  PlotDataTest() : dir_("plot_data"), database_(dir_ / "experiments.db") {
    db::RunInfo info = db::testing::SampleRunInfo("voxceleb/xvector", "net");
    info.output_folder = dir_.path().string();
    run_ = database_.BeginRun(info);
    // Epochs 1..3; the loss of epoch 2 diverged (NaN), data wait measured in epochs 2 and 3.
    for (int e = 1; e <= 3; ++e) {
      db::EpochRecord r;
      r.epoch = e;
      r.loss = e == 2 ? NAN : 4.0 / e;
      r.accuracy = 10.0 * e;
      r.learning_rate = 0.1 / e;
      r.frames_per_second = 1000.0 + e;
      if (e > 1) r.data_wait_percent = 5.0 * e;
      database_.RecordEpoch(run_, r);
    }
    // In-training EERs on two lists (epoch 3 of vox1_o twice: the first recorded counts), and a
    // final result without an epoch.
    Result("vox1_o", 2, 9.5);
    Result("vox1_o", 3, 7.25);
    Result("vox1_o", 3, 7.0);
    Result("vox1_h", 3, 12.0);
    Result("vox1_o", std::nullopt, 6.5);
    // DET points of vox1_o (path relative to the output folder); only scores for vox1_h.
    fs::create_directories(dir_ / "scores");
    eval::WriteDetPoints(dir_ / "scores" / "det_vox1_o.tsv", {{0.01, 0.3, -1}, {0.1, 0.1, 0}, {0.3, 0.02, 1}});
    Artifact("scores/det_vox1_o.tsv", "det", asv::fs::FileChecksum(dir_ / "scores" / "det_vox1_o.tsv"));
    Artifact((dir_ / "scores" / "scores_vox1_o.txt").string(), "scores");
    Artifact((dir_ / "scores" / "scores_vox1_h.txt").string(), "scores");
    row_ = *database_.GetRun(run_);
  }
  void Result(const std::string& list, std::optional<int> epoch, double eer) {
    db::ResultRecord r;
    r.trial_list = list;
    r.epoch = epoch;
    r.eer = eer;
    database_.RecordResult(run_, r);
  }
  void Artifact(const std::string& path, const std::string& kind, const std::string& checksum = "") {
    db::ArtifactRecord a;
    a.path = path;
    a.kind = kind;
    a.checksum = checksum;
    database_.RecordArtifact(run_, a);
  }

  db::testing::ScopedDir dir_;
  db::Database database_;
  std::int64_t run_ = 0;
  db::RunRow row_;
};

TEST_F(PlotDataTest, DetCurveOfAListReadFromItsDetArtifact) {
  const auto curves = RunDetCurves(database_, row_, "vox1_o");
  ASSERT_EQ(curves.size(), 1u);
  EXPECT_EQ(curves[0].name, fmt::format("net (run {}) vox1_o", run_));
  ASSERT_EQ(curves[0].points.size(), 3u);
  EXPECT_DOUBLE_EQ(curves[0].points[1].p_miss, 0.1);
  EXPECT_DOUBLE_EQ(curves[0].points[2].p_fa, 0.02);
  EXPECT_DOUBLE_EQ(curves[0].points[2].threshold, 1);
}

TEST_F(PlotDataTest, AListWithScoresButNoDetFileIsAnErrorNamingRunListAndScoreFile) {
  const std::string message = MessageOf([&] { RunDetCurves(database_, row_, "vox1_h"); });
  EXPECT_NE(message.find(fmt::format("net (run {})", run_)), std::string::npos) << message;
  EXPECT_NE(message.find("'vox1_h'"), std::string::npos) << message;
  EXPECT_NE(message.find("scores_vox1_h.txt"), std::string::npos) << message;
  EXPECT_NE(message.find("asvrun eval --scores"), std::string::npos) << message;
  // Without --list every scored list is wanted: vox1_h again.
  EXPECT_NE(MessageOf([&] { RunDetCurves(database_, row_); }).find("'vox1_h'"), std::string::npos);
  // A list the run never scored.
  EXPECT_NE(MessageOf([&] { RunDetCurves(database_, row_, "sitw"); }).find("'sitw'"), std::string::npos);
}

TEST_F(PlotDataTest, ADetFileOverwrittenByALaterRunIsAnError) {
  ASSERT_EQ(RunDetCurves(database_, row_, "vox1_o").size(), 1u);  // the recorded checksum matches
  eval::WriteDetPoints(dir_ / "scores" / "det_vox1_o.tsv", {{0.02, 0.2, -1}, {0.2, 0.02, 1}});
  const std::string message = MessageOf([&] { RunDetCurves(database_, row_, "vox1_o"); });
  EXPECT_NE(message.find(fmt::format("net (run {})", run_)), std::string::npos) << message;
  EXPECT_NE(message.find("det_vox1_o.tsv of trial list 'vox1_o' has changed since the run wrote it"),
            std::string::npos)
      << message;
}

TEST_F(PlotDataTest, ARunWithNothingScoredIsAnError) {
  const auto other = database_.BeginRun(db::testing::SampleRunInfo("voxceleb/xvector", "fresh"));
  const std::string message = MessageOf([&] { RunDetCurves(database_, *database_.GetRun(other)); });
  EXPECT_NE(message.find(fmt::format("fresh (run {})", other)), std::string::npos) << message;
  EXPECT_NE(message.find("no DET points and no score files"), std::string::npos) << message;
}

TEST_F(PlotDataTest, MalformedDetFilesNameTheLine) {
  std::ofstream(dir_ / "bad.tsv") << "p_miss\tp_fa\tprobit_miss\tprobit_fa\tthreshold\n0.1\t0.2\t0\t0\t1\nx\n";
  using eval::ReadDetPoints;
  EXPECT_NE(MessageOf([&] { ReadDetPoints(dir_ / "bad.tsv"); }).find("bad.tsv:3:"), std::string::npos);
  std::ofstream(dir_ / "rate.tsv") << "p_miss\tp_fa\tprobit_miss\tprobit_fa\tthreshold\n1.5\t0.2\t0\t0\t1\n";
  EXPECT_NE(MessageOf([&] { ReadDetPoints(dir_ / "rate.tsv"); }).find("rate.tsv:2:"), std::string::npos);
  std::ofstream(dir_ / "header.tsv") << "a\tb\n";
  EXPECT_NE(MessageOf([&] { ReadDetPoints(dir_ / "header.tsv"); }).find("header.tsv:1:"), std::string::npos);
  EXPECT_NE(MessageOf([&] { ReadDetPoints(dir_ / "missing.tsv"); }).find("missing.tsv"), std::string::npos);
  // Infinite thresholds (as WriteDetPoints writes them) are read.
  eval::WriteDetPoints(dir_ / "inf.tsv", {{0.01, 0.5, -INFINITY}, {0.5, 0.01, INFINITY}});
  const auto points = ReadDetPoints(dir_ / "inf.tsv");
  ASSERT_EQ(points.size(), 2u);
  EXPECT_TRUE(std::isinf(points[0].threshold));
}

TEST_F(PlotDataTest, EpochMetricsInEpochOrderWithoutMissingValues) {
  const auto loss = MetricSeries(database_, row_, Metric::kLoss);
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_EQ(loss[0].name, fmt::format("net (run {})", run_));
  ASSERT_EQ(loss[0].points.size(), 2u);  // the NaN of epoch 2 left out
  EXPECT_DOUBLE_EQ(loss[0].points[0].x, 1);
  EXPECT_DOUBLE_EQ(loss[0].points[0].y, 4.0);
  EXPECT_DOUBLE_EQ(loss[0].points[1].x, 3);
  EXPECT_DOUBLE_EQ(loss[0].points[1].y, 4.0 / 3);
  const auto wait = MetricSeries(database_, row_, Metric::kDataWait)[0].points;
  ASSERT_EQ(wait.size(), 2u);
  EXPECT_DOUBLE_EQ(wait[0].x, 2);
  EXPECT_DOUBLE_EQ(wait[0].y, 10);
  EXPECT_DOUBLE_EQ(MetricSeries(database_, row_, Metric::kLearningRate)[0].points[1].y, 0.05);
  EXPECT_DOUBLE_EQ(MetricSeries(database_, row_, Metric::kAccuracy)[0].points[2].y, 30);
  EXPECT_DOUBLE_EQ(MetricSeries(database_, row_, Metric::kFramesPerSecond)[0].points[0].y, 1001);
}

TEST_F(PlotDataTest, InTrainingEerPerListFromResultsWithAnEpoch) {
  const auto eer = MetricSeries(database_, row_, Metric::kEer);
  ASSERT_EQ(eer.size(), 2u);
  EXPECT_EQ(eer[0].name, fmt::format("net (run {}) vox1_o", run_));
  ASSERT_EQ(eer[0].points.size(), 2u);  // epochs 2 and 3; the final result has no epoch
  EXPECT_DOUBLE_EQ(eer[0].points[0].y, 9.5);
  EXPECT_DOUBLE_EQ(eer[0].points[1].y, 7.25);  // the first recorded of epoch 3
  EXPECT_EQ(eer[1].name, fmt::format("net (run {}) vox1_h", run_));
  const auto one = MetricSeries(database_, row_, Metric::kEer, "vox1_h");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_DOUBLE_EQ(one[0].points[0].y, 12);
  EXPECT_NE(MessageOf([&] { MetricSeries(database_, row_, Metric::kEer, "sitw"); }).find("'sitw'"),
            std::string::npos);
}

TEST_F(PlotDataTest, ARunWithoutEpochsHasNoCurveAndSaysSo) {
  const auto other = database_.BeginRun(db::testing::SampleRunInfo("voxceleb/xvector", "fresh"));
  const std::string message = MessageOf([&] { MetricSeries(database_, *database_.GetRun(other), Metric::kLoss); });
  EXPECT_NE(message.find(fmt::format("fresh (run {}): no loss values", other)), std::string::npos) << message;
}

TEST(MetricTest, NamesAndAliasesAsTheEpochsColumns) {
  EXPECT_EQ(ParseMetric("loss"), Metric::kLoss);
  EXPECT_EQ(ParseMetric("accuracy_percent"), Metric::kAccuracy);
  EXPECT_EQ(ParseMetric("lr"), Metric::kLearningRate);
  EXPECT_EQ(ParseMetric("learning_rate"), Metric::kLearningRate);
  EXPECT_EQ(ParseMetric("data_wait_percent"), Metric::kDataWait);
  EXPECT_EQ(ParseMetric("eer"), Metric::kEer);
  EXPECT_THROW(ParseMetric("speed"), ConfigError);
  EXPECT_EQ(MetricTitle(Metric::kEer), "EER (%)");
}

}  // namespace
}  // namespace asv::plot
