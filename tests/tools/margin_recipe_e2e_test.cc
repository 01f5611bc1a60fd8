// voxceleb/margin end to end on a tiny synthetic corpus (tools/make_demo_corpus.py --small):
// asvrun runs stages 0-9 with a narrow ECAPA-TDNN and an AAM-softmax head trained on augmented,
// speed-perturbed fbank segments of the PCM store, fine-tuned with a large margin on longer
// segments, and the experiment database holds the run, its stages, epochs, evaluations and
// artifacts. Skipped when espeak-ng or ffmpeg is missing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <regex>
#include <set>

#include "asvcpp/data/pcm_store.h"
#include "asvcpp/db/database.h"
#include "asvcpp/eval/calibration.h"
#include "asvcpp/eval/score_file.h"
#include "tests/build_paths.h"
#include "tests/tools/margin_tiny_configs.h"
#include "tests/tools/test_util.h"

namespace asv {
namespace {

namespace fs = std::filesystem;
using testing::CountLines;
using testing::kConfigs;
using testing::kInitConfig;



TEST(MarginRecipeE2eTest, TinyCorpusThroughEveryStage) {
  if (!testing::HaveDemoCorpusTools()) {
    GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
  }
  testing::ScratchDir dir("margin_e2e");
  const auto corpus = testing::LinkTinyCorpus(dir.path());
  ASSERT_EQ(corpus.status, 0) << corpus.err;
  dir.Write("configs/run_configs", kConfigs);
  dir.Write("configs/init_config", kInitConfig);

  // Frames shorter than their shift are refused where the config is read.
  const auto bad = testing::RunCommand({ASV_ASVRUN, "show", "voxceleb/margin", "tiny", "--run-configs",
                                        "configs/run_configs", "--set", "recipe.frame_shift=40"},
                                       dir.path());
  EXPECT_EQ(bad.status, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("recipe.frame_shift (40 ms) must be <= recipe.frame_length (30 ms)"), std::string::npos)
      << bad.err;

  // A dry run names what is missing: without MUSAN the training stage cannot augment.
  const auto dry = testing::RunCommand({ASV_ASVRUN, "voxceleb/margin", "tiny", "--run-configs", "configs/run_configs",
                                        "--dry-run", "--set", "paths.musan_folder='corpus/nothing'"},
                                       dir.path());
  EXPECT_EQ(dry.status, 3) << dry.out << dry.err;
  EXPECT_NE((dry.out + dry.err).find("paths.musan_folder"), std::string::npos) << dry.out << dry.err;

  const auto run = testing::RunCommand({ASV_ASVRUN, "voxceleb/margin", "tiny", "--run-configs", "configs/run_configs"},
                                       dir.path());
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE((run.out + run.err).find("large-margin fine-tuning starts from"), std::string::npos) << run.err;

  db::Database database(dir / "out/experiments.db");
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, db::RunStatus::kFinished);
  EXPECT_EQ(runs[0].info.recipe, "voxceleb/margin");
  std::vector<int> numbers;
  for (const auto& stage : database.Stages(runs[0].id)) {
    numbers.push_back(stage.stage);
    EXPECT_EQ(stage.status, db::RunStatus::kFinished) << stage.name;
  }
  EXPECT_EQ(numbers, (std::vector<int>{0, 1, 5, 6, 7, 8, 9}));
  // Progress in the log: the PCM stores of stage 1 per utterance (a line with rate and ETA, an
  // end line with the mean rate), training batches, embeddings, scoring.
  for (const char* pattern :
       {R"(voxceleb1/pcm: [0-9,]+/[0-9,]+ utt \([0-9.]+%\), [0-9.,]+ utt/s, elapsed [0-9]+:[0-9]{2}, ETA ([0-9]+:[0-9]{2}|\?)\n)",
        R"(voxceleb1/pcm: [0-9,]+ utt in [0-9]+:[0-9]{2}, mean [0-9.,]+ utt/s\n)",
        R"(\] epoch 1/[0-9]+: [0-9,]+ batches in [0-9]+:[0-9]{2}, mean [0-9.,]+ batches/s\n)",
        R"(\] embeddings: [0-9,]+ utt in [0-9]+:[0-9]{2}, mean [0-9.,]+ utt/s\n)",
        R"(\] scoring: [0-9]+ lists in [0-9]+:[0-9]{2}, mean [0-9.,]+ lists/s, [0-9.,]+ trials/s\n)"}) {
    EXPECT_TRUE(std::regex_search(run.err, std::regex(pattern))) << pattern << "\n" << run.err;
  }

