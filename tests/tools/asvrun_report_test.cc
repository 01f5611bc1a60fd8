// `asvrun report` through AsvrunMain (asv_asvrun_cli, no LibTorch): its errors, its filters and
// where the settings of each config came from, resolved from the recipe's config files.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "asvcpp/base/fs.h"
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

// A database of one finished run, at `path`.
void OneRunDatabase(const fs::path& path) {
  db::Database database(path);
  db::RunInfo info;
  info.recipe = "voxceleb/xvector";
  info.config = "demo";
  info.settings_hash = "a";
  database.FinishRun(database.BeginRun(info), db::RunStatus::kFinished);
}

std::size_t RunsIn(const fs::path& path) {
  db::DatabaseOptions options;
  options.read_only = true;
  db::Database database(path, options);
  return database.ListRuns({}).size();
}

TEST_F(AsvrunReportTest, NoCommandWritesOverItsOwnInputs) {
  const fs::path path = dir_ / "experiments.db";
  OneRunDatabase(path);
  fs::create_directories(dir_ / "sub");
  fs::create_symlink(path, dir_ / "page.html");
  fs::create_hard_link(path, dir_ / "hard.html");
  for (const fs::path& out : {path, dir_ / "sub" / ".." / "experiments.db", dir_ / "page.html", dir_ / "hard.html"}) {
    const auto o = Asvrun({"report", "--db", path.string(), "--out", out.string()});
    EXPECT_EQ(o.status, 2) << out;
    EXPECT_NE(o.err.find(fmt::format("--out {} is the same file as --db {}", out.string(), path.string())),
              std::string::npos)
        << o.err;
  }
  EXPECT_EQ(RunsIn(path), 1u);
  EXPECT_TRUE(fs::is_symlink(dir_ / "page.html"));

  // eval: the DET file onto the scores or the trials.
  asv::fs::WriteFileAtomic(dir_ / "trials", std::string("a b target\na c nontarget\n"));
  asv::fs::WriteFileAtomic(dir_ / "scores", std::string("2\n1\n"));
  for (const auto& [det, input] : {std::pair{"scores", "--scores"}, std::pair{"sub/../trials", "--trials"}}) {
    const auto o = Asvrun({"eval", "--scores", (dir_ / "scores").string(), "--trials", (dir_ / "trials").string(),
                           "--det", (dir_ / det).string()});
    EXPECT_EQ(o.status, 2) << det;
    EXPECT_NE(o.err.find(fmt::format("is the same file as {}", input)), std::string::npos) << o.err;
  }
  EXPECT_EQ(asv::fs::ReadFile(dir_ / "scores"), "2\n1\n");
  EXPECT_EQ(asv::fs::ReadFile(dir_ / "trials"), "a b target\na c nontarget\n");

  // plot: a database that happens to be named like a figure.
  fs::copy_file(path, dir_ / "runs.svg");
  const auto plot = Asvrun({"plot", "curves", "1", "--metric", "loss", "--db", (dir_ / "runs.svg").string(), "--out",
                            (dir_ / "runs.svg").string()});
  EXPECT_EQ(plot.status, 2) << plot.err;
  EXPECT_EQ(RunsIn(dir_ / "runs.svg"), 1u);
}

TEST_F(AsvrunReportTest, AFifoNamedInTheDatabaseIsNotReadAndDoesNotBlock) {
  const fs::path path = dir_ / "experiments.db";
  {
    db::Database database(path);
    db::RunInfo info;
    info.recipe = "voxceleb/xvector";
    info.config = "demo";
    info.output_folder = dir_.string();
    const auto run = database.BeginRun(info);
    db::ArtifactRecord det;
    det.kind = "det";
    det.path = "det_vox1_o.tsv";  // relative to the run's output folder
    database.RecordArtifact(run, det);
    database.FinishRun(run, db::RunStatus::kFinished);
  }
  ASSERT_EQ(::mkfifo((dir_ / "det_vox1_o.tsv").c_str(), 0600), 0);
  const auto o = Asvrun({"report", "--db", path.string(), "--out", (dir_ / "r.html").string()});
  ASSERT_EQ(o.status, 0) << o.err;
  const std::string page = asv::fs::ReadFile(dir_ / "r.html");
  EXPECT_NE(page.find("det_vox1_o.tsv: not a regular file"), std::string::npos);
}

TEST_F(AsvrunReportTest, DamagedRowsGiveClearErrorsOrReplacedText) {
  const fs::path path = dir_ / "experiments.db";
  {
    db::Database database(path);
    db::RunInfo info;
    info.recipe = "voxceleb/xvector";
    info.config = "ok";
    info.settings_json = R"({"network.stat_size":384})";
    database.FinishRun(database.BeginRun(info), db::RunStatus::kFinished);
    info.config = "broken";
    info.settings_json = "{\"network.stat_size\":";  // cut short
    database.FinishRun(database.BeginRun(info), db::RunStatus::kFinished);
    info.config = "bad\xff\xfename";  // not UTF-8
    info.settings_json = "{}";
    database.FinishRun(database.BeginRun(info), db::RunStatus::kFinished);
  }
  const auto diff = Asvrun({"diff", "1", "2", "--db", path.string()});
  EXPECT_EQ(diff.status, 4);
  EXPECT_NE(diff.err.find("the stored settings of run 2 (runs.settings_json) are not a JSON object"),
            std::string::npos)
      << diff.err;
  const auto runs = Asvrun({"runs", "--json", "--db", path.string()});
  ASSERT_EQ(runs.status, 0) << runs.err;
  EXPECT_NE(runs.out.find("bad\xef\xbf\xbd\xef\xbf\xbdname"), std::string::npos) << runs.out;  // U+FFFD each
}

TEST_F(AsvrunReportTest, OutputsReplaceOnlyRegularFiles) {
  const fs::path path = dir_ / "experiments.db";
  OneRunDatabase(path);
  // Through a link: the page goes where the link points, and the link stays.
  fs::create_directories(dir_ / "www");
  fs::create_symlink(dir_ / "www" / "index.html", dir_ / "latest.html");
  auto o = Asvrun({"report", "--db", path.string(), "--out", (dir_ / "latest.html").string()});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_TRUE(fs::is_symlink(dir_ / "latest.html"));
  EXPECT_EQ(PageData(dir_ / "www" / "index.html")["runs"]["rows"].size(), 1u);
  // A directory is refused and kept.
  o = Asvrun({"report", "--db", path.string(), "--out", (dir_ / "www").string()});
  EXPECT_EQ(o.status, 3);
  EXPECT_NE(o.err.find("is a directory"), std::string::npos) << o.err;
  EXPECT_TRUE(fs::exists(dir_ / "www" / "index.html"));
  // A device is written as a stream: /dev/full says why it failed and stays a device.
  if (fs::exists("/dev/full") && asv::fs::ResolveOutput("/dev/full").kind == asv::fs::OutputKind::kStream) {
    asv::fs::WriteFileAtomic(dir_ / "trials", std::string("a b target\na c nontarget\n"));
    asv::fs::WriteFileAtomic(dir_ / "scores", std::string("2\n1\n"));
    o = Asvrun({"eval", "--scores", (dir_ / "scores").string(), "--trials", (dir_ / "trials").string(), "--det",
                "/dev/full"});
    EXPECT_EQ(o.status, 3);
    EXPECT_NE(o.err.find("/dev/full: write failed: No space left on device"), std::string::npos) << o.err;
    struct stat st {};
    ASSERT_EQ(::lstat("/dev/full", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
  }
}

}  // namespace
}  // namespace asv
