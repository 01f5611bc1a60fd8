// voxceleb/xvector end to end on a tiny synthetic corpus (tools/make_demo_corpus.py --small:
// espeak-ng voices, VoxCeleb1 and VoxCeleb2 layouts, synthetic MUSAN and RIRS_NOISES): asvrun
// runs stages 0-9 with a tiny network trained on clean + augmented data, and the experiment
// database holds the run, its stages, epochs and results. Skipped when
// espeak-ng or ffmpeg is missing.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>
#include <set>

#include "asvcpp/db/database.h"
#include "asvcpp/eval/calibration.h"
#include "asvcpp/eval/score_file.h"
#include "tests/build_paths.h"
#include "tests/tools/test_util.h"
#include "tests/tools/xvector_tiny.h"

namespace asv {
namespace {

namespace fs = std::filesystem;
using testing::CountLines;

const std::string kConfigs = "# Every stage on the tiny corpus with a tiny network\n" + testing::kTinyEveryStageBlock;
constexpr const char* kInitConfig = testing::kTinyInitConfig;

TEST(RecipeE2eTest, TinyCorpusThroughEveryStage) {
  if (!testing::HaveDemoCorpusTools()) {
    GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
  }
  testing::ScratchDir dir("recipe_e2e");
  const auto corpus = testing::LinkTinyCorpus(dir.path());
  ASSERT_EQ(corpus.status, 0) << corpus.err;
  dir.Write("configs/run_configs", kConfigs);
  dir.Write("configs/init_config", kInitConfig);
  fs::copy_file(fs::path(ASV_SOURCE_DIR) / "run_configs/voxceleb/xvector/mfcc.conf", dir / "configs/mfcc.conf");

  const auto run = testing::RunCommand({ASV_ASVRUN, "voxceleb/xvector", "tiny", "--run-configs", "configs/run_configs"},
                                       dir.path());
  ASSERT_EQ(run.status, 0) << run.err;

  db::Database database(dir / "out/experiments.db");
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, db::RunStatus::kFinished);
  const auto stages = database.Stages(runs[0].id);
  std::vector<int> numbers;
  for (const auto& stage : stages) {
    numbers.push_back(stage.stage);
    EXPECT_EQ(stage.status, db::RunStatus::kFinished) << stage.name;
  }
  EXPECT_EQ(numbers, (std::vector<int>{0, 1, 2, 5, 7, 9}));
  // Stage 2: one augmented copy per training utterance; training read the combined data.
  const std::size_t clean = CountLines(dir / "out/datasets/voxceleb2_cat/lists/utt2spk");
  ASSERT_GT(clean, 0u);
  EXPECT_EQ(CountLines(dir / "out/datasets/voxceleb2_cat_aug_subset/lists/feats.scp"), clean);
  EXPECT_EQ(CountLines(dir / "out/datasets/voxceleb2_cat_combined/lists/utt2spk"), 2 * clean);
  EXPECT_EQ(CountLines(dir / "out/datasets/voxceleb2_cat_combined/lists/feats.scp"), 2 * clean);
  const auto epochs = database.Epochs(runs[0].id);
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_GT(epochs[0].record.frames_per_second, 0);
  ASSERT_TRUE(epochs[0].record.data_wait_percent.has_value());
  EXPECT_GE(*epochs[0].record.data_wait_percent, 0.0);
  EXPECT_LE(*epochs[0].record.data_wait_percent, 100.0);
  const std::size_t trials = CountLines(dir / "corpus/voxceleb1/veri_test.txt");
  ASSERT_GT(trials, 0u);
  const auto results = database.Results({});
  // One evaluation per epoch during training and the final scoring.
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) {
    EXPECT_EQ(r.record.trial_list, "tiny_trials");
    EXPECT_GE(r.record.eer, 0);
    EXPECT_LE(r.record.eer, 100);
    EXPECT_EQ(static_cast<std::size_t>(r.record.n_target + r.record.n_nontarget), trials);
    // Every metric at both operating points: p_target 0.05 (the setting) and 0.01.
    ASSERT_TRUE(r.record.cllr.has_value());
    ASSERT_TRUE(r.record.min_cllr.has_value());
    EXPECT_LE(*r.record.min_cllr, *r.record.cllr + 1e-12);
    EXPECT_LE(*r.record.min_cllr, 1.0);
    ASSERT_EQ(r.record.costs.size(), 2u);
    EXPECT_EQ(r.record.costs[0].p_target, 0.05);
    EXPECT_EQ(r.record.costs[0].min_dcf, r.record.min_dcf);
    EXPECT_EQ(r.record.costs[1].p_target, 0.01);
    for (const auto& cost : r.record.costs) {
      ASSERT_TRUE(cost.act_dcf.has_value());
      EXPECT_GE(*cost.act_dcf + 1e-12, cost.min_dcf);
    }
  }
  // Newest first: the final scoring (stage 9, epoch 2), then the two evaluations of stage 5.
  EXPECT_EQ(results[0].record.stage, std::optional<int>(9));
  EXPECT_EQ(results[0].record.epoch, std::optional<int>(2));
  EXPECT_EQ(results[1].record.stage, std::optional<int>(5));
  EXPECT_EQ(results[2].record.epoch, std::optional<int>(1));
  const fs::path system = dir / "out/tiny_system";
  EXPECT_TRUE(fs::exists(system / "networks/epoch.1.pt"));
  EXPECT_TRUE(fs::exists(system / "networks/epoch.2.pt"));
  EXPECT_EQ(CountLines(system / "scores/scores_veri_test.txt"), trials);
  // DET points: the header, then points inside the probit axes, at most one per trial.
  const fs::path det = system / "scores" / fmt::format("det_veri_test.run{}.tsv", runs[0].id);
  EXPECT_GE(CountLines(det), 2u);
  EXPECT_LE(CountLines(det), trials + 1);
  EXPECT_TRUE(fs::exists(system / "embeddings/trial.scp"));
  EXPECT_EQ(CountLines(system / "results/results.txt"), 1u);

