#include "asvcpp/eval/calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/eval/llr_metrics.h"

namespace asv::eval {
namespace {

namespace stdfs = std::filesystem;

// Deterministic standard normal variables (Box-Muller on a 64-bit LCG).
class Normal {
 public:
  explicit Normal(std::uint64_t seed) : state_(seed) {}
  double operator()() {
    const double u1 = Uniform(), u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }

 private:
  double Uniform() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return (static_cast<double>(state_ >> 11) + 0.5) * 0x1.0p-53;
  }
  std::uint64_t state_;
};

// Scores of two Gaussian classes with equal variance: the true LLR is linear in the score,
// llr = (mu1 - mu0) / s^2 * x - (mu1^2 - mu0^2) / (2 s^2).
void GaussianScores(std::size_t n, double mu1, double mu0, double sigma, std::vector<double>* tar,
                    std::vector<double>* non, std::uint64_t seed = 3) {
  Normal normal(seed);
  for (std::size_t i = 0; i < n; ++i) tar->push_back(mu1 + sigma * normal());
  for (std::size_t i = 0; i < 4 * n; ++i) non->push_back(mu0 + sigma * normal());
}

TEST(CalibrationTest, RecoversTheTrueLlrOfGaussianScores) {
  std::vector<double> tar, non;
  GaussianScores(20000, 2.0, -1.0, 1.5, &tar, &non);
  const LinearCalibration c = TrainLinearCalibration(tar, non, {"score"});
  const double a = 3.0 / (1.5 * 1.5), b = -(4.0 - 1.0) / (2 * 1.5 * 1.5);
  EXPECT_NEAR(c.weights[0], a, 0.05);
  EXPECT_NEAR(c.bias, b, 0.05);
  EXPECT_LE(c.iterations, 15);
  // Calibrated LLRs: Cllr close to minCllr, actDCF close to minDCF.
  const std::vector<double> tar_llrs = c.ApplyAll(tar), non_llrs = c.ApplyAll(non);
  const double cllr = Cllr(tar_llrs, non_llrs);
  EXPECT_LT(cllr - MinCllr(tar, non), 0.01);
  EXPECT_GT(Cllr(tar, non), cllr + 0.02);  // the raw scores were not calibrated
  const DcfParams p{0.05, 1, 1};
  EXPECT_LT(ComputeActDcf(tar_llrs, non_llrs, p).act_dcf - ComputeMinDcf(tar, non, p).min_dcf, 0.03);
}

TEST(CalibrationTest, TheSolutionMinimisesTheObjective) {
  std::vector<double> tar, non;
  GaussianScores(3000, 1.0, -0.5, 1.0, &tar, &non, 11);
  // A second, informative feature and a useless one.
  std::vector<double> tar_x, non_x;
  Normal noise(5);
  for (double s : tar) tar_x.insert(tar_x.end(), {s, 0.5 * s + noise(), noise()});
  for (double s : non) non_x.insert(non_x.end(), {s, 0.5 * s + noise(), noise()});
  for (double prior : {0.5, 0.05}) {
    SCOPED_TRACE(prior);
    CalibrationOptions options;
    options.prior = prior;
    options.l2 = 0;
    const LinearCalibration c = TrainLinearCalibration(tar_x, non_x, {"a", "b", "c"}, options);
    const double best = CalibrationObjective(c, tar_x, non_x, prior);
    EXPECT_NEAR(best, c.objective, 1e-12);
    for (std::size_t k = 0; k <= c.dim(); ++k) {
      for (double delta : {-1e-3, 1e-3}) {
        LinearCalibration moved = c;
        (k < c.dim() ? moved.weights[k] : moved.bias) += delta;
        EXPECT_GT(CalibrationObjective(moved, tar_x, non_x, prior), best);
      }
    }
  }
}

TEST(CalibrationTest, AffineChangesOfAFeatureGiveTheSameLlrs) {
  std::vector<double> tar, non;
  GaussianScores(2000, 1.0, -1.0, 1.0, &tar, &non, 7);
  std::vector<double> tar2, non2;
  for (double s : tar) tar2.push_back(1000.0 * s - 250.0);
  for (double s : non) non2.push_back(1000.0 * s - 250.0);
  CalibrationOptions options;
  options.l2 = 0;
  const LinearCalibration c1 = TrainLinearCalibration(tar, non, {"score"}, options);
  const LinearCalibration c2 = TrainLinearCalibration(tar2, non2, {"score"}, options);
  for (std::size_t i = 0; i < tar.size(); i += 97) {
    EXPECT_NEAR(c1.Apply({tar[i]}), c2.Apply({tar2[i]}), 1e-9);
  }
}

TEST(CalibrationTest, SeparableTrialsStayFiniteAndConstantFeaturesAreHarmless) {
  // Perfectly separated scores: without a penalty the weight would grow without bound.
  const LinearCalibration c = TrainLinearCalibration({1.0, 1, 2.0, 1, 3.0, 1}, {-1.0, 1, -2.0, 1}, {"score", "one"});
  EXPECT_TRUE(std::isfinite(c.weights[0]));
  EXPECT_GT(c.weights[0], 0.0);
  EXPECT_GT(c.Apply({1.0, 1}), 0.0);
  EXPECT_LT(c.Apply({-1.0, 1}), 0.0);
}

TEST(CalibrationTest, QualityFeaturesAreSymmetricAndCapped) {
  const auto f = QualityFeatures(0.7, {3.0, 10.0}, {40.0, 12.0});
  ASSERT_EQ(f.size(), QualityFeatureNames().size());
  EXPECT_EQ(f[0], 0.7);
  EXPECT_DOUBLE_EQ(f[1], std::log(3.0));
  EXPECT_DOUBLE_EQ(f[2], std::log(20.0));  // 40 s capped at 20 s
  EXPECT_EQ(f[3], 10.0);
  EXPECT_EQ(f[4], 12.0);
  EXPECT_EQ(QualityFeatures(0.7, {40.0, 12.0}, {3.0, 10.0}), f);
  EXPECT_THROW(QualityFeatures(0.7, {0.0, 1.0}, {1.0, 1.0}), DataError);
}

TEST(CalibrationTest, QualityMeasuresHelpWhenShortTrialsAreLessReliable) {
  // Short trials have compressed scores: the score alone is miscalibrated for them, and the
  // duration features let the calibration scale them back.
  Normal normal(21);
  std::vector<double> tar, non;
  std::vector<double> tar_q, non_q;
  for (int i = 0; i < 24000; ++i) {
    const bool is_target = i % 5 == 0;
    const double duration = (i / 5) % 2 == 0 ? 2.0 : 16.0;
    const double separation = duration < 5 ? 1.0 : 4.0;
    const double score = (is_target ? separation : 0.0) + normal();
    auto& scores = is_target ? tar : non;
    auto& features = is_target ? tar_q : non_q;
    scores.push_back(score);
    const auto q = QualityFeatures(score, {duration, 10.0}, {8.0, 10.0});
    features.insert(features.end(), q.begin(), q.end());
    // An interaction feature (score x log duration) lets a linear model scale by duration.
    features.push_back(score * std::log(duration));
  }
  std::vector<std::string> names = QualityFeatureNames();
  names.push_back("score_x_log_duration");
  const LinearCalibration plain = TrainLinearCalibration(tar, non, {"score"});
  const LinearCalibration quality = TrainLinearCalibration(tar_q, non_q, names);
  const std::size_t d = names.size();
  std::vector<double> tar_llr, non_llr;
  for (std::size_t i = 0; i < tar.size(); ++i) {
    tar_llr.push_back(quality.Apply(std::vector<double>(tar_q.begin() + i * d, tar_q.begin() + (i + 1) * d)));
  }
  for (std::size_t i = 0; i < non.size(); ++i) {
    non_llr.push_back(quality.Apply(std::vector<double>(non_q.begin() + i * d, non_q.begin() + (i + 1) * d)));
  }
  EXPECT_LT(Cllr(tar_llr, non_llr), Cllr(plain.ApplyAll(tar), plain.ApplyAll(non)) - 0.02);
}

TEST(CalibrationTest, SavedCalibrationReadsBackAndBadFilesAreDataErrors) {
  const stdfs::path dir = stdfs::temp_directory_path() / ("asv_calibration_test_" + std::to_string(::getpid()));
  stdfs::create_directories(dir);
  std::vector<double> tar, non;
  GaussianScores(500, 1.0, -1.0, 1.0, &tar, &non);
  const LinearCalibration c = TrainLinearCalibration(tar, non, {"score"});
  SaveCalibration(c, dir / "calibration.json");
  const LinearCalibration back = LoadCalibration(dir / "calibration.json");
  EXPECT_EQ(back.feature_names, c.feature_names);
  EXPECT_EQ(back.weights, c.weights);
  EXPECT_EQ(back.bias, c.bias);
  EXPECT_EQ(back.iterations, c.iterations);
  // With what was done: the extra fields are written and do not disturb reading it back.
  CalibrationUse use;
  use.applied = false;
  use.check.degenerate = true;
  use.check.reason = "why";
  use.check.training_cllr = 0.995;
  use.n_target_trials = 3;
  use.n_nontarget_trials = 4;
  SaveCalibration(c, dir / "with_use.json", &use);
  std::ifstream in(dir / "with_use.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"applied\": false"), std::string::npos) << text;
  EXPECT_NE(text.find("\"degenerate\": true"), std::string::npos) << text;
  EXPECT_NE(text.find("\"degenerate_reason\": \"why\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"n_nontarget_trials\": 4"), std::string::npos) << text;
  EXPECT_EQ(LoadCalibration(dir / "with_use.json").weights, c.weights);
  std::ofstream(dir / "bad.json") << R"({"kind": "linear_calibration", "feature_names": ["a", "b"], "weights": [1],)"
                                  << R"( "bias": 0, "prior": 0.5, "iterations": 1, "objective": 0})";
  try {
    LoadCalibration(dir / "bad.json");
    ADD_FAILURE() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1 weights for 2 feature names"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "truncated.json") << R"({"kind": "linear_cal)";
  EXPECT_THROW(LoadCalibration(dir / "truncated.json"), DataError);
  EXPECT_THROW(LoadCalibration(dir / "missing.json"), DataError);
  stdfs::remove_all(dir);
}

TEST(CalibrationTest, CheckFlagsInvertedAndNonInformativeCalibrations) {
  // Informative scores: positive weight, Cllr far below 1.
  std::vector<double> tar, non;
  GaussianScores(1000, 1.0, -1.0, 1.0, &tar, &non);
  const LinearCalibration good = TrainLinearCalibration(tar, non, {"score"});
  const CalibrationCheck ok = CheckCalibration(good, Cllr(good.ApplyAll(tar), good.ApplyAll(non)), 1000, 1000);
  EXPECT_FALSE(ok.degenerate) << ok.reason;
  EXPECT_TRUE(ok.reason.empty());
  EXPECT_GT(ok.score_weight, 0.0);

  // The classes swapped: the score's weight is negative whatever the Cllr.
  const LinearCalibration inverted = TrainLinearCalibration(non, tar, {"score"});
  const CalibrationCheck inv = CheckCalibration(inverted, Cllr(inverted.ApplyAll(non), inverted.ApplyAll(tar)), 1000, 1000);
  EXPECT_TRUE(inv.degenerate);
  EXPECT_LT(inv.score_weight, 0.0);
  EXPECT_LT(inv.training_cllr, 0.9);  // informative, but in reverse
  EXPECT_NE(inv.reason.find("negative"), std::string::npos) << inv.reason;

  // Both classes from one distribution, few and many trials: degenerate whatever the fit's sign.
  for (const std::size_t n : {20, 1000, 20000}) {
    for (const std::uint64_t seed : {11, 12, 13}) {
      std::vector<double> tar0, non0;
      GaussianScores(n, 0.0, 0.0, 1.0, &tar0, &non0, seed);
      const LinearCalibration flat = TrainLinearCalibration(tar0, non0, {"score"});
      const double flat_cllr = Cllr(flat.ApplyAll(tar0), flat.ApplyAll(non0));
      const auto count = static_cast<std::int64_t>(n);
      EXPECT_TRUE(CheckCalibration(flat, flat_cllr, count, count).degenerate) << n << " " << flat_cllr;
    }
  }
  // Weakly informative scores on few trials (d' = 1.5, 30 trials a class) are not.
  std::vector<double> tar1, non1;
  GaussianScores(30, 0.75, -0.75, 1.0, &tar1, &non1, 5);
  const LinearCalibration weak = TrainLinearCalibration(tar1, non1, {"score"});
  EXPECT_FALSE(CheckCalibration(weak, Cllr(weak.ApplyAll(tar1), weak.ApplyAll(non1)), 30, 30).degenerate);

  // The rule on hand-made values: weight 0 ignores the score; the Cllr bound is strict; the
  // margin is the larger of 0.01 bit and the chance term (k = 2: 10 / (2 ln 2 N_eff)).
  LinearCalibration c;
  c.feature_names = {"score"};
  c.weights = {0.0};
  EXPECT_NE(CheckCalibration(c, 0.5, 1000, 1000).reason.find("ignore"), std::string::npos);
  c.weights = {2.0};
  EXPECT_FALSE(CheckCalibration(c, 0.98, 100000, 100000).degenerate);
  EXPECT_TRUE(CheckCalibration(c, 0.99, 100000, 100000).degenerate);
  EXPECT_DOUBLE_EQ(CheckCalibration(c, 0.5, 100000, 100000).margin, 0.01);
  EXPECT_FALSE(CheckCalibration(c, 0.99, 100000, 100000, 0.005).degenerate);
  EXPECT_TRUE(CheckCalibration(c, 1.2, 100000, 100000).degenerate);
  // 12 target and 264 non-target trials: N_eff = 4 / (1/12 + 1/264) = 45.9, margin 0.157 bit.
  const CalibrationCheck few = CheckCalibration(c, 0.85, 12, 264);
  EXPECT_NEAR(few.margin, 10.0 / (2.0 * std::log(2.0) * 4.0 / (1.0 / 12 + 1.0 / 264)), 1e-12);
  EXPECT_TRUE(few.degenerate);
  EXPECT_FALSE(CheckCalibration(c, 0.80, 12, 264).degenerate);
  EXPECT_THROW(CheckCalibration(c, 0.5, 10, 10, 1.0), std::invalid_argument);
  EXPECT_THROW(CheckCalibration(c, 0.5, 0, 10), std::invalid_argument);
  EXPECT_THROW(CheckCalibration(c, std::nan(""), 10, 10), DataError);
  c.weights.clear();
  EXPECT_THROW(CheckCalibration(c, 0.5, 10, 10), std::invalid_argument);
}

TEST(CalibrationTest, BadInputIsAnError) {
  EXPECT_THROW(TrainLinearCalibration({}, {1.0}, {"s"}), DataError);
  EXPECT_THROW(TrainLinearCalibration({1.0, 2.0, 3.0}, {1.0, 2.0}, {"a", "b"}), std::invalid_argument);
  EXPECT_THROW(TrainLinearCalibration({std::nan("")}, {1.0}, {"s"}), DataError);
  CalibrationOptions bad;
  bad.prior = 1.0;
  EXPECT_THROW(TrainLinearCalibration({1.0}, {0.0}, {"s"}, bad), std::invalid_argument);
  const LinearCalibration c = TrainLinearCalibration({1.0, 2.0}, {0.0, -1.0}, {"s"});
  EXPECT_THROW(c.Apply({1.0, 2.0}), std::invalid_argument);
}

}  // namespace
}  // namespace asv::eval
