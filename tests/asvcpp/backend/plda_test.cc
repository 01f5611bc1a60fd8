#include "asvcpp/backend/plda.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <limits>
#include <string>
#include <map>
#include <random>

#include "asvcpp/backend/scoring.h"
#include "asvcpp/base/error.h"
#include "asvcpp/eval/metrics.h"

namespace asv::backend {
namespace {

constexpr int kDim = 6;

// Two-covariance model x = y_s + e with y_s ~ N(0, Sb), e ~ N(0, Sw), Sb = A A^T, Sw = B B^T.
struct TwoCovarianceModel {
  MatrixD sb{kDim, kDim}, sw{kDim, kDim};
  std::vector<double> a, b;
  std::mt19937_64 rng;
  std::normal_distribution<double> g{0, 1};

  explicit TwoCovarianceModel(std::uint64_t seed) : rng(seed) {
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
  TwoCovarianceModel model(11);
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
  TwoCovarianceModel model(12);
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
  TwoCovarianceModel model(13);
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

// St and Sb by ASVtorch's formulas as written (speaker means removed, the residuals' mean removed,
// divisor N - 1), two-pass in long double: the reference for the streamed single-scatter training.
void ReferenceCovariances(const Matrix& x, const std::vector<std::int64_t>& spk, MatrixD* st, MatrixD* sb) {
  const std::int64_t n = x.rows(), d = x.cols();
  std::map<std::int64_t, std::vector<long double>> sums;
  std::map<std::int64_t, long double> counts;
  std::vector<long double> mean(d, 0), rmean(d, 0);
  for (std::int64_t r = 0; r < n; ++r) {
    auto& s = sums[spk[r]];
    s.resize(d, 0);
    counts[spk[r]] += 1;
    for (std::int64_t i = 0; i < d; ++i) s[i] += x(r, i), mean[i] += x(r, i);
  }
  for (auto& m : mean) m /= n;
  std::vector<std::vector<long double>> res(n, std::vector<long double>(d));
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t i = 0; i < d; ++i) res[r][i] = x(r, i) - sums[spk[r]][i] / counts[spk[r]], rmean[i] += res[r][i] / n;
  }
  *st = MatrixD(d, d);
  *sb = MatrixD(d, d);
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t j = 0; j < d; ++j) {
      long double t = 0, w = 0;
      for (std::int64_t r = 0; r < n; ++r) {
        t += (x(r, i) - mean[i]) * (x(r, j) - mean[j]);
        w += (res[r][i] - rmean[i]) * (res[r][j] - rmean[j]);
      }
      (*st)(i, j) = static_cast<double>(t / (n - 1));
      (*sb)(i, j) = static_cast<double>(t / (n - 1) - w / (n - 1));
    }
  }
}

TEST(Plda, NonFiniteTrainingVectorsAreAClearError) {
  // A NaN or an infinity anywhere (first row, middle, last row: each part of the threaded pass).
  TwoCovarianceModel model(5);
  Matrix x;
  std::vector<std::int64_t> spk;
  model.Draw(40, 10, &x, &spk);
  for (const std::int64_t row : {std::int64_t{0}, x.rows() / 2 + 1, x.rows() - 1}) {
    for (const float bad : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
      Matrix y = x;
      y(row, 1) = bad;
      try {
        Plda::TrainClosedForm(y, spk);
        ADD_FAILURE() << "no error for row " << row;
      } catch (const DataError& e) {
        EXPECT_STREQ(e.what(), "PLDA training vectors contain NaN or infinite values");
      }
    }
  }
  EXPECT_NO_THROW(Plda::TrainClosedForm(x, spk));
}

