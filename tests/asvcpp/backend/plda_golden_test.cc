// Compares the back-end with an independent NumPy/SciPy implementation of the same formulas.
// Golden file: tests/asvcpp/backend/golden/plda_golden.json, made by
// tools/golden/make_plda_golden.py (its docstring has the command, data generator and versions).
// This file is compiled with -ffp-contract=off so the data generator rounds like Python.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "asvcpp/backend/plda.h"
#include "asvcpp/backend/score_norm.h"
#include "asvcpp/backend/scoring.h"
#include "asvcpp/backend/vector_processor.h"
#include "asvcpp/eval/metrics.h"
#include "tests/asvcpp/eval/golden_scores.h"
#include "tests/build_paths.h"

namespace asv::backend {
namespace {

using nlohmann::json;
constexpr int kDim = 16;

const json& Golden() {
  static const json doc = [] {
    std::ifstream in(std::string(ASV_SOURCE_DIR) + "/tests/asvcpp/backend/golden/plda_golden.json");
    if (!in) throw std::runtime_error("cannot open plda_golden.json");
    return json::parse(in);
  }();
  return doc;
}

using eval::testing::SplitMix64;

struct Data {
  Matrix train, test;
  std::vector<std::string> train_spk;
  std::vector<int> test_spk;
};

// The generator of make_plda_golden.py.
Data Generate() {
  SplitMix64 rng(2024);
  std::vector<double> a(kDim * kDim), b(kDim * kDim), mu(kDim);
  for (double& v : a) v = (rng.Uniform() - 0.5) * 2.0;
  for (double& v : b) v = (rng.Uniform() - 0.5) * 1.2;
  for (double& v : mu) v = (rng.Uniform() - 0.5) * 4.0;
  auto speaker_rows = [&](int n) {
    std::vector<double> y(kDim), e(kDim);
    for (double& v : y) v = rng.IrwinHall();
    std::vector<std::vector<float>> rows;
    for (int r = 0; r < n; ++r) {
      for (double& v : e) v = rng.IrwinHall();
      std::vector<float> row(kDim);
      for (int i = 0; i < kDim; ++i) {
        double acc = mu[i];
        for (int j = 0; j < kDim; ++j) acc = acc + a[i * kDim + j] * y[j];
        for (int j = 0; j < kDim; ++j) acc = acc + b[i * kDim + j] * e[j];
        row[i] = static_cast<float>(acc);
      }
      rows.push_back(row);
    }
    return rows;
  };
  std::vector<std::vector<float>> train;
  std::vector<std::string> spk;
  for (int s = 0; s < 40; ++s) {
    for (auto& r : speaker_rows(6)) {
      train.push_back(r);
      char name[8];
      std::snprintf(name, sizeof name, "s%02d", s);
      spk.push_back(name);
    }
  }
  Data d;
  d.train = Matrix(240, kDim);
  for (int i = 0; i < 240; ++i) {
    const int k = (7 * i) % 240;
    std::copy(train[k].begin(), train[k].end(), d.train.row(i));
    d.train_spk.push_back(spk[k]);
  }
  d.test = Matrix(48, kDim);
  for (int s = 0; s < 12; ++s) {
    const auto rows = speaker_rows(4);
    for (int r = 0; r < 4; ++r) {
      std::copy(rows[r].begin(), rows[r].end(), d.test.row(s * 4 + r));
      d.test_spk.push_back(s);
    }
  }
  return d;
}

const Data& TheData() {
  static const Data d = Generate();
  return d;
}

std::vector<TrialIndex> AllPairs() {
  std::vector<TrialIndex> t;
  for (int i = 0; i < 48; ++i) {
    for (int j = i + 1; j < 48; ++j) t.push_back({i, j});
  }
  return t;
}

// |a - b| <= rel * max(|b|, median |golden|): relative, with a floor for scores near zero.
void ExpectScoresClose(const std::vector<float>& got, const std::vector<double>& want, double rel) {
  ASSERT_EQ(got.size(), want.size());
  std::vector<double> mags;
  for (double w : want) mags.push_back(std::fabs(w));
  std::nth_element(mags.begin(), mags.begin() + mags.size() / 2, mags.end());
  const double floor = mags[mags.size() / 2];
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double tol = rel * std::max(std::fabs(want[i]), floor);
    EXPECT_NEAR(got[i], want[i], tol) << "trial " << i;
    worst = std::max(worst, std::fabs(got[i] - want[i]) / std::max(std::fabs(want[i]), floor));
  }
  std::printf("worst relative score difference: %.3g\n", worst);
}

void ExpectMatrixClose(const MatrixD& got, const json& want, double rel) {
  double scale = 0;
  for (const auto& row : want) for (double v : row) scale = std::max(scale, std::fabs(v));
  ASSERT_EQ(got.rows(), static_cast<std::int64_t>(want.size()));
  for (std::int64_t i = 0; i < got.rows(); ++i) {
    for (std::int64_t j = 0; j < got.cols(); ++j) EXPECT_NEAR(got(i, j), want[i][j].get<double>(), rel * scale) << i << "," << j;
  }
}

TEST(PldaGolden, GeneratorMatchesPython) {
  const json& g = Golden().at("data");
  const Data& d = TheData();
  const auto first = g.at("train_first_row").get<std::vector<double>>();
  const auto last = g.at("test_last_row").get<std::vector<double>>();
  for (int j = 0; j < kDim; ++j) {
    EXPECT_EQ(static_cast<double>(d.train(0, j)), first[j]);
    EXPECT_EQ(static_cast<double>(d.test(47, j)), last[j]);
  }
  const auto spk = g.at("train_first_speakers").get<std::vector<std::string>>();
  EXPECT_EQ(std::vector<std::string>(d.train_spk.begin(), d.train_spk.begin() + 5), spk);
}

TEST(PldaGolden, VectorProcessing) {
  const Data& d = TheData();
  for (const char* instruction : {"cwl", "cwlcw"}) {
    SCOPED_TRACE(instruction);
    const VectorProcessor vp = VectorProcessor::Train(d.train, instruction);
    const Matrix got = vp.Process(d.test);
    const json& want = Golden().at(std::string("processed_test_") + instruction);
    for (int i = 0; i < 48; ++i) {
      for (int j = 0; j < kDim; ++j) EXPECT_NEAR(got(i, j), want[i][j].get<double>(), 2e-5) << i << "," << j;
    }
  }
}

TEST(PldaGolden, PldaModelScoresAndMetrics) {
  const Data& d = TheData();
  Matrix train;
  const VectorProcessor vp = VectorProcessor::Train(d.train, "cwl", &train);
  const Matrix test = vp.Process(d.test);
  const Plda plda = Plda::TrainClosedForm(train, d.train_spk);
  ExpectMatrixClose(plda.total_covariance(), Golden().at("St"), 1e-9);
  ExpectMatrixClose(plda.between_covariance(), Golden().at("Sb"), 1e-9);
  ExpectMatrixClose(Plda::TrainClosedForm(train, d.train_spk, {WithinClassDivisor::kUnbiased}).within_covariance(),
                    Golden().at("Sw_unbiased"), 1e-9);
  const auto sv = Golden().at("singular_values_10").get<std::vector<double>>();
  const PldaScoringMatrices m = plda.ScoringMatrices(10);
  for (int k = 0; k < 10; ++k) EXPECT_NEAR(m.cross[k], sv[k], 1e-7 * sv[0]);

  const std::vector<TrialIndex> trials = AllPairs();
  ASSERT_EQ(trials.size(), Golden().at("n_trials").get<std::size_t>());
  const Scorer plda10 = plda.MakeScorer(10);
  const std::vector<float> s10 = ScoreTrials(plda10, test, trials);
  ExpectScoresClose(s10, Golden().at("scores_plda10").get<std::vector<double>>(), 1e-4);
  ExpectScoresClose(ScoreTrials(plda10, test, trials, {}, ScoringStrategy::kPairwise),
                    Golden().at("scores_plda10").get<std::vector<double>>(), 1e-4);
  ExpectScoresClose(ScoreTrials(plda.MakeScorer(16), test, trials),
                    Golden().at("scores_plda16").get<std::vector<double>>(), 1e-4);
  ExpectScoresClose(ScoreTrials(MakeCosineScorer(), test, trials),
                    Golden().at("scores_cosine").get<std::vector<double>>(), 1e-5);

  // Metrics of the PLDA scores.
  std::vector<eval::TrialLabel> labels;
  for (const TrialIndex& t : trials) {
    labels.push_back(d.test_spk[t.left] == d.test_spk[t.right] ? eval::TrialLabel::kTarget
                                                               : eval::TrialLabel::kNonTarget);
  }
  const eval::Metrics metrics = eval::ComputeMetrics(std::vector<double>(s10.begin(), s10.end()), labels);
  EXPECT_EQ(metrics.counts.n_target, Golden().at("n_target").get<std::int64_t>());
  EXPECT_DOUBLE_EQ(metrics.eer.eer, Golden().at("eer_plda10").get<double>());
  EXPECT_DOUBLE_EQ(metrics.min_dcf.min_dcf, Golden().at("min_dcf_plda10_p0.05").get<double>());

  // Adaptive s-norm with the processed training set as cohort.
  const std::int64_t top_n = Golden().at("snorm_top_n").get<std::int64_t>();
  const SnormStats stats = ComputeAdaptiveSnormStats(plda10, test, train, top_n);
  const auto mean = Golden().at("snorm_mean").get<std::vector<double>>();
  const auto sd = Golden().at("snorm_std").get<std::vector<double>>();
  for (int i = 0; i < 48; ++i) {
    EXPECT_NEAR(stats.mean[i], mean[i], 1e-4 * std::max(1.0, std::fabs(mean[i])));
    EXPECT_NEAR(stats.std[i], sd[i], 1e-3 * sd[i]);
  }
  ExpectScoresClose(ApplySnorm(s10, stats, trials), Golden().at("scores_plda10_snorm").get<std::vector<double>>(), 1e-3);
}

}  // namespace
}  // namespace asv::backend
