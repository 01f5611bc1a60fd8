// asvrun report's page opened in headless Chromium (Debian's chromium; tools/setup.sh installs
// it): the rendered DOM must hold the tables, values and drawn charts, and a screenshot must show
// something. Skipped when no Chromium is found ($ASV_CHROMIUM, else chromium, chromium-browser or
// google-chrome on the PATH). The page's Content-Security-Policy forbids every network load.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "asvcpp/report/report_html.h"
#include "tests/asvcpp/report/report_test_db.h"

namespace asv::report {
namespace {

namespace fs = std::filesystem;

std::string FindChromium() {
  if (const char* env = std::getenv("ASV_CHROMIUM"); env && *env) return env;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
      const fs::path candidate = fs::path(dir) / name;
      if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  return "";
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::size_t Count(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<std::size_t>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

class ReportBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = FindChromium();
    if (chromium_.empty()) GTEST_SKIP() << "no chromium found (install Debian's chromium, or set ASV_CHROMIUM)";
    dir_ = fs::temp_directory_path() / fmt::format("asv_report_browser_{}", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = testing::MakeTestDb(dir_);
    db::DatabaseOptions read_only;
    read_only.read_only = true;
    db::Database database(db_.path, read_only);
    // Where the settings come from, as asvrun finds it in the config files: run-config blocks
    // "net" and "small"; run margin's config is not known.
    ReportOptions options;
    options.provenance["voxceleb/xvector/net"]["network.epochs"] = {"net", "3"};
    options.provenance["voxceleb/xvector/small"]["network.epochs"] = {"small", "5"};
    options.provenance["voxceleb/xvector/small"]["network.lr"] = {"init_config", "0.1"};
    WriteReport(database, options, dir_ / "report.html");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Runs headless Chromium on the page with `fragment` and `mode` (--dump-dom or
  // --screenshot=FILE); returns its standard output.
  std::string Chromium(const std::string& mode, const std::string& fragment) {
    const fs::path out = dir_ / "stdout";
    const std::string command = fmt::format(
        "timeout 60 '{}' --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run "
        "--user-data-dir='{}' --window-size=1280,2400 --virtual-time-budget=5000 {} 'file://{}#{}' > '{}' 2> '{}'",
        chromium_, (dir_ / "profile").string(), mode, (dir_ / "report.html").string(), fragment, out.string(),
        (dir_ / "stderr").string());
    const int status = std::system(command.c_str());
    EXPECT_EQ(status, 0) << command << "\n" << ReadAll(dir_ / "stderr");
    return ReadAll(out);
  }

  std::string chromium_;
  fs::path dir_;
  testing::TestDb db_;
};

TEST_F(ReportBrowserTest, RenderedPageHasTablesValuesChartsAndRunningJobs) {
  const std::string dom = Chromium("--dump-dom", fmt::format("run={}&compare={},{}", db_.net, db_.net, db_.small));
  ASSERT_NE(dom.find("data-ready=\"1\""), std::string::npos) << "the page's script did not finish:\n"
                                                              << dom.substr(0, 2000);
  // Runs table: one row per run, with the compare boxes of the two selected runs ticked (the
  // page ticks them from the fragment; the DOM shows the property only through the diff below).
  const auto runs = dom.substr(dom.find("id=\"runs-table\""), dom.find("id=\"runs-more\"") - dom.find("id=\"runs-table\""));
  EXPECT_EQ(Count(runs, "<input type=\"checkbox\" class=\"compare\""), 4u);
  EXPECT_NE(dom.find("4 of 4 runs"), std::string::npos);
  EXPECT_NE(runs.find("class=\"status-failed\">failed"), std::string::npos);
  // Results grid: net and small, the best of each column marked.
  const auto grid = dom.substr(dom.find("id=\"grid-table\""), dom.find("id=\"detail-section\"") - dom.find("id=\"grid-table\""));
  EXPECT_EQ(Count(grid, "<tr><td[^>]*>voxceleb/xvector</td>"), 2u);
  EXPECT_NE(grid.find("class=\"num best\"><span title=\"run " + std::to_string(db_.net) + "\">2.500</span>"),
            std::string::npos) << grid;
  EXPECT_NE(grid.find("class=\"num best\"><span title=\"run " + std::to_string(db_.small) + "\">0.1500</span>"),
            std::string::npos);
  EXPECT_EQ(Count(grid, "class=\"num best\""), 3u);
  // Charts drawn by Chart.js: the run's loss, accuracy, learning rate, frames/s, data wait,
  // in-training EER and DET (7); the comparison's loss, accuracy, frames/s, data wait,
  // in-training EER and DET (6).
  EXPECT_EQ(Count(dom, "<canvas[^>]*data-drawn=\"[1-9][0-9]*\""), 13u);
  EXPECT_EQ(Count(dom, "<canvas"), 13u);
  EXPECT_EQ(Count(dom, "data-chart=\"DET\""), 2u);
  // The missing DET file of run small is a note, not a failure.
  EXPECT_EQ(Count(dom, "class=\"note det-note\""), 0u);  // the note belongs to run small's own view
  // Comparison: the setting that differs, with the config each value came from; only that one.
  EXPECT_NE(dom.find("<td>network.epochs</td><td>3<span class=\"note\"> (net)</span></td>"
                     "<td>5<span class=\"note\"> (small)</span></td>"),
            std::string::npos);
  EXPECT_EQ(Count(dom, "class=\"setting-diff\""), 1u);
  // DET axes fit the curves: run net's vox1_h curve reaches 0.048 %, so both DET charts (the run's
  // and the comparison's) start at the standard tick 0.02 % and end at 40 %.
  EXPECT_EQ(Count(dom, "<canvas data-chart=\"DET\" data-axis-min=\"0.02\" data-axis-max=\"40\""), 2u) << dom;
  // Running jobs: the running run in stage 5, epoch 2, progress not recorded.
  const auto running = dom.substr(dom.find("id=\"running-table\""), dom.find("id=\"runs-section\"") - dom.find("id=\"running-table\""));
  EXPECT_EQ(Count(running, "class=\"running-job\""), 1u);
  EXPECT_NE(running.find("<td>5 train</td>"), std::string::npos) << running;
  EXPECT_NE(running.find("<td class=\"num\">2</td>"), std::string::npos);
}

// The runs table is drawn in pages (500 rows; #rows=N sets the page): the first page, and links
// to the next page and to all rows.
TEST_F(ReportBrowserTest, TheRunsTableIsDrawnInPages) {
  const std::string dom = Chromium("--dump-dom", "rows=3");
  ASSERT_NE(dom.find("data-ready=\"1\""), std::string::npos);
  const auto runs = dom.substr(dom.find("id=\"runs-table\""), dom.find("id=\"grid-section\"") - dom.find("id=\"runs-table\""));
  EXPECT_EQ(Count(runs, "<input type=\"checkbox\" class=\"compare\""), 3u);
  EXPECT_NE(runs.find("4 of 4 runs (first 3 shown) <a id=\"runs-next\">show 1 more</a> <a>show all</a>"), std::string::npos)
      << runs;
}

TEST_F(ReportBrowserTest, AMissingDetFileIsANoteOnTheRunsView) {
  const std::string dom = Chromium("--dump-dom", fmt::format("run={}", db_.small));
  ASSERT_NE(dom.find("data-ready=\"1\""), std::string::npos);
  EXPECT_EQ(Count(dom, "class=\"note det-note\""), 1u);
  EXPECT_NE(dom.find("gone/det_vox1_o.tsv: cannot be read"), std::string::npos);
  EXPECT_EQ(Count(dom, "data-chart=\"DET\""), 0u);
}

TEST_F(ReportBrowserTest, ScreenshotShowsThePage) {
  const fs::path png = dir_ / "report.png";
  Chromium("--screenshot=" + png.string(), "");
  ASSERT_TRUE(fs::exists(png)) << ReadAll(dir_ / "stderr");
  const std::string bytes = ReadAll(png);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  // A blank 1280x2400 page compresses to a few kilobytes; tables, text and charts do not.
  EXPECT_GT(bytes.size(), 40000u);
}

}  // namespace
}  // namespace asv::report
