#include "asvcpp/backend/plda.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "asvcpp/backend/scoring.h"
#include "asvcpp/base/error.h"
#include "asvcpp/eval/metrics.h"

namespace asv::backend {
namespace {

constexpr int kDim = 6;

// Two-covariance model x = y_s + e with y_s ~ N(0, Sb), e ~ N(0, Sw), Sb = A A^T, Sw = B B^T.
struct Synthetic {
  MatrixD sb{kDim, kDim}, sw{kDim, kDim};
  std::vector<double> a, b;
  std::mt19937_64 rng;
  std::normal_distribution<double> g{0, 1};

  explicit Synthetic(std::uint64_t seed) : rng(seed) {
    a.resize(kDim * kDim);
    b.resize(kDim * kDim);
    for (int i = 0; i < kDim; ++i) {
      for (int j = 0; j < kDim; ++j) {
        a[i * kDim + j] = (i == j ? 2.0 : 0.0) + 0.5 * g(rng);
        b[i * kDim + j] = (i == j ? 1.0 : 0.0) + 0.3 * g(rng);
      }
    }
    for (int i = 0; i < kDim; ++i) {
      for (int j = 0; j < kDim; ++j) {
        for (int k = 0; k < kDim; ++k) {
          sb(i, j) += a[i * kDim + k] * a[j * kDim + k];
          sw(i, j) += b[i * kDim + k] * b[j * kDim + k];
        }
      }
    }
  }
  // n_speakers x per_speaker rows, speakers interleaved (row r belongs to speaker r % n_speakers).
  void Draw(int n_speakers, int per_speaker, Matrix* x, std::vector<std::int64_t>* spk) {
    std::vector<std::vector<double>> y(n_speakers, std::vector<double>(kDim));
    for (auto& ys : y) {
      std::vector<double> z(kDim);
      for (double& v : z) v = g(rng);
      for (int i = 0; i < kDim; ++i) {
        ys[i] = 0;
        for (int k = 0; k < kDim; ++k) ys[i] += a[i * kDim + k] * z[k];
      }
    }
    *x = Matrix(n_speakers * per_speaker, kDim);
    spk->clear();
    for (int r = 0; r < n_speakers * per_speaker; ++r) {
      const int s = r % n_speakers;
      std::vector<double> z(kDim);
      for (double& v : z) v = g(rng);
      for (int i = 0; i < kDim; ++i) {
        double e = 0;
        for (int k = 0; k < kDim; ++k) e += b[i * kDim + k] * z[k];
        (*x)(r, i) = static_cast<float>(y[s][i] + e);
      }
      spk->push_back(1000 + 7 * s);
    }
  }
};

double RelativeFrobenius(const MatrixD& est, const MatrixD& truth) {
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < est.rows() * est.cols(); ++i) {
    num += (est.data()[i] - truth.data()[i]) * (est.data()[i] - truth.data()[i]);
    den += truth.data()[i] * truth.data()[i];
  }
  return std::sqrt(num / den);
}

TEST(Plda, RecoversGeneratingCovariances) {
  Synthetic model(11);
  Matrix x;
  std::vector<std::int64_t> spk;
  model.Draw(2000, 10, &x, &spk);
  const Plda plda = Plda::TrainClosedForm(x, spk, {WithinClassDivisor::kUnbiased});
  EXPECT_EQ(plda.n_vectors(), 20000);
  EXPECT_EQ(plda.n_speakers(), 2000);
  EXPECT_LT(RelativeFrobenius(plda.within_covariance(), model.sw), 0.03);
  EXPECT_LT(RelativeFrobenius(plda.between_covariance(), model.sb), 0.08);
  // ASVtorch's divisor: Sw scaled by (N - K) / (N - 1), St identical.
  const Plda asvtorch = Plda::TrainClosedForm(x, spk);
  const MatrixD sw_a = asvtorch.within_covariance();
  const MatrixD sw_u = plda.within_covariance();
  for (int i = 0; i < kDim * kDim; ++i) {
    EXPECT_NEAR(sw_a.data()[i], sw_u.data()[i] * (20000.0 - 2000.0) / 19999.0, 1e-9);
    EXPECT_EQ(asvtorch.total_covariance().data()[i], plda.total_covariance().data()[i]);
  }
}

TEST(Plda, SpeakerLabelTypesAndRowOrderDoNotMatter) {
  Synthetic model(12);
  Matrix x;
  std::vector<std::int64_t> spk;
  model.Draw(30, 4, &x, &spk);
  std::vector<std::string> names;
  for (auto s : spk) names.push_back("spk" + std::to_string(s));
  const Plda a = Plda::TrainClosedForm(x, spk);
  const Plda b = Plda::TrainClosedForm(x, names);
  for (int i = 0; i < kDim * kDim; ++i) EXPECT_EQ(a.between_covariance().data()[i], b.between_covariance().data()[i]);
  // Reversed rows: same model up to rounding.
  Matrix xr(x.rows(), x.cols());
  std::vector<std::int64_t> sr;
  for (std::int64_t r = x.rows() - 1; r >= 0; --r) {
    std::copy(x.row(r), x.row(r) + kDim, xr.row(x.rows() - 1 - r));
    sr.push_back(spk[r]);
  }
  const Plda c = Plda::TrainClosedForm(xr, sr);
  for (int i = 0; i < kDim * kDim; ++i) EXPECT_NEAR(a.between_covariance().data()[i], c.between_covariance().data()[i], 1e-9);
}

TEST(Plda, SeparatesTargetsFromNonTargets) {
  Synthetic model(13);
  Matrix train, test;
  std::vector<std::int64_t> train_spk, test_spk;
  model.Draw(300, 8, &train, &train_spk);
  model.Draw(50, 4, &test, &test_spk);
  const Plda plda = Plda::TrainClosedForm(train, train_spk);
  const Scorer scorer = plda.MakeScorer(kDim);
  EXPECT_EQ(scorer.dim(), kDim);
  EXPECT_EQ(scorer.name(), "plda(dim=6)");
  std::vector<TrialIndex> trials;
  std::vector<eval::TrialLabel> labels;
  for (std::int64_t i = 0; i < test.rows(); ++i) {
    for (std::int64_t j = i + 1; j < test.rows(); ++j) {
      trials.push_back({i, j});
      labels.push_back(test_spk[i] == test_spk[j] ? eval::TrialLabel::kTarget : eval::TrialLabel::kNonTarget);
    }
  }
  const std::vector<float> s = ScoreTrials(scorer, test, trials);
  const eval::Metrics m = eval::ComputeMetrics(std::vector<double>(s.begin(), s.end()), labels);
  EXPECT_EQ(m.counts.n_target, 50 * 6);
  EXPECT_LT(m.eer.percent(), 5.0);
  // The scoring matrices have the documented shapes and descending singular values.
  const PldaScoringMatrices sm = plda.ScoringMatrices(3);
  EXPECT_EQ(sm.projection.rows(), kDim);
  EXPECT_EQ(sm.projection.cols(), 3);
  EXPECT_EQ(sm.quadratic.rows(), 3);
  ASSERT_EQ(sm.cross.size(), 3u);
  EXPECT_GE(sm.cross[0], sm.cross[1]);
  EXPECT_GE(sm.cross[1], sm.cross[2]);
}

TEST(Plda, SingularTotalCovarianceIsAClearError) {
  Synthetic model(14);
  Matrix x;
  std::vector<std::int64_t> spk;
  model.Draw(2, 2, &x, &spk);  // 4 vectors in 6 dimensions: St has rank 3
  const Plda plda = Plda::TrainClosedForm(x, spk);
  try {
    plda.MakeScorer(kDim);
    FAIL() << "no error";
  } catch (const DataError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("total covariance St is singular"), std::string::npos) << what;
    EXPECT_NE(what.find("4 vectors of 2 speakers in dimension 6"), std::string::npos) << what;
  }
}

