// Scoring new trials against a finished system (recipes/shared/verification.h): the back end that
// BuildSystemBackend rebuilds from a system folder scores a trial of VerifyTrials exactly as the
// whole trial list is scored (stage 9's way: every trial side prepared at once), bit for bit;
// several enrollment files are averaged; decisions follow the stored thresholds.
#include "recipes/shared/verification.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/eval/score_file.h"
#include "tests/tools/test_util.h"

namespace asv::recipes::shared {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kDim = 12;

// Random embeddings around a mean per speaker: `speakers` x `per_speaker` rows.
backend::Embeddings SpeakerEmbeddings(int speakers, int per_speaker, std::mt19937& gen, const std::string& prefix,
                                      std::vector<std::string>* speaker_of = nullptr) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  backend::Embeddings e;
  e.vectors = asv::Matrix(speakers * per_speaker, kDim);
  for (int s = 0; s < speakers; ++s) {
    std::vector<float> mean(kDim);
    for (auto& m : mean) m = 2.0f * normal(gen);
    for (int u = 0; u < per_speaker; ++u) {
      const std::int64_t row = s * per_speaker + u;
      for (std::int64_t c = 0; c < kDim; ++c) e.vectors(row, c) = mean[static_cast<std::size_t>(c)] + normal(gen);
      e.ids.push_back(fmt::format("{}{}-{}", prefix, s, u));
      e.durations.push_back(2.0 + u);
      if (speaker_of) speaker_of->push_back(fmt::format("{}{}", prefix, s));
    }
  }
  return e;
}

class VerificationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 gen(5);
    std::vector<std::string> speakers;
    plda_ = SpeakerEmbeddings(20, 6, gen, "spk", &speakers);
    backend::WriteEmbeddings(system_ / "embeddings/plda", plda_);
    std::string utt2spk;
    for (std::size_t i = 0; i < plda_.ids.size(); ++i) utt2spk += plda_.ids[i] + " " + speakers[i] + "\n";
    asv::fs::WriteFileAtomic(system_ / "embeddings/plda.utt2spk", utt2spk);
    trial_ = SpeakerEmbeddings(4, 3, gen, "t");
    settings_.plda_dim = 6;
  }

  SystemBackend Build() const {
    return BuildSystemBackend(system_.path(), settings_,
                              [&](const backend::Embeddings& plda, const std::vector<std::string>& speakers) {
                                return StoredSpeakerCohort(system_.path(), plda, speakers);
                              });
  }

  // Every pair of trial_ rows (i, j), i != j, scored as stage 9 scores a list.
  std::vector<double> StageNineScores(const SystemBackend& system, eval::TrialList* trials) const {
    for (std::size_t i = 0; i < trial_.ids.size(); ++i) {
      for (std::size_t j = 0; j < trial_.ids.size(); ++j) {
        if (i == j) continue;
        trials->left.push_back(trial_.ids[i]);
        trials->right.push_back(trial_.ids[j]);
        trials->label.push_back("target");
        trials->line.push_back(static_cast<std::int64_t>(trials->left.size()));
      }
    }
    return system.backend->Score(system.backend->Prepare(trial_), *trials);
  }

  static backend::Embeddings Row(const backend::Embeddings& e, std::size_t i) {
    backend::Embeddings one;
    one.ids = {e.ids[i]};
    one.vectors = asv::Matrix(1, e.vectors.cols());
    for (std::int64_t c = 0; c < e.vectors.cols(); ++c) one.vectors(0, c) = e.vectors(static_cast<std::int64_t>(i), c);
    one.durations = {e.durations[i]};
    return one;
  }

  testing::ScratchDir system_{"verification"};
  backend::Embeddings plda_, trial_;
  settings::BackendSettings settings_;
};

TEST_F(VerificationTest, ATrialScoresAsInItsListBitForBit) {
  for (bool as_norm : {false, true}) {
    SCOPED_TRACE(as_norm ? "PLDA with AS-norm" : "PLDA");
    settings_.score_norm = as_norm;
    settings_.score_norm_adaptive_cohort_size = 10;
    const auto system = Build();
    eval::TrialList trials;
    const auto expected = StageNineScores(system, &trials);
    SystemThresholds thresholds;
    thresholds.eer = {{"eer", 0.0, "list", 0.0, false}};
    for (std::size_t k : {0u, 5u, 17u, 100u}) {
      ASSERT_LT(k, expected.size());
      const std::size_t i = std::stoul(trials.left[k].substr(1, 1)) * 3 + std::stoul(trials.left[k].substr(3));
      const std::size_t j = std::stoul(trials.right[k].substr(1, 1)) * 3 + std::stoul(trials.right[k].substr(3));
      ASSERT_EQ(trial_.ids[i], trials.left[k]);
      ASSERT_EQ(trial_.ids[j], trials.right[k]);
      const auto got = VerifyTrials(system, thresholds, {EnrollmentSide{Row(trial_, i)}}, Row(trial_, j));
      ASSERT_EQ(got.size(), 1u);
      EXPECT_EQ(got[0].score, expected[k]) << trials.left[k] << " " << trials.right[k];
      EXPECT_EQ(got[0].enrollment, trial_.ids[i]);
      EXPECT_EQ(got[0].test, trial_.ids[j]);
      ASSERT_EQ(got[0].decisions.size(), 1u);
      EXPECT_EQ(got[0].decisions[0].accept, expected[k] >= 0.0);
    }
  }
}

