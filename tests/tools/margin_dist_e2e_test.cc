// voxceleb/margin trained data-parallel over two Gloo ranks on the tiny synthetic corpus
// (tools/make_demo_corpus.py --small): asvrun's launcher starts the ranks for stage 5 (training
// with on-the-fly augmentation and fbank), stage 6 (averaging, rank 0) and stage 7 (large-margin
// fine-tuning); a fine-tuning resumed by one process continues the two ranks' checkpoints; a global
// batch that two ranks cannot share is refused before anything runs; a second training run of the
// same config gives bit-identical losses; stage 5 with network.sync_batch_norm. Skipped when
// espeak-ng or ffmpeg is missing.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "asvcpp/db/database.h"
#include "tests/build_paths.h"
#include "tests/tools/margin_tiny_configs.h"
#include "tests/tools/test_util.h"

namespace asv {
namespace {

namespace fs = std::filesystem;
using testing::kConfigs;
using testing::kInitConfig;

testing::CommandResult Asvrun(const fs::path& dir, std::vector<std::string> args) {
  std::vector<std::string> argv = {ASV_ASVRUN, "voxceleb/margin", "tiny", "--run-configs", "configs/run_configs"};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunCommand(argv, dir);
}

// The tiny corpus linked into `dir`, the configs written, and stages 0-1 (lists and PCM stores)
// run in one process. Returns "" or what failed.
std::string PrepareTinyCorpus(const testing::ScratchDir& dir) {
  const auto corpus = testing::LinkTinyCorpus(dir.path());
  if (corpus.status != 0) return "no tiny corpus: " + corpus.err;
  dir.Write("configs/run_configs", kConfigs);
  dir.Write("configs/init_config", kInitConfig);
  const auto prepared = Asvrun(dir.path(), {"--set", "recipe.end_stage=1"});
  return prepared.status == 0 ? "" : "stages 0-1 failed: " + prepared.err;
}

TEST(MarginDistE2eTest, TwoGlooRanksTrainAverageAndFineTune) {
  if (!testing::HaveDemoCorpusTools()) {
    GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
  }
  testing::ScratchDir dir("margin_dist_e2e");
  ASSERT_EQ(PrepareTinyCorpus(dir), "");

  // 7 fine-tuning segments cannot be shared by two ranks: refused before the ranks start.
  const auto odd = Asvrun(dir.path(), {"--set", "recipe.start_stage=5", "--set", "recipe.lm_minibatch_size=7",
                                       "--nproc-per-node", "2"});
  EXPECT_EQ(odd.status, 2) << odd.err;
  EXPECT_NE(odd.err.find("recipe.lm_minibatch_size (7) is not a multiple of the world size (2): each rank would "
                         "train on 3, 6 in all; nearest valid values: 6 or 8"),
            std::string::npos)
      << odd.err;

  const auto run = Asvrun(dir.path(), {"--set", "recipe.start_stage=5", "--set", "recipe.end_stage=7",
                                       "--nproc-per-node", "2"});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string log = run.out + run.err;
  EXPECT_NE(log.find("2 processes on the CPU (Gloo)"), std::string::npos) << log;
  EXPECT_NE(log.find("process group: 2 ranks, Gloo on cpu"), std::string::npos) << log;
  // network.minibatch_size 8 and recipe.lm_minibatch_size 8 split into 4 per rank.
  EXPECT_NE(log.find("r0] Epoch 1: 2 minibatches of 4 clips per rank"), std::string::npos) << log;
  EXPECT_NE(log.find("r1] Epoch 1 done: loss "), std::string::npos) << log;

  db::Database database(dir / "out/experiments.db");
  auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 2u);  // stages 0-1 and 5-7: the refused batch recorded nothing
  EXPECT_EQ(runs[0].status, db::RunStatus::kFinished);
  std::vector<int> numbers;
  for (const auto& stage : database.Stages(runs[0].id)) numbers.push_back(stage.stage);
  EXPECT_EQ(numbers, (std::vector<int>{5, 6, 7}));
  // Three training epochs and two of fine-tuning, each recorded once (by rank 0).
  const auto epochs = database.Epochs(runs[0].id);
  ASSERT_EQ(epochs.size(), 5u);
  for (std::size_t i = 0; i < epochs.size(); ++i) {
    EXPECT_EQ(epochs[i].record.epoch, static_cast<int>(i) + 1);
    EXPECT_TRUE(std::isfinite(epochs[i].record.loss));
  }
  const fs::path system = dir / "out/tiny_system";
  for (const char* file : {"networks/epoch.3.pt", "networks/avg_model.pt", "large_margin/epoch.1.pt",
                           "large_margin/epoch.2.pt", "large_margin/avg_model.pt"}) {
    EXPECT_TRUE(fs::exists(system / file)) << file;
  }