TEST(Plda, StreamedTrainingMatchesTheResidualFormula) {
  // 9100 rows: two 4096-row blocks and a partial one; an offset of 50 checks the centring.
  TwoCovarianceModel model(21);
  Matrix x;
  std::vector<std::int64_t> spk;
  model.Draw(130, 70, &x, &spk);
  for (std::int64_t i = 0; i < x.rows() * x.cols(); ++i) x.data()[i] += 50.0f;
  MatrixD st, sb;
  ReferenceCovariances(x, spk, &st, &sb);
  const Plda plda = Plda::TrainClosedForm(x, spk);
  double scale = 0;
  for (int i = 0; i < kDim * kDim; ++i) scale = std::max(scale, std::fabs(st.data()[i]));
  for (int i = 0; i < kDim * kDim; ++i) {
    EXPECT_NEAR(plda.total_covariance().data()[i], st.data()[i], 1e-12 * scale) << i;
    EXPECT_NEAR(plda.between_covariance().data()[i], sb.data()[i], 1e-12 * scale) << i;
    EXPECT_EQ(plda.total_covariance().data()[i], plda.total_covariance().data()[(i % kDim) * kDim + i / kDim]);
  }
}

// Gauss-Jordan inverse with partial pivoting, long double (test reference only).
MatrixD Inverse(const MatrixD& m) {
  const std::int64_t n = m.rows();
  std::vector<std::vector<long double>> a(n, std::vector<long double>(2 * n, 0));
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) a[i][j] = m(i, j);
    a[i][n + i] = 1;
  }
  for (std::int64_t c = 0; c < n; ++c) {
    std::int64_t p = c;
    for (std::int64_t r = c + 1; r < n; ++r) if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
    std::swap(a[c], a[p]);
    for (std::int64_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const long double f = a[r][c] / a[c][c];
      for (std::int64_t j = 0; j < 2 * n; ++j) a[r][j] -= f * a[c][j];
    }
  }
  MatrixD out(n, n);
  for (std::int64_t i = 0; i < n; ++i) for (std::int64_t j = 0; j < n; ++j) out(i, j) = static_cast<double>(a[i][n + j] / a[i][i]);
  return out;
}

MatrixD Product(const MatrixD& a, const MatrixD& b) {
  MatrixD c(a.rows(), b.cols());
  for (std::int64_t i = 0; i < a.rows(); ++i)
    for (std::int64_t j = 0; j < b.cols(); ++j)
      for (std::int64_t k = 0; k < a.cols(); ++k) c(i, j) += a(i, k) * b(k, j);
  return c;
}

TEST(Plda, FullDimensionScoreIsTheTwoCovarianceLlr) {
  // With plda_dim = D and P positive semi-definite (Sb from training is), U diag(s) U^T = P, so
  // s(a, b) = a^T Q a + b^T Q b + 2 a^T P b with Q = Lambda - Gamma, P = Lambda Sb Gamma
  // computed here directly (Gauss-Jordan inverses, no decomposition).
  TwoCovarianceModel model(22);
  Matrix x;
  std::vector<std::int64_t> spk;
  model.Draw(200, 6, &x, &spk);
  const Plda plda = Plda::TrainClosedForm(x, spk);
  const MatrixD& st = plda.total_covariance();
  const MatrixD& sb = plda.between_covariance();
  const MatrixD lambda = Inverse(st);
  MatrixD inner = Product(Product(sb, lambda), sb);
  for (int i = 0; i < kDim * kDim; ++i) inner.data()[i] = st.data()[i] - inner.data()[i];
  const MatrixD gamma = Inverse(inner);
  const MatrixD p = Product(Product(lambda, sb), gamma);
  const Matrix got = plda.MakeScorer(kDim).ScoreAllVsAll(x, x);
  for (std::int64_t a = 0; a < 20; ++a) {
    for (std::int64_t b = 0; b < 20; ++b) {
      double want = 0;
      for (int i = 0; i < kDim; ++i) {
        for (int j = 0; j < kDim; ++j) {
          const double q = lambda(i, j) - gamma(i, j);
          want += q * (x(a, i) * x(a, j) + x(b, i) * x(b, j)) + 2 * p(i, j) * x(a, i) * x(b, j);
        }
      }
      EXPECT_NEAR(got(a, b), want, 1e-4 * std::max(1.0, std::fabs(want))) << a << "," << b;
    }
  }
}

