// The report's data (asvcpp/report/report_data.h) and page (report_html.h) on a small database.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "asvcpp/base/checksum.h"
#include "asvcpp/report/report_data.h"
#include "asvcpp/report/report_html.h"
#include "asvcpp/report/settings_diff.h"
#include "tests/asvcpp/report/report_test_db.h"

namespace asv::report {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

class ReportDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("asv_report_test_{}_{}", getpid(),
                                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = testing::MakeTestDb(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Json Data(const ReportOptions& options = {}) {
    db::DatabaseOptions read_only;
    read_only.read_only = true;
    db::Database database(db_.path, read_only);
    return BuildReportData(database, options);
  }

  fs::path dir_;
  testing::TestDb db_;
};

// Index of `name` in the runs' columns.
std::size_t Column(const Json& data, const std::string& name) {
  const auto& columns = data["runs"]["columns"];
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == name) return i;
  }
  ADD_FAILURE() << "no column " << name;
  return 0;
}

TEST_F(ReportDataTest, RunsTableHasEveryRunNewestFirstWithStatusChainAndGpus) {
  const Json data = Data();
  const auto& rows = data["runs"]["rows"];
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0][Column(data, "id")], db_.margin);
  EXPECT_EQ(rows[0][Column(data, "status")], "failed");
  EXPECT_EQ(rows[0][Column(data, "error")], "stage 5 failed: out of memory ...");
  EXPECT_EQ(rows[1][Column(data, "status")], "running");
  EXPECT_EQ(rows[3][Column(data, "parents")], "fe");
  EXPECT_EQ(rows[3][Column(data, "gpus")], "0,1");
  EXPECT_EQ(rows[3][Column(data, "world_size")], 2);
  EXPECT_EQ(rows[3][Column(data, "code_version")], "0.1.0 (test)");
}

TEST_F(ReportDataTest, GridHasBestEerAndMinDcfPerConfigWithTheBestOfEachColumnMarked) {
  const Json grid = Data()["grid"];
  ASSERT_EQ(grid["trial_lists"], Json::array({"vox1_o"}));
  ASSERT_EQ(grid["columns"].size(), 3u);  // EER, minDCF(0.05), minDCF(0.01)
  EXPECT_EQ(grid["columns"][1]["label"], "minDCF(0.05)");
  ASSERT_EQ(grid["rows"].size(), 2u);
  EXPECT_EQ(grid["rows"][0]["config"], "net");
  // net's best EER is its final 2.5, not an in-training 3..5; small has the better minDCF(0.05).
  EXPECT_EQ(grid["rows"][0]["values"], Json::array({2.5, 0.2, 0.4}));
  EXPECT_EQ(grid["rows"][1]["values"], Json::array({3.5, 0.15, 0.5}));
  EXPECT_EQ(grid["rows"][0]["runs"][0], db_.net);
  EXPECT_EQ(grid["best"], Json::array({0, 1, 0}));
}

TEST_F(ReportDataTest, FiltersSelectRunsAndResults) {
  ReportOptions options;
  options.filter.config = "small";
  Json data = Data(options);
  ASSERT_EQ(data["runs"]["rows"].size(), 1u);
  EXPECT_EQ(data["grid"]["rows"].size(), 1u);
  EXPECT_EQ(data["filter"]["config"], "small");

  options = {};
  options.filter.stage = 5;  // the in-training results of net: best EER 3, minDCF(0.05) 0.3
  data = Data(options);
  ASSERT_EQ(data["grid"]["rows"].size(), 1u);
  EXPECT_EQ(data["grid"]["rows"][0]["values"], Json::array({3.0, 0.3}));
  EXPECT_EQ(data["runs"]["rows"].size(), 4u);  // runs are not filtered by stage

  options = {};
  options.filter.trial_list = "vox1_e";
  data = Data(options);
  EXPECT_TRUE(data["grid"]["rows"].empty());
  EXPECT_TRUE(data["det"].empty());

  options = {};
  options.filter.recipe = "voxceleb/margin";
  data = Data(options);
  ASSERT_EQ(data["runs"]["rows"].size(), 1u);
  EXPECT_TRUE(data["curves"].empty());
}

TEST_F(ReportDataTest, CurvesCarryEpochFiguresAndInTrainingEers) {
  const Json curves = Data()["curves"];
  const Json& net = curves[std::to_string(db_.net)];
  // Epochs 1, 2, 3 are sent as a range; figures never recorded (val_loss) are left out.
  EXPECT_EQ(net["epoch"], Json({{"first", 1}, {"count", 3}}));
  EXPECT_FALSE(net.contains("val_loss"));
  EXPECT_EQ(net["loss"][1], 2.0);
  EXPECT_EQ(net["accuracy"][2], 60.0);
  EXPECT_EQ(net["wait"][0], 2.0);
  EXPECT_EQ(net["eer"]["vox1_o"]["epoch"], Json({{"first", 1}, {"count", 3}}));
  EXPECT_EQ(net["eer"]["vox1_o"]["eer"], Json::array({5.0, 4.0, 3.0}));
  EXPECT_FALSE(curves.contains(std::to_string(db_.margin)));
}