  std::set<std::string> kinds;
  for (const auto& artifact : database.Artifacts(runs[0].id)) kinds.insert(artifact.record.kind);
  for (const char* kind : {"list", "features", "vad", "checkpoint", "embeddings", "scores", "det", "results"}) {
    EXPECT_EQ(kinds.count(kind), 1u) << kind;
  }

  const auto table = testing::RunCommand({ASV_ASVRUN, "results", "--db", "out/experiments.db", "--best"}, dir.path());
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("tiny_trials"), std::string::npos) << table.out;

  // Progress in the log (stderr is not a terminal: plain log lines): features per utterance with
  // rate and ETA and an end line with the mean rate; training batches per epoch; embeddings;
  // scoring. The last progress stays in the database.
  const std::string kRate = R"([0-9][0-9.,]*)";
  const std::string kTime = R"([0-9]+:[0-9][0-9])";
  for (const std::string& pattern :
       {"\\] voxceleb1: [0-9,]+/[0-9,]+ utt \\([0-9.]+%\\), " + kRate + " utt/s, " + kRate +
            "x real time, elapsed " + kTime + ", ETA (" + kTime + "|\\?)\n",
        "\\] voxceleb1: [0-9,]+ utt in " + kTime + ", mean " + kRate + " utt/s, " + kRate + "x real time\n",
        "\\] epoch 1/2: [0-9,]+/[0-9,]+ batches \\([0-9.]+%\\), " + kRate + " batches/s, elapsed " + kTime +
            ", ETA (" + kTime + "|\\?)\n",
        "\\] epoch 2/2: [0-9,]+ batches in " + kTime + ", mean " + kRate + " batches/s\n",
        "\\] embeddings: [0-9,]+ utt in " + kTime + ", mean " + kRate + " utt/s\n",
        "\\] scoring: 1 lists in " + kTime + ", mean " + kRate + " lists/s, " + kRate + " trials/s\n"}) {
    EXPECT_TRUE(std::regex_search(run.err, std::regex(pattern))) << pattern << "\n" << run.err;
  }
  EXPECT_EQ(run.err.find('\r'), std::string::npos);
  const auto progress = database.ProgressRows({runs[0].id});
  ASSERT_EQ(progress.size(), 1u);
  EXPECT_EQ(progress[0].rank, 0);
  EXPECT_EQ(progress[0].record.stage, "9 scoring");
  EXPECT_EQ(progress[0].record.what, "scoring");
  EXPECT_EQ(progress[0].record.done, 1);
  EXPECT_EQ(progress[0].record.total, std::optional<std::int64_t>(1));
}