TEST(Plda, ScoringMatricesOfADiagonalModelWithANegativeDirection) {
  // St = 2 I, Sb = diag(b) with one negative entry (possible with the N - K divisor): P is diagonal,
  // p_i = 0.5 b_i / (2 - b_i^2 / 2); the SVD that ASVtorch takes gives s = |p| in descending order
  // and U = the matching unit vectors, and Q^ = diag(0.5 - 1 / (2 - b_i^2 / 2)) in that order.
  const std::vector<double> b = {0.2, -1.2, 0.9, 0.05};
  MatrixD st(4, 4), sb(4, 4);
  for (int i = 0; i < 4; ++i) st(i, i) = 2.0, sb(i, i) = b[i];
  const PldaScoringMatrices m = Plda(st, sb).ScoringMatrices(3);
  const int order[3] = {1, 2, 0};
  for (int k = 0; k < 3; ++k) {
    const int i = order[k];
    const double g = 1.0 / (2.0 - b[i] * b[i] / 2.0);
    EXPECT_NEAR(m.cross[k], std::fabs(0.5 * b[i] * g), 1e-12) << k;
    EXPECT_NEAR(m.quadratic(k, k), 0.5 - g, 1e-12) << k;
    for (int r = 0; r < 4; ++r) EXPECT_NEAR(std::fabs(m.projection(r, k)), r == i ? 1.0 : 0.0, 1e-12) << r << "," << k;
  }
}

TEST(Plda, ScoringMatricesFollowAScaleOfTheCovariances) {
  // St and Sb times c: P, Lambda and Gamma scale by 1 / c, so l and Q^ do, and U stays. Checked
  // with c = 2^-+1000 (about 1e-+301, near the ends of the double range) and 2^-+600.
  TwoCovarianceModel model(23);
  Matrix x;
  std::vector<std::int64_t> spk;
  model.Draw(60, 5, &x, &spk);
  const Plda plda = Plda::TrainClosedForm(x, spk);
  const PldaScoringMatrices want = plda.ScoringMatrices(4);
  for (const int e : {-1000, -600, 600, 1000}) {
    SCOPED_TRACE(e);
    MatrixD st = plda.total_covariance(), sb = plda.between_covariance();
    for (std::int64_t i = 0; i < kDim * kDim; ++i) {
      st.data()[i] = std::ldexp(st.data()[i], e);
      sb.data()[i] = std::ldexp(sb.data()[i], e);
    }
    const PldaScoringMatrices got = Plda(st, sb).ScoringMatrices(4);
    std::vector<double> sign(4);  // of each column of U relative to want's
    for (int k = 0; k < 4; ++k) {
      double dot = 0.0;
      for (int r = 0; r < kDim; ++r) dot += got.projection(r, k) * want.projection(r, k);
      sign[k] = dot < 0 ? -1.0 : 1.0;
    }
    for (int k = 0; k < 4; ++k) {
      EXPECT_NEAR(std::ldexp(got.cross[k], e), want.cross[k], 1e-10 * want.cross[0]) << k;
      for (int r = 0; r < kDim; ++r) {
        EXPECT_NEAR(sign[k] * got.projection(r, k), want.projection(r, k), 1e-10) << r << "," << k;
      }
      for (int l = 0; l < 4; ++l) {
        EXPECT_NEAR(sign[k] * sign[l] * std::ldexp(got.quadratic(k, l), e), want.quadratic(k, l), 1e-9 * std::fabs(want.quadratic(0, 0)))
            << k << "," << l;
      }
    }
  }
}