TEST_F(VerificationTest, SeveralEnrollmentFilesAreAveraged) {
  const auto system = Build();
  backend::Embeddings two = Row(trial_, 0);
  const auto second = Row(trial_, 1);
  two.ids.push_back(second.ids[0]);
  two.durations.push_back(second.durations[0]);
  asv::Matrix both(2, kDim);
  backend::Embeddings mean;
  mean.ids = {"mean"};
  mean.vectors = asv::Matrix(1, kDim);
  for (std::int64_t c = 0; c < kDim; ++c) {
    both(0, c) = trial_.vectors(0, c);
    both(1, c) = trial_.vectors(1, c);
    mean.vectors(0, c) = static_cast<float>((static_cast<double>(both(0, c)) + both(1, c)) / 2);
  }
  two.vectors = both;
  mean.durations = {trial_.durations[0] + trial_.durations[1]};
  SystemThresholds thresholds;
  const auto tests = Row(trial_, 4);
  const auto averaged = VerifyTrials(system, thresholds, {EnrollmentSide{two}}, tests);
  const auto by_hand = VerifyTrials(system, thresholds, {EnrollmentSide{mean}}, tests);
  ASSERT_EQ(averaged.size(), 1u);
  EXPECT_EQ(averaged[0].enrollment, trial_.ids[0] + "+" + trial_.ids[1]);
  EXPECT_EQ(averaged[0].score, by_hand[0].score);
  EXPECT_NE(averaged[0].score, VerifyTrials(system, thresholds, {EnrollmentSide{Row(trial_, 0)}}, tests)[0].score);
}

TEST_F(VerificationTest, DecisionsFollowTheStoredThresholds) {
  asv::fs::WriteFileAtomic(ThresholdsFile(system_.path()),
                           R"({"calibrated": true, "bayes": [{"p_target": 0.05, "c_miss": 1, "c_fa": 1,
                               "threshold": 2.944}, {"p_target": 0.01, "c_miss": 1, "c_fa": 1, "threshold": 4.595}],
                               "lists": {"vox1_o": {"file": "veri_test.txt", "eer": 1.5, "eer_threshold": -0.3,
                               "min_dcf_p_target": 0.05, "min_dcf_threshold": 1.2}}})");
  auto thresholds = ReadThresholds(system_.path());
  EXPECT_TRUE(thresholds.calibrated);
  ASSERT_EQ(thresholds.bayes.size(), 2u);
  EXPECT_EQ(thresholds.bayes[1].p_target, 0.01);
  ASSERT_EQ(thresholds.eer.size(), 1u);
  EXPECT_EQ(thresholds.eer[0].list, "vox1_o");
  const auto system = Build();
  const auto results = VerifyTrials(system, thresholds, {EnrollmentSide{Row(trial_, 0)}}, trial_);
  ASSERT_EQ(results.size(), trial_.ids.size());
  for (const auto& r : results) {
    ASSERT_EQ(r.decisions.size(), 2u);  // calibrated: the Bayes thresholds
    EXPECT_EQ(r.decisions[0].kind, "bayes");
    EXPECT_EQ(r.decisions[0].accept, r.score >= 2.944);
    EXPECT_EQ(r.decisions[1].accept, r.score >= 4.595);
  }
  thresholds.calibrated = false;
  const auto uncalibrated = VerifyTrials(system, thresholds, {EnrollmentSide{Row(trial_, 0)}}, Row(trial_, 1));
  ASSERT_EQ(uncalibrated[0].decisions.size(), 1u);
  EXPECT_EQ(uncalibrated[0].decisions[0].kind, "eer");
  EXPECT_EQ(uncalibrated[0].decisions[0].list, "vox1_o");
  EXPECT_EQ(uncalibrated[0].decisions[0].accept, uncalibrated[0].score >= -0.3);
}

TEST_F(VerificationTest, MissingThresholdsAndWrongDimensionsAreNamed) {
  try {
    ReadThresholds(system_.path());
    FAIL() << "no thresholds file, no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("thresholds.json: missing: run stage 9"), std::string::npos) << e.what();
  }
  const auto system = Build();
  backend::Embeddings wrong;
  wrong.ids = {"x"};
  wrong.vectors = asv::Matrix(1, kDim + 1);
  try {
    VerifyTrials(system, {}, {EnrollmentSide{Row(trial_, 0)}}, wrong);
    FAIL() << "a 13-dim embedding was scored";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("dimension 13, the system's back end takes 12"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace asv::recipes::shared
