// `asvrun runs --running`: the running runs with the progress their ranks last recorded (stage,
// what, done/total, rate, ETA, age of the update), as a table and as JSON; and a stage run through
// the stage driver, whose progress is logged and reaches `runs --running` while it runs. The
// command runs in this process (asv_asvrun_cli, no LibTorch), as AsvrunMain.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "asvcpp/base/progress.h"
#include "asvcpp/db/database.h"
#include "asvcpp/recipe/recipe.h"
#include "asvcpp/recipe/run_context.h"
#include "asvcpp/recipe/stage_driver.h"
#include "asvcpp/settings/settings.h"
#include "tests/asvcpp/db/db_test_util.h"
#include "tests/tools/asvrun_in_process.h"
#include "tools/asvrun/cli.h"

namespace asv {
namespace {

namespace fs = std::filesystem;

using Outcome = testing::AsvrunOutcome;
using testing::Asvrun;

struct Runs {
  std::int64_t training = 0;  // running, two ranks with progress
  std::int64_t starting = 0;  // running, a stage but no progress row yet
  std::int64_t finished = 0;  // finished, with a progress row left behind
};

// Three runs of this (live) process, as asvrun records them.
Runs Populate(const fs::path& path) {
  db::Database database(path);
  Runs runs;
  db::RunInfo info = db::testing::SampleRunInfo("voxceleb/xvector", "net");
  info.gpu_ids = {0, 1};
  info.world_size = 2;
  runs.training = database.BeginRun(info);
  db::ProgressRecord p;
  p.stage = "5 train";
  p.what = "epoch 3/20";
  p.done = 120;
  p.total = 400;
  p.unit = "batches";
  p.rate = 2.5;
  p.eta_seconds = 112;
  database.UpdateProgress(runs.training, 0, p);
  p.done = 118;
  database.UpdateProgress(runs.training, 1, p);

  info.config = "ecapa";
  info.gpu_ids = {};
  info.world_size = 1;
  runs.starting = database.BeginRun(info);
  database.BeginStage(runs.starting, 1, "features");

  info.config = "old";
  runs.finished = database.BeginRun(info);
  p.what = "epoch 20/20";
  database.UpdateProgress(runs.finished, 0, p);
  database.FinishRun(runs.finished, db::RunStatus::kFinished);
  return runs;
}

TEST(AsvrunRunningTest, TableShowsEachRunningRunWithStageProgressRateEtaAndAge) {
  const db::testing::ScopedDir dir("cli_running");
  const auto path = dir / "experiments.db";
  const Runs runs = Populate(path);
  const auto out = Asvrun({"runs", "--running", "--db", path.string()});
  ASSERT_EQ(out.status, 0) << out.err;
  EXPECT_NE(out.out.find("run"), std::string::npos);
  for (const char* column : {"config", "GPUs", "stage", "what", "done", "rate", "ETA", "updated"}) {
    EXPECT_NE(out.out.find(column), std::string::npos) << column << "\n" << out.out;
  }
  // The training run: rank 0's row, its GPUs, 280 batches left at 2.5/s = 1:52.
  const std::regex training(std::to_string(runs.training) +
                            R"( +net +0,1 +5 train +epoch 3/20 +120/400 batches \(30\.0%\) +2\.5 batches/s +1:52 +0:0\d ago)");
  EXPECT_TRUE(std::regex_search(out.out, training)) << out.out;
  // A run without a progress row shows the stage it is in.
  const std::regex starting(std::to_string(runs.starting) + R"( +ecapa +cpu +1 features)");
  EXPECT_TRUE(std::regex_search(out.out, starting)) << out.out;
  EXPECT_EQ(out.out.find("old"), std::string::npos) << "a finished run is listed:\n" << out.out;
  EXPECT_EQ(out.out.find("epoch 20/20"), std::string::npos) << out.out;

  // Without --running: every run, as before.
  const auto all = Asvrun({"runs", "--db", path.string()});
  ASSERT_EQ(all.status, 0) << all.err;
  EXPECT_NE(all.out.find("old"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("finished"), std::string::npos) << all.out;
}

TEST(AsvrunRunningTest, JsonGivesEveryRankOfEachRunningRun) {
  const db::testing::ScopedDir dir("cli_running_json");
  const auto path = dir / "experiments.db";
  const Runs runs = Populate(path);
  const auto out = Asvrun({"runs", "--running", "--json", "--db", path.string()});
  ASSERT_EQ(out.status, 0) << out.err;
  const auto json = nlohmann::json::parse(out.out);
  ASSERT_EQ(json.size(), 2u) << out.out;
  // Newest first: the starting run, then the training run.
  EXPECT_EQ(json[0]["id"], runs.starting);
  EXPECT_EQ(json[0]["stage"], "1 features");
  EXPECT_TRUE(json[0]["progress"].empty());
  const auto& t = json[1];
  EXPECT_EQ(t["id"], runs.training);
  EXPECT_EQ(t["config"], "net");
  EXPECT_EQ(t["gpu_ids"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(t["world_size"], 2);
  EXPECT_EQ(t["stage"], "5 train");
  ASSERT_EQ(t["progress"].size(), 2u);
  EXPECT_EQ(t["progress"][0]["rank"], 0);
  EXPECT_EQ(t["progress"][0]["done"], 120);
  EXPECT_EQ(t["progress"][1]["rank"], 1);
  EXPECT_EQ(t["progress"][1]["done"], 118);
  EXPECT_EQ(t["progress"][0]["total"], 400);
  EXPECT_EQ(t["progress"][0]["unit"], "batches");
  EXPECT_EQ(t["progress"][0]["rate"], 2.5);
  EXPECT_EQ(t["progress"][0]["eta_seconds"], 112.0);
  EXPECT_GE(t["progress"][0]["age_seconds"].get<double>(), 0.0);
  EXPECT_LT(t["progress"][0]["age_seconds"].get<double>(), 600.0);
}

TEST(AsvrunRunningTest, NoRunningRunGivesAnEmptyList) {
  const db::testing::ScopedDir dir("cli_running_none");
  const auto path = dir / "experiments.db";
  {
    db::Database database(path);
    const auto id = database.BeginRun(db::testing::SampleRunInfo("voxceleb/xvector", "net"));
    database.FinishRun(id, db::RunStatus::kFinished);
  }
  const auto out = Asvrun({"runs", "--running", "--json", "--db", path.string()});
  ASSERT_EQ(out.status, 0) << out.err;
  EXPECT_EQ(nlohmann::json::parse(out.out), nlohmann::json::array());
}

// A recipe of one stage that counts 40 items at 10 items per (fake) second, and in the middle,
// while the run goes on, asks `asvrun runs --running` what it shows.
class CountingSettings : public recipe::RecipeSettings {
 public:
  CountingSettings() { settings::AddStandardGroups(tree_, common_); }
  int start_stage() const override { return 1; }
  int end_stage() const override { return 1; }
};

class CountingRecipe : public recipe::Recipe {
 public:
  std::string name() const override { return "test/counting"; }
  std::vector<recipe::StageInfo> stages() const override { return {{1, "count", "counts items", false}}; }
  std::unique_ptr<recipe::RecipeSettings> NewSettings() const override { return std::make_unique<CountingSettings>(); }
};

class CountingRunner : public recipe::StageRunner {
 public:
  CountingRunner(fs::path db_path, std::int64_t run_id) : db_path_(std::move(db_path)), run_id_(run_id) {}
  bool HasStage(const recipe::StageInfo&) const override { return true; }
  void RunStage(const recipe::StageInfo&, recipe::RunContext&) const override {
    int ticks = 0;
    base::ProgressOptions options;
    options.unit = "items";
    options.clock = [&ticks] { return ticks * 0.1; };
    base::Progress progress("items", 40, options);
    for (int i = 0; i < 20; ++i) {
      ++ticks;
      progress.Add(1);
    }
    // The reporter writes every 5 s; wait for its row (generous bound).
    db::Database database(db_path_);
    for (int i = 0; i < 600 && database.ProgressRows({run_id_}).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    while_running = Asvrun({"runs", "--running", "--db", db_path_.string()});
    for (int i = 0; i < 20; ++i) {
      ++ticks;
      progress.Add(1);
    }
  }
  mutable Outcome while_running;

 private:
  fs::path db_path_;
  std::int64_t run_id_;
};

TEST(AsvrunRunningTest, AStageRunLogsProgressAndShowsItToRunsRunning) {
  const db::testing::ScopedDir dir("cli_running_stage");
  const auto path = dir / "experiments.db";
  db::Database database(path);
  db::RunInfo info = db::testing::SampleRunInfo("test/counting", "count");
  info.gpu_ids = {};
  const std::int64_t run = database.BeginRun(info);
  CountingRecipe recipe;
  CountingSettings settings;
  recipe::RunContext context("test/counting", "count", settings, dir.path(), &database, run);
  CountingRunner runner(path, run);

  // The log goes to a file, as when asvrun's stderr is not a terminal: plain log lines.
  const fs::path log_file = dir / "log";
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  const int log_fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(log_fd, 0);
  ::dup2(log_fd, STDERR_FILENO);
  recipe::RunStages(recipe, runner, context);
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(log_fd);
  std::ifstream in(log_file);
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  // A line every tenth, with the smoothed rate and the ETA, and an end line with the mean rate.
  EXPECT_NE(log.find("] items: 4/40 items (10.0%), 10.0 items/s, elapsed 0:00, ETA 0:04\n"), std::string::npos) << log;
  EXPECT_NE(log.find("] items: 20/40 items (50.0%), 10.0 items/s, elapsed 0:02, ETA 0:02\n"), std::string::npos) << log;
  EXPECT_NE(log.find("] items: 36/40 items (90.0%), 10.0 items/s, elapsed 0:04, ETA 0:00\n"), std::string::npos) << log;
  EXPECT_NE(log.find("] items: 40 items in 0:04, mean 10.0 items/s\n"), std::string::npos) << log;
  EXPECT_EQ(log.find('\r'), std::string::npos) << log;

  // While the stage ran, another "shell" saw the stage, the count, the rate and the ETA.
  const auto& shown = runner.while_running;
  ASSERT_EQ(shown.status, 0) << shown.err;
  const std::regex row(std::to_string(run) + R"( +count +cpu +1 count +items +20/40 items \(50\.0%\) +10\.0 items/s +0:02 +0:[0-9]{2} ago)");
  EXPECT_TRUE(std::regex_search(shown.out, row)) << shown.out;

  // After the stage, the row holds the final state (it stays after the run).
  const auto rows = database.ProgressRows({run});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].record.stage, "1 count");
  EXPECT_EQ(rows[0].record.what, "items");
  EXPECT_EQ(rows[0].record.done, 40);
  EXPECT_EQ(rows[0].record.total, std::optional<std::int64_t>(40));
  EXPECT_EQ(rows[0].record.rate, std::optional<double>(10.0));
  EXPECT_EQ(rows[0].record.eta_seconds, std::optional<double>(0.0));
}

}  // namespace
}  // namespace asv