TEST_F(ReportDataTest, DetCurvesAreReadThinnedAndAMissingFileIsANote) {
  ReportOptions options;
  options.det_points = 50;
  const Json det = Data(options)["det"];
  const Json& net = det[std::to_string(db_.net)][0];
  EXPECT_EQ(net["trial_list"], "vox1_o");
  EXPECT_FALSE(net.contains("note"));
  EXPECT_GE(net["x"].size(), 30u);
  EXPECT_LE(net["x"].size(), 60u);
  EXPECT_NEAR(net["eer"].get<double>(), 30.85, 0.5);
  EXPECT_NEAR(net["eer_probit"].get<double>(), -0.5, 0.02);
  // DET axes fit the curve: vox1_o stays inside 0.1-40 %, vox1_h goes down to 0.048 %, so its
  // axes start at the tick below, 0.02 %; the ticks go from 0.01 % to 40 %.
  EXPECT_NEAR(net["axis_min"].get<double>(), eval::Probit(0.001), 1e-3);
  const Json& low = det[std::to_string(db_.net)][1];
  EXPECT_EQ(low["trial_list"], "vox1_h");
  EXPECT_NEAR(low["axis_min"].get<double>(), eval::Probit(0.0002), 1e-3);
  EXPECT_NEAR(low["eer"].get<double>(), 3.59, 0.05);
  const Json axis = Data(options)["det_axis"];
  ASSERT_EQ(axis["ticks"].size(), 12u);
  EXPECT_EQ(axis["ticks"][0]["label"], "0.01");
  EXPECT_EQ(axis["ticks"][1]["label"], "0.02");
  EXPECT_EQ(axis["ticks"][11]["label"], "40");
  EXPECT_NEAR(axis["max"].get<double>(), eval::Probit(0.4), 1e-3);
  const Json& small = det[std::to_string(db_.small)][0];
  EXPECT_FALSE(small.contains("x"));
  EXPECT_NE(small["note"].get<std::string>().find("gone/det_vox1_o.tsv"), std::string::npos);
}

// A DET file that no longer has the checksum its run recorded (a later run in the same output
// folder wrote the same name) is a note, not another run's curve drawn as this run's.
TEST_F(ReportDataTest, ADetFileChangedSinceItsRunWroteItIsANote) {
  const fs::path file = dir_ / "out" / "scores" / "det_vox1_e.run7.tsv";
  eval::WriteDetPoints(file, {{0.01, 0.3, -1}, {0.1, 0.1, 0}, {0.3, 0.02, 1}});
  {
    db::Database database(db_.path);
    db::ArtifactRecord det;
    det.kind = "det";
    det.path = "scores/det_vox1_e.run7.tsv";
    det.checksum = asv::fs::FileChecksum(file);
    database.RecordArtifact(db_.small, det);
  }
  const auto entry = [&] {
    const Json data = Data();
    for (const auto& e : data["det"][std::to_string(db_.small)]) {
      if (e["trial_list"] == "vox1_e") return e;
    }
    return Json();
  };
  ASSERT_TRUE(entry().contains("x")) << entry().dump();
  EXPECT_FALSE(entry().contains("note"));
  eval::WriteDetPoints(file, {{0.02, 0.2, -1}, {0.2, 0.02, 1}});
  const Json changed = entry();
  EXPECT_FALSE(changed.contains("x")) << changed.dump();
  EXPECT_NE(changed["note"].get<std::string>().find("det_vox1_e.run7.tsv: changed since the run wrote it"),
            std::string::npos)
      << changed.dump();
}

TEST_F(ReportDataTest, ReadDetCurveKeepsTheEndsAndNamesTheLineOfABadFile) {
  const DetCurve curve = ReadDetCurve(dir_ / "out" / "scores" / "det_vox1_o.tsv", 20);
  ASSERT_FALSE(curve.probit_fa.empty());
  EXPECT_TRUE(curve.note.empty());
  EXPECT_NEAR(curve.probit_fa.front(), eval::Probit(0.5 * std::erfc((-4 + 0.5) / std::sqrt(2.0))), 1e-9);
  EXPECT_NEAR(curve.probit_miss.back(), eval::Probit(0.5 * std::erfc(-(4 - 0.5) / std::sqrt(2.0))), 1e-9);
  EXPECT_LE(curve.probit_fa.size(), 24u);
  std::ofstream(dir_ / "det_bad.tsv") << "p_miss\tp_fa\tprobit_miss\tprobit_fa\tthreshold\n0.1\t0.2\t0\t0\t0\n0.1\tx\n";
  const DetCurve bad = ReadDetCurve(dir_ / "det_bad.tsv", 20);
  EXPECT_TRUE(bad.probit_fa.empty());
  EXPECT_NE(bad.note.find("det_bad.tsv:3:"), std::string::npos) << bad.note;
  EXPECT_EQ(bad.trial_list, "bad");
}