  // Stage 1: every utterance of each dataset's wav.scp in its PCM store.
  for (const char* dataset : {"voxceleb1", "voxceleb2"}) {
    const auto store = data::PcmStore::Open(dir / "out/datasets" / dataset / "pcm");
    EXPECT_EQ(store.NumUtterances(), CountLines(dir / "out/datasets" / dataset / "lists/wav.scp")) << dataset;
    EXPECT_EQ(store.sample_rate(), 16000);
  }

  // Three training epochs, then two of fine-tuning recorded as epochs 4 and 5.
  const auto epochs = database.Epochs(runs[0].id);
  ASSERT_EQ(epochs.size(), 5u);
  for (std::size_t i = 0; i < epochs.size(); ++i) {
    EXPECT_EQ(epochs[i].record.epoch, static_cast<int>(i) + 1);
    EXPECT_GT(epochs[i].record.frames_per_second, 0);
    EXPECT_TRUE(std::isfinite(epochs[i].record.loss));
  }
  // WeSpeaker's schedule: warm-up from 0 in epoch 1, then the exponential decay; the fine-tuning
  // warms up from 0 again (one epoch) and decays from recipe.lm_initial_learning_rate.
  EXPECT_EQ(epochs[0].record.learning_rate, 0.0);
  EXPECT_GT(epochs[1].record.learning_rate, epochs[2].record.learning_rate);
  EXPECT_EQ(epochs[3].record.learning_rate, 0.0);
  // WeSpeaker's scale_ratio: batch 8 / 64.
  EXPECT_GT(epochs[4].record.learning_rate, 0.005 * 8 / 64);
  EXPECT_LT(epochs[4].record.learning_rate, 0.01 * 8 / 64);

  const std::size_t trials = CountLines(dir / "corpus/voxceleb1/veri_test.txt");
  ASSERT_GT(trials, 0u);
  const auto results = database.Results({});
  ASSERT_EQ(results.size(), 6u);  // an evaluation per epoch, then the final scoring
  for (const auto& r : results) {
    EXPECT_EQ(r.record.trial_list, "tiny_trials");
    EXPECT_GE(r.record.eer, 0);
    EXPECT_LE(r.record.eer, 100);
    EXPECT_EQ(static_cast<std::size_t>(r.record.n_target + r.record.n_nontarget), trials);
  }
  EXPECT_EQ(results[0].record.stage, std::optional<int>(9));
  // minDCF and actDCF at backend.p_target and at each of backend.other_p_targets.
  ASSERT_EQ(results[0].record.costs.size(), 3u);
  EXPECT_EQ(results[0].record.costs[0].p_target, 0.05);
  EXPECT_EQ(results[0].record.costs[1].p_target, 0.01);
  EXPECT_EQ(results[0].record.costs[2].p_target, 0.001);
  const fs::path system = dir / "out/tiny_system";
  for (const char* file : {"networks/epoch.3.pt", "networks/avg_model.pt", "networks/avg_model.pt.sha256",
                           "large_margin/epoch.2.pt", "large_margin/avg_model.pt", "embeddings/trial.scp",
                           "embeddings/plda.scp", "embeddings/plda.utt2spk"}) {
    EXPECT_TRUE(fs::exists(system / file)) << file;
  }
  // Stage 8 extracted with the fine-tuned model.
  std::ifstream info(system / "embeddings/info.json");
  const std::string info_text((std::istreambuf_iterator<char>(info)), std::istreambuf_iterator<char>());
  EXPECT_NE(info_text.find("large_margin/avg_model.pt"), std::string::npos) << info_text;
  EXPECT_EQ(CountLines(system / "embeddings/plda.scp"), 20u);
  EXPECT_EQ(CountLines(system / "scores/scores_veri_test.txt"), trials);

