// sitw/xvector trained data-parallel over two Gloo ranks on the tiny synthetic corpus
// (tools/make_demo_corpus.py --small): asvrun's launcher starts the ranks of stage 5, rank 0
// alone extracts and scores both SITW lists; a second run of the same config gives bit-identical
// losses. Skipped when espeak-ng or ffmpeg is missing.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "asvcpp/db/database.h"
#include "tests/build_paths.h"
#include "tests/tools/sitw_tiny_configs.h"
#include "tests/tools/test_util.h"

namespace asv {
namespace {

namespace fs = std::filesystem;

testing::CommandResult AsvrunSitw(const fs::path& dir, std::vector<std::string> args) {
  std::vector<std::string> argv = {ASV_ASVRUN, "sitw/xvector", "tiny", "--run-configs", "configs/run_configs"};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunCommand(argv, dir);
}

TEST(SitwDistE2eTest, TwoGlooRanksTrainAndRankZeroScoresBothLists) {
  if (!testing::HaveDemoCorpusTools()) {
    GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
  }
  testing::ScratchDir dir("sitw_dist_e2e");
  const auto corpus = testing::SetUpSitwDir(dir);
  ASSERT_EQ(corpus.status, 0) << corpus.err;
  const auto prepared = AsvrunSitw(dir.path(), {"--set", "recipe.end_stage=2"});
  ASSERT_EQ(prepared.status, 0) << prepared.err;

  const auto run = AsvrunSitw(dir.path(), {"--set", "recipe.start_stage=5", "--nproc-per-node", "2"});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string log = run.out + run.err;
  EXPECT_NE(log.find("2 processes on the CPU (Gloo)"), std::string::npos) << log;
  EXPECT_NE(log.find("process group: 2 ranks, Gloo on cpu"), std::string::npos) << log;
  // network.minibatch_size 8 split into 4 per rank.
  EXPECT_NE(log.find("r0] Epoch 1: "), std::string::npos) << log;
  EXPECT_NE(log.find(" of 4 clips per rank"), std::string::npos) << log;
  EXPECT_NE(log.find("r1] Epoch 1 done: loss "), std::string::npos) << log;

  db::Database database(dir / "out/experiments.db");
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].status, db::RunStatus::kFinished);
  std::vector<int> numbers;
  for (const auto& stage : database.Stages(runs[0].id)) numbers.push_back(stage.stage);
  EXPECT_EQ(numbers, (std::vector<int>{5, 7, 9}));
  // Two epochs, each recorded once (by rank 0), and 2 lists x (2 evaluations + stage 9).
  const auto epochs = database.Epochs(runs[0].id);
  ASSERT_EQ(epochs.size(), 2u);
  for (const auto& epoch : epochs) EXPECT_TRUE(std::isfinite(epoch.record.loss));
  EXPECT_EQ(database.Results().size(), 6u);
  EXPECT_TRUE(fs::exists(dir / "out/tiny_system/networks/epoch.2.pt"));
  EXPECT_GT(testing::CountLines(dir / "out/tiny_system/scores/scores_sitw_trials_core_multi.txt"), 0u);

  // Determinism: the same config, seed and world size train to bit-identical losses.
  const auto again = AsvrunSitw(dir.path(), {"--set", "recipe.start_stage=5", "--set", "recipe.end_stage=5", "--set",
                                             "paths.system_folder='again_system'", "--nproc-per-node", "2"});
  ASSERT_EQ(again.status, 0) << again.err;
  const auto repeated = database.Epochs(database.ListRuns()[0].id);
  ASSERT_EQ(repeated.size(), epochs.size());
  for (std::size_t i = 0; i < epochs.size(); ++i) {
    EXPECT_EQ(repeated[i].record.loss, epochs[i].record.loss) << "epoch " << i + 1;
    EXPECT_EQ(repeated[i].record.accuracy, epochs[i].record.accuracy) << "epoch " << i + 1;
  }
}

// The python3 whose torch is the PyTorch of the LibTorch asvrun links (Debian's python3-torch for
// libtorch-dev: their torchrun and c10d store speak the same protocol), or "" when there is none.
std::string PythonWithMatchingTorch(const fs::path& cwd) {
  const auto info = testing::RunCommand({ASV_ASVRUN, "info"}, cwd);
  const auto at = info.out.find("LibTorch: ");
  if (at == std::string::npos) return "";
  const std::string libtorch = info.out.substr(at + 10, info.out.find('\n', at) - at - 10);
  const std::string major_minor = libtorch.substr(0, libtorch.rfind('.'));
  for (const std::string python : {"python3", "/usr/bin/python3"}) {
    const auto version =
        testing::RunCommand({python, "-c", "import torch.distributed.run, torch; print(torch.__version__)"}, cwd);
    if (version.status == 0 && version.out.rfind(major_minor + ".", 0) == 0) return python;
  }
  return "";
}

// torchrun itself (`python3 -m torch.distributed.run`) starts the two workers of stage 5: rank 0
// records the run once, with both ranks' world size.
TEST(SitwDistE2eTest, TorchrunStartsTwoWorkers) {
  if (!testing::HaveDemoCorpusTools()) {
    GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
  }
  testing::ScratchDir dir("sitw_torchrun_e2e");
  const std::string python = PythonWithMatchingTorch(dir.path());
  if (python.empty()) GTEST_SKIP() << "no python3 with the torch of asvrun's LibTorch (tools/setup.sh: python3-torch)";
  const auto corpus = testing::SetUpSitwDir(dir);
  ASSERT_EQ(corpus.status, 0) << corpus.err;
  const auto prepared = AsvrunSitw(dir.path(), {"--set", "recipe.end_stage=2"});
  ASSERT_EQ(prepared.status, 0) << prepared.err;

  // --redirects 1 --tee 1: torch 1.13's torchrun cannot parse its default "0" under Python 3.11
  // (IntFlag iteration no longer yields the zero flag), 1 (stdout) it can.
  const std::string asvrun_torch = (fs::path(ASV_ASVRUN).parent_path() / "asvrun-torch").string();
  const auto run = testing::RunCommand(
      {python, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "--redirects", "1", "--tee",
       "1", "--log_dir", (dir / "torchrun_logs").string(), "--no_python", asvrun_torch, "sitw/xvector", "tiny",
       "--run-configs", "configs/run_configs", "--set", "recipe.start_stage=5"},
      dir.path());
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  const std::string log = run.out + run.err;
  EXPECT_NE(log.find("process group: 2 ranks, Gloo on cpu"), std::string::npos) << log;

  db::Database database(dir / "out/experiments.db");
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 2u);  // stages 0-2, then the torchrun job: one row, not one per rank
  EXPECT_EQ(runs[0].status, db::RunStatus::kFinished);
  EXPECT_EQ(runs[0].info.world_size, 2);
  std::vector<int> numbers;
  for (const auto& stage : database.Stages(runs[0].id)) numbers.push_back(stage.stage);
  EXPECT_EQ(numbers, (std::vector<int>{5, 7, 9}));
  EXPECT_EQ(database.Epochs(runs[0].id).size(), 2u);
  EXPECT_EQ(database.Results().size(), 6u);
}

}  // namespace
}  // namespace asv