  // One process resumes the fine-tuning that two ranks wrote: epoch 2 again from epoch 1.
  const auto resumed = Asvrun(dir.path(), {"--set", "recipe.start_stage=7", "--set", "recipe.end_stage=7", "--set",
                                           "recipe.lm_resume_epoch=1"});
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 3u);
  const auto resumed_epochs = database.Epochs(runs[0].id);
  ASSERT_EQ(resumed_epochs.size(), 1u);
  EXPECT_EQ(resumed_epochs[0].record.epoch, 5);  // fine-tuning epoch 2 after the 3 of training

  // Determinism: the same config, seed and world size train to bit-identical losses.
  const auto again = Asvrun(dir.path(), {"--set", "recipe.start_stage=5", "--set", "recipe.end_stage=5", "--set",
                                         "paths.system_folder='again_system'", "--nproc-per-node", "2"});
  ASSERT_EQ(again.status, 0) << again.err;
  const auto repeated = database.Epochs(database.ListRuns()[0].id);
  ASSERT_EQ(repeated.size(), 3u);
  for (std::size_t i = 0; i < repeated.size(); ++i) {
    EXPECT_EQ(repeated[i].record.loss, epochs[i].record.loss) << "epoch " << i + 1;
    EXPECT_EQ(repeated[i].record.accuracy, epochs[i].record.accuracy) << "epoch " << i + 1;
  }
}

// ECAPA-TDNN's 29 BatchNorms with the statistics of both ranks' minibatches (stage 5), whose
// checkpoints one process then averages (stage 6).
TEST(MarginDistE2eTest, SyncBatchNormTrainsTwoGlooRanks) {
  if (!testing::HaveDemoCorpusTools()) {
    GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
  }
  testing::ScratchDir dir("margin_dist_e2e_sync_bn");
  ASSERT_EQ(PrepareTinyCorpus(dir), "");

  const auto run = Asvrun(dir.path(), {"--set", "recipe.start_stage=5", "--set", "recipe.end_stage=5", "--set",
                                       "network.sync_batch_norm=True", "--nproc-per-node", "2"});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string log = run.out + run.err;
  EXPECT_NE(log.find("r0] SyncBatchNorm on (network.sync_batch_norm): BatchNorm normalises with the statistics of "
                     "all 2 ranks' minibatches"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("r1] Epoch 3 done: loss "), std::string::npos) << log;

  const auto averaged = Asvrun(dir.path(), {"--set", "recipe.start_stage=6", "--set", "recipe.end_stage=6"});
  ASSERT_EQ(averaged.status, 0) << averaged.err;
  db::Database database(dir / "out/experiments.db");
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 3u);
  for (const auto& r : runs) EXPECT_EQ(r.status, db::RunStatus::kFinished);
  const auto epochs = database.Epochs(runs[1].id);  // newest first: stage 6, stage 5, stages 0-1
  ASSERT_EQ(epochs.size(), 3u);
  for (const auto& e : epochs) EXPECT_TRUE(std::isfinite(e.record.loss));
  EXPECT_TRUE(fs::exists(dir / "out/tiny_system/networks/avg_model.pt"));
}

}  // namespace
}  // namespace asv