// The back end of a modern system through asvrun: PLDA with AS-norm against the speaker-mean
// cohort that stage 7 stores and linear calibration trained on held-out back-end speakers, then
// stage 9 again with cosine scoring, plain s-norm and quality-aware calibration. 8-dimensional
// embeddings, so that PLDA can be trained on the tiny corpus's 20 back-end embeddings.
TEST(RecipeE2eTest, ScoreNormalisationAndCalibration) {
  if (!testing::HaveDemoCorpusTools()) {
    GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
  }
  testing::ScratchDir dir("recipe_e2e_backend");
  const auto corpus = testing::LinkTinyCorpus(dir.path());
  ASSERT_EQ(corpus.status, 0) << corpus.err;
  std::string configs = kConfigs;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"network.embedding_size = 16", "network.embedding_size = 8"},
           {"recipe.plda_datasets = ['voxceleb2_cat']", "recipe.plda_datasets = ['voxceleb2_cat_combined']"},
           {"backend.scoring = 'cosine'",
            "backend.scoring = 'plda'\nbackend.plda_dim = 6\nbackend.score_norm = True\nbackend.calibration = "
            "'linear'\nbackend.keep_degenerate_calibration = True"}}) {
    const auto at = configs.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    configs.replace(at, from.size(), to);
  }
  dir.Write("configs/run_configs", configs);
  dir.Write("configs/init_config", kInitConfig);
  fs::copy_file(fs::path(ASV_SOURCE_DIR) / "run_configs/voxceleb/xvector/mfcc.conf", dir / "configs/mfcc.conf");

  const auto run = testing::RunCommand({ASV_ASVRUN, "voxceleb/xvector", "tiny", "--run-configs", "configs/run_configs"},
                                       dir.path());
  ASSERT_EQ(run.status, 0) << run.err;
  const fs::path system = dir / "out/tiny_system";
  // The cohort: one mean per back-end speaker, stored beside the embeddings with the checksum of
  // the archive it was made of.
  EXPECT_EQ(CountLines(system / "embeddings/cohort.scp"), 5u);
  EXPECT_EQ(CountLines(system / "embeddings/plda.utt2dur"), 20u);
  EXPECT_NE(run.err.find("plda scoring (plda_dim 6), as-norm against speaker_means, linear calibration"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("cohort: 5 speaker means from"), std::string::npos) << run.err;
  // Two of the five speakers held out: 2 x C(4, 2) target and 4 x 4 non-target trials.
  EXPECT_NE(run.err.find("calibration (linear): 12 target and 16 non-target trials of 2 held-out speakers"),
            std::string::npos)
      << run.err;
  // The tiny system's two held-out speakers may give trials without information (a degenerate
  // calibration); this config applies it anyway, and the last run below checks the default.
  const bool degenerate = run.err.find("calibration (linear) is degenerate") != std::string::npos;
  if (degenerate) {
    EXPECT_NE(run.err.find("applied anyway"), std::string::npos) << run.err;
  }
  const auto linear = eval::LoadCalibration(system / "backend/calibration.json");
  EXPECT_EQ(linear.feature_names, (std::vector<std::string>{"score"}));
  EXPECT_GT(linear.weights[0], 0.0);

  db::Database database(dir / "out/experiments.db");
  const std::size_t trials = CountLines(dir / "corpus/voxceleb1/veri_test.txt");
  const auto check_final_result = [&](std::int64_t run_id) {
    db::ResultFilter filter;
    filter.run_id = run_id;
    filter.stage = 9;
    const auto results = database.Results(filter);
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(static_cast<std::size_t>(results[0].record.n_target + results[0].record.n_nontarget), trials);
    ASSERT_TRUE(results[0].record.cllr.has_value());
    EXPECT_TRUE(std::isfinite(*results[0].record.cllr));
    ASSERT_EQ(results[0].record.costs.size(), 2u);
    for (const auto& cost : results[0].record.costs) {
      ASSERT_TRUE(cost.act_dcf.has_value());
      EXPECT_GE(*cost.act_dcf + 1e-12, cost.min_dcf);
    }
    std::set<std::string> kinds;
    for (const auto& artifact : database.Artifacts(run_id)) kinds.insert(artifact.record.kind);
    EXPECT_EQ(kinds.count("calibration"), 1u);
  };
  auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 1u);
  check_final_result(runs[0].id);
  const auto plda_scores = eval::ReadScoreFile(system / "scores/scores_veri_test.txt");

  // Cosine, plain s-norm, quality-aware calibration: the stored cohort is reused.
  const auto cosine = testing::RunCommand(
      {ASV_ASVRUN, "voxceleb/xvector", "tiny", "--run-configs", "configs/run_configs", "--set", "recipe.start_stage=9",
       "--set", "backend.scoring='cosine'", "--set", "backend.score_norm_method='s-norm'", "--set",
       "backend.calibration='quality'"},
      dir.path());
  ASSERT_EQ(cosine.status, 0) << cosine.err;
  EXPECT_NE(cosine.err.find("cosine scoring, s-norm against speaker_means, quality calibration"), std::string::npos)
      << cosine.err;
  EXPECT_NE(cosine.err.find("cohort: 5 speaker means from"), std::string::npos) << cosine.err;
  EXPECT_EQ(eval::LoadCalibration(system / "backend/calibration.json").feature_names, eval::QualityFeatureNames());
  EXPECT_NE(eval::ReadScoreFile(system / "scores/scores_veri_test.txt"), plda_scores);
  runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 2u);
  check_final_result(runs[0].id);
  // Each run keeps its own DET points: the first run's curve is still plottable, and differs.
  const auto det_of = [&](std::int64_t run_id) {
    return testing::Slurp(system / "scores" / fmt::format("det_veri_test.run{}.tsv", run_id));
  };
  EXPECT_NE(det_of(runs[0].id), det_of(runs[1].id));
  const auto plot = testing::RunCommand(
      {ASV_ASVRUN, "plot", "det", std::to_string(runs[1].id), "--out", "first.svg", "--db", "out/experiments.db"},
      dir.path());
  EXPECT_EQ(plot.status, 0) << plot.err;

  // A cohort that no longer matches the back-end embeddings is rebuilt, not used.
  dir.Write("out/tiny_system/embeddings/cohort.source", "sha256:0\n");
  // With the default backend.keep_degenerate_calibration = False: the same linear calibration (same
  // back-end embeddings and held-out speakers), left out when degenerate, and recorded so.
  const auto rebuilt = testing::RunCommand(
      {ASV_ASVRUN, "voxceleb/xvector", "tiny", "--run-configs", "configs/run_configs", "--set",
       "recipe.start_stage=9", "--set", "backend.keep_degenerate_calibration=False"},
      dir.path());
  ASSERT_EQ(rebuilt.status, 0) << rebuilt.err;
  EXPECT_EQ(rebuilt.err.find("calibration (linear) is degenerate") != std::string::npos, degenerate) << rebuilt.err;
  const std::string saved = testing::Slurp(system / "backend/calibration.json");
  EXPECT_NE(saved.find(degenerate ? "\"applied\": false" : "\"applied\": true"), std::string::npos) << saved;
  const std::string results_text = testing::Slurp(system / "results/results.txt");
  EXPECT_EQ(results_text.rfind("calibration: degenerate, not applied (", 0) == 0, degenerate) << results_text;
  runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 3u);
  std::set<std::string> last_kinds;
  for (const auto& artifact : database.Artifacts(runs[0].id)) last_kinds.insert(artifact.record.kind);
  EXPECT_EQ(last_kinds.count(degenerate ? "calibration_not_applied" : "calibration"), 1u);
  EXPECT_EQ(last_kinds.count(degenerate ? "calibration" : "calibration_not_applied"), 0u);
  EXPECT_NE(rebuilt.err.find("cohort: 5 speaker means of the back-end embeddings, stored in"), std::string::npos)
      << rebuilt.err;
  // cohort.source names the archive by the text of its checksum file.
  EXPECT_EQ(testing::Slurp(system / "embeddings/cohort.source"), testing::Slurp(system / "embeddings/plda.ark.sha256"));
}