TEST_F(ReportDataTest, RunningJobsHaveTheirCurrentStageLastEpochAndProgress) {
  Json running = Data()["running"];
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0]["run"], db_.running);
  EXPECT_EQ(running[0]["stage"], 5);
  EXPECT_EQ(running[0]["stage_name"], "train");
  EXPECT_EQ(running[0]["epoch"], 2);
  EXPECT_EQ(running[0]["gpus"], "0,1");
  EXPECT_TRUE(running[0].contains("progress"));
  EXPECT_TRUE(running[0]["progress"].is_null());  // no progress row yet

  // The lowest rank's row of the progress table.
  {
    db::Database database(db_.path);
    db::ProgressRecord rank1;
    rank1.stage = "5 train";
    rank1.what = "epoch 3/20";
    rank1.done = 7;
    rank1.total = 100;
    rank1.unit = "batches";
    database.UpdateProgress(db_.running, 1, rank1);
    db::ProgressRecord rank0 = rank1;
    rank0.done = 40;
    rank0.rate = 2.5;
    rank0.eta_seconds = 24;
    database.UpdateProgress(db_.running, 0, rank0);
  }
  running = Data()["running"];
  ASSERT_EQ(running.size(), 1u);
  const Json& progress = running[0]["progress"];
  ASSERT_FALSE(progress.is_null());
  EXPECT_EQ(progress["done"], 40);
  EXPECT_EQ(progress["total"], 100);
  EXPECT_EQ(progress["unit"], "batches");
  EXPECT_EQ(progress["what"], "epoch 3/20");
  EXPECT_EQ(progress["rate"], 2.5);
  EXPECT_EQ(progress["eta_s"], 24);
}

TEST_F(ReportDataTest, SettingsAreABaselinePerRecipeAndDeltasWithProvenance) {
  ReportOptions options;
  options.resolve_provenance = [](const std::vector<std::pair<std::string, std::string>>& configs) {
    EXPECT_EQ(configs.size(), 3u);  // (margin, demo), (xvector, net), (xvector, small)
    ProvenanceMap map;
    map["voxceleb/xvector/net"]["network.epochs"] = {"net", "3"};
    return map;
  };
  const Json settings = Data(options)["settings"];
  EXPECT_EQ(settings["baselines"]["voxceleb/xvector"]["network.epochs"], "3");  // the newest xvector run: net
  EXPECT_EQ(settings["deltas"]["voxceleb/xvector|h-small"], Json({{"network.epochs", "5"}}));
  EXPECT_TRUE(settings["deltas"]["voxceleb/xvector|h-net"].empty());
  EXPECT_EQ(settings["provenance"]["voxceleb/xvector/net"]["network.epochs"], Json::array({"net", "3"}));
  EXPECT_FALSE(settings["provenance"].contains("voxceleb/xvector/small"));
}

TEST_F(ReportDataTest, DiffRunSettingsNamesWhereEachValueCameFrom) {
  db::DatabaseOptions read_only;
  read_only.read_only = true;
  db::Database database(db_.path, read_only);
  const auto net = *database.GetRun(db_.net);
  const auto small = *database.GetRun(db_.small);
  ProvenanceMap provenance;
  provenance["voxceleb/xvector/net"]["network.epochs"] = {"net", "3"};
  provenance["voxceleb/xvector/small"]["network.epochs"] = {"small", "4"};  // edited since the run
  const auto diffs = DiffRunSettings(net, small, provenance);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].key, "network.epochs");
  EXPECT_EQ(diffs[0].a, "3");
  EXPECT_EQ(diffs[0].b, "5");
  EXPECT_EQ(diffs[0].from_a, "net");
  EXPECT_EQ(diffs[0].from_b, "changed since the run (--set or an edited config)");
  EXPECT_EQ(SourceOf(provenance, net, "network.lr", std::string("0.1")), "default");
  EXPECT_EQ(SourceOf({}, net, "network.lr", std::string("0.1")), "unknown (config files not read)");
}

TEST_F(ReportDataTest, PageIsSelfContainedAndItsDataCannotEndTheScript) {
  db::Database database(db_.path);
  db::RunInfo info = testing::Info("voxceleb/xvector", "</script><b>x", "{}", "h", dir_);
  database.FinishRun(database.BeginRun(info), db::RunStatus::kFinished);
  const fs::path out = dir_ / "pages" / "report.html";
  const std::size_t bytes = WriteReport(database, {}, out);
  std::ifstream in(out);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(page.size(), bytes);
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(page.find("Chart.js v3"), std::string::npos);  // inlined, not linked
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("</script><b>x"), std::string::npos);
  EXPECT_NE(page.find("\\u003c/script>\\u003cb>x"), std::string::npos);
  EXPECT_EQ(page.find("@ASV_"), std::string::npos);
  for (const auto& entry : fs::directory_iterator(out.parent_path())) {
    EXPECT_EQ(entry.path().filename(), "report.html");  // no temporary file left
  }
}

}  // namespace
}  // namespace asv::report