TEST(Plda, SingularTotalCovarianceIsAClearError) {
  TwoCovarianceModel model(14);
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

// St = diag(1, 1, 1, t): its reciprocal condition number is exactly t, so the documented limit
// (<= 1e-10 is rejected) is checked on both sides of it, for St, Sw = St - Sb and St + Sb.
TEST(Plda, IllConditionedCovariancesAreRejectedAtTheDocumentedLimit) {
  auto model = [](double st_last, double sb_last) {
    MatrixD st(4, 4), sb(4, 4);
    for (int i = 0; i < 4; ++i) st(i, i) = 1.0, sb(i, i) = 0.5;
    st(3, 3) = st_last;
    sb(3, 3) = sb_last;
    return Plda(st, sb, 100, 10);
  };
  auto error_of = [](const Plda& plda) -> std::string {
    try {
      plda.ScoringMatrices(2);
    } catch (const DataError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of(model(1e-9, 0.0)), "");
  const std::string st_error = error_of(model(1e-11, 0.0));
  EXPECT_NE(st_error.find("the total covariance St is singular or not positive definite"), std::string::npos) << st_error;
  EXPECT_NE(st_error.find("eigenvalues from 1e-11 to 1"), std::string::npos) << st_error;
  EXPECT_NE(st_error.find("100 vectors of 10 speakers in dimension 4"), std::string::npos) << st_error;
  // Sw = St - Sb = diag(0.5, 0.5, 0.5, 1 - s): reciprocal condition number 2 (1 - s).
  EXPECT_EQ(error_of(model(1.0, 1.0 - 0.5e-8)), "");
  const std::string within_error = error_of(model(1.0, 1.0 - 0.5e-11));
  EXPECT_NE(within_error.find("the within-speaker covariance Sw = St - Sb is singular"), std::string::npos)
      << within_error;
  // St + Sb = diag(1.5, 1.5, 1.5, 1 + s) with s < 0 (a negative between-speaker direction).
  EXPECT_EQ(error_of(model(1.0, -1.0 + 1.5e-8)), "");
  const std::string plus_error = error_of(model(1.0, -1.0 + 1.5e-11));
  EXPECT_NE(plus_error.find("PLDA: St + Sb is singular"), std::string::npos) << plus_error;
  EXPECT_EQ(error_of(model(1.0, 1.0)).find("PLDA: the within-speaker covariance"), 0u);
  EXPECT_EQ(error_of(model(-1.0, 0.0)).find("the total covariance St is singular"), 6u);
}

TEST(Plda, NonFiniteCovariancesAreAClearError) {
  MatrixD st(3, 3), sb(3, 3);
  for (int i = 0; i < 3; ++i) st(i, i) = 1.0;
  sb(1, 2) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(
      {
        try {
          Plda(st, sb).ScoringMatrices(3);
        } catch (const DataError& e) {
          EXPECT_NE(std::string(e.what()).find("NaN or infinite"), std::string::npos) << e.what();
          throw;
        }
      },
      DataError);
  sb(1, 2) = 0.0;
  st(0, 0) = std::numeric_limits<double>::infinity();
  EXPECT_THROW(Plda(st, sb).ScoringMatrices(3), DataError);
}

TEST(Plda, OneVectorPerSpeakerIsAClearError) {
  TwoCovarianceModel model(15);
  Matrix x;
  std::vector<std::int64_t> spk;
  model.Draw(100, 1, &x, &spk);  // Sw = 0
  const Plda plda = Plda::TrainClosedForm(x, spk);
  EXPECT_THROW(plda.MakeScorer(kDim), DataError);
  EXPECT_THROW(Plda::TrainClosedForm(x, spk, {WithinClassDivisor::kUnbiased}), DataError);
}

TEST(Plda, RidgeMakesASingularModelUsable) {
  TwoCovarianceModel model(16);
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
  TwoCovarianceModel model(17);
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
  TwoCovarianceModel model(18);
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
