// `asvrun plot det` and `asvrun plot curves` on a small experiment database, in this process
// (asv_asvrun_cli, no LibTorch), as AsvrunMain: the files written, their sizes and the errors and
// exit statuses of bad requests.
#include <cairo.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "asvcpp/db/database.h"
#include "asvcpp/eval/det.h"
#include "tests/asvcpp/db/db_test_util.h"
#include "tests/tools/asvrun_in_process.h"
#include "tools/asvrun/cli.h"

namespace asv {
namespace {

namespace fs = std::filesystem;

using Outcome = testing::AsvrunOutcome;
using testing::Asvrun;

class AsvrunPlotTest : public ::testing::Test {
 protected:
  AsvrunPlotTest() : dir_("asvrun_plot") {
    db::Database database(dir_ / "experiments.db");
    for (int r = 0; r < 2; ++r) {
      db::RunInfo info = db::testing::SampleRunInfo("voxceleb/xvector", r == 0 ? "net" : "net_big");
      info.output_folder = dir_.path().string();
      runs_.push_back(database.BeginRun(info));
      for (int e = 1; e <= 4; ++e) {
        db::EpochRecord epoch;
        epoch.epoch = e;
        epoch.loss = 5.0 / (e + r);
        database.RecordEpoch(runs_[r], epoch);
        db::ResultRecord result;
        result.trial_list = "vox1_o";
        result.epoch = e;
        result.eer = 20.0 / (e + r);
        database.RecordResult(runs_[r], result);
      }
      const fs::path det = dir_ / fmt::format("det_{}", r) / "det_vox1_o.tsv";
      fs::create_directories(det.parent_path());
      eval::WriteDetPoints(det, {{0.01, 0.3 - 0.1 * r, -1}, {0.1, 0.1, 0}, {0.3 - 0.1 * r, 0.02, 1}});
      db::ArtifactRecord artifact;
      artifact.kind = "det";
      artifact.path = det.string();
      database.RecordArtifact(runs_[r], artifact);
      database.FinishRun(runs_[r], db::RunStatus::kFinished);
    }
    db_ = (dir_ / "experiments.db").string();
  }
  std::string Id(int r) const { return std::to_string(runs_[r]); }

  db::testing::ScopedDir dir_;
  std::vector<std::int64_t> runs_;
  std::string db_;
};

TEST_F(AsvrunPlotTest, DetOfTwoRunsAsPngAndSvg) {
  const fs::path png = dir_ / "det.png";
  auto outcome = Asvrun({"plot", "det", Id(0), Id(1), "--db", db_, "--out", png.string(), "--width", "600",
                         "--height", "500"});
  ASSERT_EQ(outcome.status, 0) << outcome.err;
  cairo_surface_t* image = cairo_image_surface_create_from_png(png.c_str());
  ASSERT_EQ(cairo_surface_status(image), CAIRO_STATUS_SUCCESS);
  EXPECT_EQ(cairo_image_surface_get_width(image), 600);
  EXPECT_EQ(cairo_image_surface_get_height(image), 500);
  cairo_surface_destroy(image);

  const fs::path svg = dir_ / "det.svg";
  outcome = Asvrun({"plot", "det", Id(0), Id(1), "--list", "vox1_o", "--db", db_, "--out", svg.string(), "--title",
                    "DET"});
  ASSERT_EQ(outcome.status, 0) << outcome.err;
  std::stringstream text;
  text << std::ifstream(svg).rdbuf();
  EXPECT_NE(text.str().find("<svg"), std::string::npos);
}

TEST_F(AsvrunPlotTest, CurvesOfEveryMetricName) {
  for (const char* metric : {"loss", "eer", "accuracy", "lr", "frames_per_second"}) {
    const fs::path out = dir_ / fmt::format("{}.svg", metric);
    const auto outcome = Asvrun({"plot", "curves", Id(0), Id(1), "--metric", metric, "--db", db_, "--out",
                                 out.string()});
    EXPECT_EQ(outcome.status, 0) << metric << ": " << outcome.err;
    EXPECT_TRUE(fs::exists(out)) << metric;
  }
}

TEST_F(AsvrunPlotTest, BadRequestsFailWithTheStatusOfTheirKind) {
  const std::string out = (dir_ / "x.png").string();
  // No such run: a database error, as `asvrun diff`.
  auto outcome = Asvrun({"plot", "det", "999", "--db", db_, "--out", out});
  EXPECT_EQ(outcome.status, 4);
  EXPECT_NE(outcome.err.find("no run 999"), std::string::npos) << outcome.err;
  // A list without DET points: bad data, naming run and list.
  outcome = Asvrun({"plot", "det", Id(0), "--list", "sitw", "--db", db_, "--out", out});
  EXPECT_EQ(outcome.status, 3);
  EXPECT_NE(outcome.err.find("'sitw'"), std::string::npos) << outcome.err;
  EXPECT_NE(outcome.err.find("(run " + Id(0) + ")"), std::string::npos) << outcome.err;
  // data_wait never measured.
  outcome = Asvrun({"plot", "curves", Id(0), "--metric", "data_wait", "--db", db_, "--out", out});
  EXPECT_EQ(outcome.status, 3);
  // Command-line errors: an unknown format, metric, --list with a metric without lists.
  EXPECT_EQ(Asvrun({"plot", "det", Id(0), "--db", db_, "--out", (dir_ / "x.pdf").string()}).status, 2);
  EXPECT_EQ(Asvrun({"plot", "curves", Id(0), "--metric", "speed", "--db", db_, "--out", out}).status, 2);
  EXPECT_EQ(Asvrun({"plot", "curves", Id(0), "--metric", "loss", "--list", "vox1_o", "--db", db_, "--out", out}).status,
            2);
  EXPECT_EQ(Asvrun({"plot", "det", Id(0), "--db", db_}).status, 2);  // no --out
  EXPECT_EQ(Asvrun({"plot", "det", Id(0), "--db", db_, "--out", out, "--width", "0"}).status, 2);
  // A title and two legend entries leave less than 100 points for the plot area in 200.
  outcome = Asvrun({"plot", "det", Id(0), Id(1), "--db", db_, "--out", out, "--height", "200", "--title", "T"});
  EXPECT_EQ(outcome.status, 2);
  EXPECT_NE(outcome.err.find("make the figure larger"), std::string::npos) << outcome.err;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace asv