  std::set<std::string> kinds;
  for (const auto& artifact : database.Artifacts(runs[0].id)) kinds.insert(artifact.record.kind);
  for (const char* kind : {"list", "pcm", "checkpoint", "model", "embeddings", "scores", "det", "results",
                           "thresholds"}) {
    EXPECT_EQ(kinds.count(kind), 1u) << kind;
  }
  // The decision thresholds of the system: the list's EER and the score at it, and the Bayes
  // thresholds log((1 - p) / p) of the three operating points (uncalibrated scores here).
  const auto thresholds = nlohmann::json::parse(testing::Slurp(system / "backend/thresholds.json"));
  EXPECT_EQ(thresholds["calibrated"], false);
  ASSERT_TRUE(thresholds["lists"].contains("tiny_trials")) << thresholds.dump();
  EXPECT_NEAR(thresholds["lists"]["tiny_trials"]["eer"].get<double>(), results[0].record.eer, 1e-9);
  EXPECT_EQ(thresholds["lists"]["tiny_trials"]["file"], "veri_test.txt");
  EXPECT_TRUE(thresholds["lists"]["tiny_trials"]["eer_threshold"].is_number());
  ASSERT_EQ(thresholds["bayes"].size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const double p = thresholds["bayes"][i]["p_target"];
    EXPECT_EQ(p, results[0].record.costs[i].p_target);
    EXPECT_NEAR(thresholds["bayes"][i]["threshold"].get<double>(), std::log((1 - p) / p), 1e-12);
  }

  // Rerunning stage 1 finds complete stores and decodes nothing.
  const auto again = testing::RunCommand({ASV_ASVRUN, "voxceleb/margin", "tiny", "--run-configs",
                                          "configs/run_configs", "--set", "recipe.start_stage=1", "--set",
                                          "recipe.end_stage=1"},
                                         dir.path());
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE((again.out + again.err).find("already complete"), std::string::npos) << again.err;

  // Stage 9 again with AS-norm against the speaker-mean cohort that stage 8 stored (one mean per
  // back-end speaker) and quality-aware calibration trained on two held-out speakers: the scores
  // become calibrated LLRs, the calibration is saved, and the run's result carries every metric.
  EXPECT_EQ(CountLines(system / "embeddings/cohort.scp"), 5u);
  EXPECT_EQ(CountLines(system / "embeddings/trial.utt2dur"), CountLines(system / "embeddings/trial.scp"));
  const auto raw_scores = eval::ReadScoreFile(system / "scores/scores_veri_test.txt");
  const auto normed = testing::RunCommand(
      {ASV_ASVRUN, "voxceleb/margin", "tiny", "--run-configs", "configs/run_configs", "--set", "recipe.start_stage=9",
       "--set", "backend.score_norm=True", "--set", "backend.calibration='quality'", "--set",
       "backend.keep_degenerate_calibration=True"},
      dir.path());
  ASSERT_EQ(normed.status, 0) << normed.err;
  // Two held-out speakers of the tiny corpus may give trials without information: a degenerate
  // calibration, warned about and, with the setting above, applied all the same.
  if (normed.err.find("calibration (quality) is degenerate") != std::string::npos) {
    EXPECT_NE(normed.err.find("applied anyway"), std::string::npos) << normed.err;
  }
  EXPECT_NE(normed.err.find("as-norm against speaker_means, quality calibration"), std::string::npos) << normed.err;
  EXPECT_NE(normed.err.find("cohort: 5 speaker means from"), std::string::npos) << normed.err;
  EXPECT_NE(normed.err.find("of 2 held-out speakers"), std::string::npos) << normed.err;
  const auto calibration = eval::LoadCalibration(system / "backend/calibration.json");
  EXPECT_EQ(calibration.feature_names, eval::QualityFeatureNames());
  const auto llrs = eval::ReadScoreFile(system / "scores/scores_veri_test.txt");
  ASSERT_EQ(llrs.size(), raw_scores.size());
  EXPECT_NE(llrs, raw_scores);
  const auto normed_runs = database.ListRuns();
  ASSERT_EQ(normed_runs.size(), 3u);
  db::ResultFilter filter;
  filter.run_id = normed_runs[0].id;
  const auto normed_results = database.Results(filter);
  ASSERT_EQ(normed_results.size(), 1u);
  EXPECT_EQ(static_cast<std::size_t>(normed_results[0].record.n_target + normed_results[0].record.n_nontarget),
            trials);
  ASSERT_TRUE(normed_results[0].record.cllr.has_value());
  EXPECT_TRUE(std::isfinite(*normed_results[0].record.cllr));
  EXPECT_EQ(normed_results[0].record.costs.size(), 3u);
  std::set<std::string> normed_kinds;
  for (const auto& artifact : database.Artifacts(normed_runs[0].id)) normed_kinds.insert(artifact.record.kind);
  EXPECT_EQ(normed_kinds.count("calibration"), 1u);
  EXPECT_EQ(nlohmann::json::parse(testing::Slurp(system / "backend/thresholds.json"))["calibrated"], true);
}

}  // namespace
}  // namespace asv