// A long training run interrupted with SIGINT (Ctrl-C) is recorded as failed (run and stage), and
// network.resume_epoch continues it from its last checkpoint.
TEST(RecipeE2eTest, InterruptedTrainingIsRecordedAndResumes) {
  if (!testing::HaveDemoCorpusTools()) {
    GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
  }
  testing::ScratchDir dir("recipe_interrupt");
  ASSERT_EQ(testing::LinkTinyCorpus(dir.path()).status, 0);
  std::string configs = kConfigs;
  configs += "\n# Trains far longer than the test waits\nlong < tiny\npaths.system_folder = 'long_system'\n"
             "recipe.end_stage = 5\nnetwork.max_epochs = 1000\nnetwork.epochs_per_train_call = 100000\n";
  dir.Write("configs/run_configs", configs);
  dir.Write("configs/init_config", kInitConfig);
  fs::copy_file(fs::path(ASV_SOURCE_DIR) / "run_configs/voxceleb/xvector/mfcc.conf", dir / "configs/mfcc.conf");

  const std::string asvrun = testing::ShellQuote(ASV_ASVRUN);
  const std::string script =
      asvrun + " voxceleb/xvector long --run-configs configs/run_configs >log 2>&1 & pid=$!;"
      // epoch 4's checkpoint: by then epoch 3's row is in the database too (a checkpoint is
      // written before its epoch is recorded).
      " for i in $(seq 1500); do [ -f out/long_system/networks/epoch.4.pt ] && break; sleep 0.2; done;"
      " kill -INT $pid; wait $pid; echo $? >status";
  ASSERT_EQ(testing::RunCommand({"/bin/sh", "-c", script}, dir.path()).status, 0);
  EXPECT_EQ(testing::Slurp(dir / "status"), "130\n") << testing::Slurp(dir / "log");
  int last = 0;
  while (fs::exists(dir / ("out/long_system/networks/epoch." + std::to_string(last + 1) + ".pt"))) ++last;
  ASSERT_GE(last, 3);
  {
    db::Database database(dir / "out/experiments.db");
    const auto runs = database.ListRuns();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].status, db::RunStatus::kFailed);
    ASSERT_TRUE(runs[0].error_text.has_value());
    EXPECT_NE(runs[0].error_text->find("interrupted"), std::string::npos) << *runs[0].error_text;
    const auto stages = database.Stages(runs[0].id);
    ASSERT_FALSE(stages.empty());
    EXPECT_EQ(stages.back().stage, 5);
    EXPECT_EQ(stages.back().status, db::RunStatus::kFailed);
    EXPECT_GE(database.Epochs(runs[0].id).size(), 3u);
  }

  const auto resumed = testing::RunCommand(
      {ASV_ASVRUN, "voxceleb/xvector", "long", "--run-configs", "configs/run_configs", "--set", "recipe.start_stage=5",
       "--set", "network.resume_epoch=" + std::to_string(last), "--set",
       "network.max_epochs=" + std::to_string(last + 1)},
      dir.path());
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_TRUE(fs::exists(dir / ("out/long_system/networks/epoch." + std::to_string(last + 1) + ".pt")));
  db::Database database(dir / "out/experiments.db");
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].status, db::RunStatus::kFinished);
  const auto epochs = database.Epochs(runs[0].id);
  ASSERT_EQ(epochs.size(), 1u);
  EXPECT_EQ(epochs[0].record.epoch, last + 1);
}

}  // namespace
}  // namespace asv
