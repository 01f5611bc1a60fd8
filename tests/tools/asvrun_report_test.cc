// `asvrun report` through AsvrunMain (asv_asvrun_cli, no LibTorch): its errors, its filters and
// where the settings of each config came from, resolved from the recipe's config files.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "asvcpp/db/database.h"
#include "tests/build_paths.h"
#include "tests/tools/asvrun_in_process.h"
#include "tools/asvrun/cli.h"

namespace asv {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

using Outcome = testing::AsvrunOutcome;
using testing::Asvrun;

// The data the page carries (its JSON script element).
Json PageData(const fs::path& page) {
  std::ifstream in(page);
  std::stringstream text;
  text << in.rdbuf();
  const std::string html = text.str();
  const std::string open = "<script id=\"asv-data\" type=\"application/json\">";
  const auto begin = html.find(open);
  EXPECT_NE(begin, std::string::npos);
  const auto end = html.find("</script>", begin);
  return Json::parse(html.substr(begin + open.size(), end - begin - open.size()));
}

class AsvrunReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("asv_asvrun_report_{}", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(AsvrunReportTest, AMissingDatabaseIsExitStatus4AndWritesNothing) {
  const auto o = Asvrun({"report", "--db", (dir_ / "none.db").string(), "--out", (dir_ / "r.html").string()});
  EXPECT_EQ(o.status, 4);
  EXPECT_NE(o.err.find("none.db: no such experiment database"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(dir_ / "r.html"));
  EXPECT_FALSE(fs::exists(dir_ / "none.db"));
}

TEST_F(AsvrunReportTest, WritesThePageWithFiltersAndTheConfigEachSettingCameFrom) {
  const fs::path path = dir_ / "experiments.db";
  {
    db::Database database(path);
    db::RunInfo info;
    info.recipe = "voxceleb/xvector";
    info.config = "demo";
    info.settings_json = R"({"network.stat_size":384,"paths.system_folder":"demo_system"})";
    info.settings_hash = "a";
    database.FinishRun(database.BeginRun(info), db::RunStatus::kFinished);
    info.config = "demo_aug";
    info.parent_chain = {"demo"};
    info.settings_json = R"({"network.stat_size":384,"paths.system_folder":"demo_system_aug"})";
    info.settings_hash = "b";
    database.FinishRun(database.BeginRun(info), db::RunStatus::kFinished);
  }
  const fs::path page = dir_ / "sub" / "report.html";
  const std::string root = std::string(ASV_SOURCE_DIR) + "/run_configs";
  auto o = Asvrun({"report", "--db", path.string(), "--out", page.string(), "--config-root", root});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find(page.string()), std::string::npos);
  Json data = PageData(page);
  EXPECT_EQ(data["runs"]["rows"].size(), 2u);
  const Json& provenance = data["settings"]["provenance"];
  EXPECT_EQ(provenance["voxceleb/xvector/demo"]["network.stat_size"], Json::array({"demo", "384"}));
  EXPECT_EQ(provenance["voxceleb/xvector/demo_aug"]["network.stat_size"], Json::array({"demo", "384"}));
  EXPECT_EQ(provenance["voxceleb/xvector/demo_aug"]["paths.system_folder"],
            Json::array({"demo_aug", "\"demo_system_aug\""}));
  EXPECT_EQ(data["settings"]["deltas"]["voxceleb/xvector|a"]["paths.system_folder"], "\"demo_system\"");

  o = Asvrun({"report", "--db", path.string(), "--out", page.string(), "--config-root", root, "--config", "demo",
              "--title", "demo runs"});
  ASSERT_EQ(o.status, 0) << o.err;
  data = PageData(page);
  EXPECT_EQ(data["runs"]["rows"].size(), 1u);
  EXPECT_EQ(data["filter"]["config"], "demo");
  EXPECT_EQ(data["title"], "demo runs");
}

}  // namespace
}  // namespace asv