TEST(Plda, OneVectorPerSpeakerIsAClearError) {
  Synthetic model(15);
  Matrix x;
  std::vector<std::int64_t> spk;
  model.Draw(100, 1, &x, &spk);  // Sw = 0
  const Plda plda = Plda::TrainClosedForm(x, spk);
  EXPECT_THROW(plda.MakeScorer(kDim), DataError);
  EXPECT_THROW(Plda::TrainClosedForm(x, spk, {WithinClassDivisor::kUnbiased}), DataError);
}

TEST(Plda, RidgeMakesASingularModelUsable) {
  Synthetic model(16);
  Matrix x;
  std::vector<std::int64_t> spk;
  model.Draw(2, 2, &x, &spk);
  const Plda plda = Plda::TrainClosedForm(x, spk);
  const Scorer scorer = plda.MakeScorer(kDim, 0.1);
  const Matrix s = scorer.ScoreAllVsAll(x, x);
  for (std::int64_t i = 0; i < s.rows() * s.cols(); ++i) EXPECT_TRUE(std::isfinite(s.data()[i]));
  EXPECT_THROW(plda.MakeScorer(kDim, -1.0), ConfigError);
}

TEST(Plda, BadArguments) {
  Synthetic model(17);
  Matrix x;
  std::vector<std::int64_t> spk;
  model.Draw(20, 3, &x, &spk);
  const Plda plda = Plda::TrainClosedForm(x, spk);
  EXPECT_THROW(plda.MakeScorer(0), ConfigError);
  EXPECT_THROW(plda.MakeScorer(kDim + 1), ConfigError);
  EXPECT_THROW(Plda().MakeScorer(1), ConfigError);
  EXPECT_THROW(Plda::TrainClosedForm(x, std::vector<std::int64_t>{1, 2}), std::invalid_argument);
  EXPECT_THROW(Plda::TrainClosedForm(Matrix(1, 3), std::vector<std::int64_t>{1}), DataError);
  EXPECT_THROW(Plda(MatrixD(2, 2), MatrixD(3, 3)), std::invalid_argument);
  const Scorer scorer = plda.MakeScorer(2);
  EXPECT_THROW(scorer.ScoreAllVsAll(Matrix(2, kDim + 1), Matrix(2, kDim + 1)), std::invalid_argument);
}

TEST(Plda, SaveLoadRoundTrip) {
  Synthetic model(18);
  Matrix x;
  std::vector<std::int64_t> spk;
  model.Draw(40, 5, &x, &spk);
  const Plda plda = Plda::TrainClosedForm(x, spk);
  const auto path = std::filesystem::temp_directory_path() / ("asv_plda_test_" + std::to_string(::getpid()) + ".bin");
  plda.Save(path);
  const Plda loaded = Plda::Load(path);
  std::filesystem::remove(path);
  EXPECT_EQ(loaded.total_covariance(), plda.total_covariance());
  EXPECT_EQ(loaded.between_covariance(), plda.between_covariance());
  EXPECT_EQ(loaded.n_vectors(), 200);
  EXPECT_EQ(loaded.n_speakers(), 40);
  EXPECT_EQ(loaded.MakeScorer(4).ScoreAllVsAll(x, x), plda.MakeScorer(4).ScoreAllVsAll(x, x));
  EXPECT_THROW(Plda::Load(path), DataError);
}

}  // namespace
}  // namespace asv::backend
