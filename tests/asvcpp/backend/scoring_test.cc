#include "asvcpp/backend/scoring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "asvcpp/backend/blas.h"
#include "asvcpp/backend/plda.h"
#include "asvcpp/backend/score_norm.h"
#include "asvcpp/backend/top_n.h"
#include "asvcpp/base/error.h"

namespace asv::backend {
namespace {

Matrix RandomMatrix(std::int64_t n, std::int64_t d, std::uint64_t seed, double offset = 0.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0, 1);
  Matrix m(n, d);
  for (std::int64_t i = 0; i < n * d; ++i) m.data()[i] = g(rng) + static_cast<float>(offset);
  return m;
}

// A PLDA model trained on random clustered data of dimension d.
Plda TrainSomePlda(std::int64_t d, std::uint64_t seed) {
  const Matrix centres = RandomMatrix(50, d, seed);
  const Matrix noise = RandomMatrix(500, d, seed + 1);
  Matrix x(500, d);
  std::vector<std::int64_t> spk;
  for (std::int64_t r = 0; r < 500; ++r) {
    for (std::int64_t j = 0; j < d; ++j) x(r, j) = 2 * centres(r % 50, j) + noise(r, j);
    spk.push_back(r % 50);
  }
  return Plda::TrainClosedForm(x, spk);
}

std::vector<TrialIndex> RandomTrials(std::int64_t n_rows, std::int64_t n_trials, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<TrialIndex> t;
  for (std::int64_t i = 0; i < n_trials; ++i) {
    t.push_back({static_cast<std::int64_t>(rng() % n_rows), static_cast<std::int64_t>(rng() % n_rows)});
  }
  return t;
}

void ExpectClose(const std::vector<float>& a, const std::vector<float>& b, double rel) {
  ASSERT_EQ(a.size(), b.size());
  double scale = 0;
  for (float v : b) scale = std::max(scale, std::fabs(double(v)));
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], rel * scale) << i;
}

TEST(Scoring, AllVsAllAndChunkedPairwiseAgree) {
  const Plda plda = TrainSomePlda(20, 1);
  const Scorer scorer = plda.MakeScorer(12);
  const Matrix emb = RandomMatrix(300, 20, 2);
  const std::vector<TrialIndex> trials = RandomTrials(300, 5000, 3);
  ScoringOptions opt;
  opt.pairwise_scoring_chunk_size = 777;  // chunks that do not divide the trial count
  const auto all = ScoreTrials(scorer, emb, trials, opt, ScoringStrategy::kAllVsAll);
  const auto pairwise = ScoreTrials(scorer, emb, trials, opt, ScoringStrategy::kPairwise);
  ExpectClose(all, pairwise, 2e-6);  // float32 rounding of two summation orders only
  // kAuto switches at n_left * n_right <= max_all_vs_all_score_count: the same scores either way.
  opt.max_all_vs_all_score_count = 1;
  EXPECT_EQ(ScoreTrials(scorer, emb, trials, opt), pairwise);
  opt.max_all_vs_all_score_count = 300 * 300;
  EXPECT_EQ(ScoreTrials(scorer, emb, trials, opt), all);
  // Both agree with the Matrix-level API.
  const Matrix m = scorer.ScoreAllVsAll(emb, emb);
  for (std::size_t t = 0; t < 50; ++t) EXPECT_NEAR(all[t], m(trials[t].left, trials[t].right), 1e-4 * std::fabs(m(trials[t].left, trials[t].right)) + 1e-3);
}

// A trial's score is a function of its two vectors alone: scored in a list of 5000 trials over
// 300 vectors, all-vs-all or pairwise, or alone (a 1 x 1 product), PLDA and cosine give the same
// float, bit for bit, and so do the adaptive s-norm statistics of a vector scored with the others
// or alone. (A float sgemm's sums change order with the product's shape.)
TEST(Scoring, ATrialScoresTheSameInAListAndAlone) {
  const Plda plda = TrainSomePlda(20, 1);
  const Matrix emb = RandomMatrix(300, 20, 2);
  const std::vector<TrialIndex> trials = RandomTrials(300, 5000, 3);
  for (const Scorer& scorer : {plda.MakeScorer(12), MakeCosineScorer()}) {
    SCOPED_TRACE(scorer.name());
    ScoringOptions opt;
    const auto all = ScoreTrials(scorer, emb, trials, opt, ScoringStrategy::kAllVsAll);
    const auto pairwise = ScoreTrials(scorer, emb, trials, opt, ScoringStrategy::kPairwise);
    EXPECT_EQ(all, pairwise);
    for (std::size_t t = 0; t < 200; ++t) {
      Matrix two(2, emb.cols());
      for (std::int64_t c = 0; c < emb.cols(); ++c) {
        two(0, c) = emb(trials[t].left, c);
        two(1, c) = emb(trials[t].right, c);
      }
      const auto alone = ScoreTrials(scorer, two, {{0, 1}}, opt, ScoringStrategy::kAllVsAll);
      ASSERT_EQ(alone.size(), 1u);
      EXPECT_EQ(alone[0], all[t]) << "trial " << t;
    }
  }
  const Scorer scorer = plda.MakeScorer(12);
  const Matrix cohort = RandomMatrix(200, 20, 4);
  const SnormStats together = ComputeAdaptiveSnormStats(scorer, emb, cohort, 20, ScoringOptions{});
  for (std::int64_t i = 0; i < 300; i += 37) {
    Matrix one(1, emb.cols());
    for (std::int64_t c = 0; c < emb.cols(); ++c) one(0, c) = emb(i, c);
    const SnormStats alone = ComputeAdaptiveSnormStats(scorer, one, cohort, 20, ScoringOptions{});
    EXPECT_EQ(alone.mean[0], together.mean[static_cast<std::size_t>(i)]) << i;
    EXPECT_EQ(alone.std[0], together.std[static_cast<std::size_t>(i)]) << i;
  }
}

TEST(Scoring, PldaScoresAreSymmetric) {
  const Plda plda = TrainSomePlda(10, 4);
  const Scorer scorer = plda.MakeScorer(10);
  const Matrix a = RandomMatrix(40, 10, 5);
  const Matrix s = scorer.ScoreAllVsAll(a, a);
  for (int i = 0; i < 40; ++i) {
    for (int j = 0; j < 40; ++j) EXPECT_NEAR(s(i, j), s(j, i), 1e-4 * (1 + std::fabs(s(i, j))));
  }
}

TEST(Scoring, CosineScoresAreInUnitRange) {
  const Scorer cosine = MakeCosineScorer();
  EXPECT_EQ(cosine.dim(), -1);
  Matrix a = RandomMatrix(60, 9, 6, 0.5);
  for (int j = 0; j < 9; ++j) a(0, j) = 0.0f;          // zero vector
  for (int j = 0; j < 9; ++j) a(1, j) = 3.0f * a(2, j);  // parallel to row 2
  for (int j = 0; j < 9; ++j) a(3, j) = -a(2, j);        // opposite
  const Matrix s = cosine.ScoreAllVsAll(a, a);
  for (std::int64_t i = 0; i < s.rows() * s.cols(); ++i) {
    EXPECT_GE(s.data()[i], -1.0f);
    EXPECT_LE(s.data()[i], 1.0f);
  }
  EXPECT_EQ(s(0, 5), 0.0f);
  EXPECT_NEAR(s(1, 2), 1.0f, 1e-6);
  EXPECT_NEAR(s(2, 3), -1.0f, 1e-6);
  const auto p = cosine.ScorePairs(a, a);
  EXPECT_EQ(p[0], 0.0f);
  EXPECT_NEAR(p[4], 1.0f, 1e-6);
  // Trial scoring works for any dimension and both strategies.
  const auto trials = RandomTrials(60, 1000, 7);
  ExpectClose(ScoreTrials(cosine, a, trials, {}, ScoringStrategy::kAllVsAll),
              ScoreTrials(cosine, a, trials, {}, ScoringStrategy::kPairwise), 1e-6);
}

// Row-major products through sgemm against a triple loop in double, for both layouts of B,
// row strides wider than the rows, beta 0 (C's old values ignored, here NaN) and beta 1.
TEST(Blas, GemmRowMajorMatchesTheDefinition) {
  const std::int64_t m = 7, n = 5, k = 3, lda = 4, ldb_n = 6, ldb_t = 4, ldc = 9;
  const Matrix a = RandomMatrix(m, lda, 21), bn = RandomMatrix(k, ldb_n, 22), bt = RandomMatrix(n, ldb_t, 23);
  const Matrix c0 = RandomMatrix(m, ldc, 24);
  for (const bool transpose_b : {false, true}) {
    for (const float beta : {0.0f, 1.0f}) {
      Matrix c = c0;
      if (beta == 0.0f) {
        for (std::int64_t i = 0; i < m * ldc; ++i) c.data()[i] = std::nanf("");
      }
      const Matrix& b = transpose_b ? bt : bn;
      GemmRowMajor(transpose_b, m, n, k, a.data(), lda, b.data(), b.cols(), beta, c.data(), ldc);
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
          double want = beta * c0(i, j);
          for (std::int64_t l = 0; l < k; ++l) want += double(a(i, l)) * (transpose_b ? b(j, l) : b(l, j));
          EXPECT_NEAR(c(i, j), want, 1e-5) << i << "," << j << " transpose_b=" << transpose_b << " beta=" << beta;
        }
        // Columns past n are not written.
        if (beta == 0.0f) {
          EXPECT_TRUE(std::isnan(c(i, n)));
        }
      }
    }
  }
  // Empty products: nothing to compute, no BLAS argument error; k = 0 gives beta C.
  GemmRowMajor(false, 0, n, k, a.data(), lda, bn.data(), ldb_n, 0.0f, nullptr, ldc);
  Matrix c(2, 2, 5.0f);
  GemmRowMajor(false, 2, 2, 0, a.data(), 0, bn.data(), 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, Matrix(2, 2, 0.0f));
}

// Column-major lower triangular matrices of sizes on both sides of the 64-column leaf (one, two
// and three levels of recursion, odd splits) with a leading dimension wider than n: L X = I to
// rounding, the strict upper triangle and the rows past n untouched (NaN before and after).
TEST(Blas, InvertLowerTriangularGivesTheInverse) {
  for (const int n : {1, 2, 63, 64, 65, 130, 257}) {
    const int lda = n + 3;
    std::mt19937 rng(static_cast<unsigned>(n));
    std::normal_distribution<double> normal(0.0, 1.0 / std::sqrt(static_cast<double>(n)));
    std::uniform_real_distribution<double> diagonal(1.0, 2.0);
    std::vector<double> l(static_cast<std::size_t>(lda) * n, std::nan(""));
    auto at = [&](std::vector<double>& m, int i, int j) -> double& { return m[static_cast<std::size_t>(j) * lda + i]; };
    for (int j = 0; j < n; ++j) {
      at(l, j, j) = (j % 2 ? -1.0 : 1.0) * diagonal(rng);
      for (int i = j + 1; i < n; ++i) at(l, i, j) = normal(rng);
    }
    std::vector<double> x = l;
    InvertLowerTriangular(n, x.data(), lda);
    double worst = 0.0;
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < lda; ++i) {
        if (i < j || i >= n) {
          EXPECT_TRUE(std::isnan(at(x, i, j))) << "n=" << n << " (" << i << ", " << j << ") was written";
          continue;
        }
        long double sum = 0.0L;  // (L X)(i, j), both lower triangular
        for (int k = j; k <= i; ++k) sum += static_cast<long double>(at(l, i, k)) * at(x, k, j);
        worst = std::max(worst, static_cast<double>(std::fabs(sum - (i == j ? 1.0L : 0.0L))));
      }
    }
    EXPECT_LT(worst, 1e-13) << "n=" << n;
  }
}

TEST(Blas, InvertLowerTriangularRejectsASingularMatrix) {
  std::vector<double> l = {2.0, 1.0, 5.0, 0.0, 4.0, 3.0, 0.0, 0.0, 0.0};  // column-major 3 x 3, l(2, 2) = 0
  const std::vector<double> before = l;
  try {
    InvertLowerTriangular(3, l.data(), 3);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("diagonal entry 2 is 0"), std::string::npos) << e.what();
  }
  EXPECT_EQ(l, before);
  EXPECT_THROW(InvertLowerTriangular(3, l.data(), 2), std::invalid_argument);
  InvertLowerTriangular(0, nullptr, 1);  // empty: nothing to do
}

TEST(Scoring, CosineAllVsAllMatchesTheDefinition) {
  const Scorer cosine = MakeCosineScorer();
  const Matrix a = RandomMatrix(13, 11, 31, 0.2), b = RandomMatrix(17, 11, 32, -0.1);
  const Matrix s = cosine.ScoreAllVsAll(a, b);
  ASSERT_EQ(s.rows(), 13);
  ASSERT_EQ(s.cols(), 17);
  for (std::int64_t i = 0; i < a.rows(); ++i) {
    for (std::int64_t j = 0; j < b.rows(); ++j) {
      double dot = 0, na = 0, nb = 0;
      for (std::int64_t k = 0; k < a.cols(); ++k) {
        dot += double(a(i, k)) * b(j, k);
        na += double(a(i, k)) * a(i, k);
        nb += double(b(j, k)) * b(j, k);
      }
      EXPECT_NEAR(s(i, j), dot / std::sqrt(na * nb), 1e-6) << i << "," << j;
    }
  }
  // No rows on one side: an empty score matrix of the right shape.
  const Matrix none = cosine.ScoreAllVsAll(Matrix(0, 11), b);
  EXPECT_EQ(none.rows(), 0);
  EXPECT_EQ(none.cols(), 17);
  EXPECT_THROW(cosine.ScoreAllVsAll(a, Matrix(3, 10)), std::invalid_argument);
}

TEST(Scoring, IndexTrialsMapsIdsAndReportsMissingOnes) {
  eval::TrialList list;
  list.path = "trials.txt";
  list.left = {"a", "b", "c"};
  list.right = {"b", "c", "zz"};
  list.label = {"1", "0", "0"};
  list.line = {1, 2, 5};
  const std::vector<std::string> ids = {"c", "b", "a", "zz"};
  const auto t = IndexTrials(list, ids);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].left, 2);
  EXPECT_EQ(t[0].right, 1);
  EXPECT_EQ(t[2].right, 3);
  try {
    IndexTrials(list, {"a", "b", "c"});
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("trials.txt:5: no embedding for 'zz'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(IndexTrials(list, {"a", "b", "a"}), DataError);
}

TEST(Scoring, BadIndicesAndOptions) {
  const Scorer cosine = MakeCosineScorer();
  const Matrix a = RandomMatrix(5, 3, 8);
  EXPECT_THROW(ScoreTrials(cosine, a, {{0, 5}}), std::out_of_range);
  EXPECT_THROW(ScoreTrials(cosine, a, {{-1, 0}}), std::out_of_range);
  ScoringOptions bad;
  bad.pairwise_scoring_chunk_size = 0;
  EXPECT_THROW(ScoreTrials(cosine, a, {{0, 1}}, bad), ConfigError);
  EXPECT_TRUE(ScoreTrials(cosine, a, {}).empty());
  EXPECT_THROW(cosine.ScorePairs(Matrix(2, 3), Matrix(3, 3)), std::invalid_argument);
}

TEST(ScoreNorm, AdaptiveSnormMatchesDefinition) {
  const Plda plda = TrainSomePlda(8, 9);
  const Scorer scorer = plda.MakeScorer(8);
  const Matrix emb = RandomMatrix(30, 8, 10);
  const Matrix cohort = RandomMatrix(200, 8, 11);
  ScoringOptions small;
  small.max_all_vs_all_score_count = 1000;  // forces row chunks of 5 vectors
  const SnormStats stats = ComputeAdaptiveSnormStats(scorer, emb, cohort, 20, small);
  ASSERT_EQ(stats.mean.size(), 30u);
  const Matrix s = scorer.ScoreAllVsAll(emb, cohort);
  for (int i = 0; i < 30; ++i) {
    std::vector<double> row(s.row(i), s.row(i) + 200);
    std::sort(row.rbegin(), row.rend());
    double mean = 0, var = 0;
    for (int k = 0; k < 20; ++k) mean += row[k] / 20;
    for (int k = 0; k < 20; ++k) var += (row[k] - mean) * (row[k] - mean) / 20;
    EXPECT_NEAR(stats.mean[i], mean, 1e-4 * (1 + std::fabs(mean)));
    EXPECT_NEAR(stats.std[i], std::sqrt(var), 1e-4 * (1 + std::sqrt(var)));
  }
  const std::vector<TrialIndex> trials = {{0, 1}, {5, 29}};
  const std::vector<float> raw = {3.0f, -2.0f};
  const auto norm = ApplySnorm(raw, stats, trials);
  EXPECT_NEAR(norm[1], 0.5 * ((-2.0 - stats.mean[5]) / stats.std[5] + (-2.0 - stats.mean[29]) / stats.std[29]), 1e-5);
  EXPECT_THROW(ComputeAdaptiveSnormStats(scorer, emb, cohort, 1), ConfigError);
  EXPECT_THROW(ComputeAdaptiveSnormStats(scorer, emb, cohort, 201), ConfigError);
  EXPECT_THROW(ApplySnorm(raw, stats, {{0, 1}}), std::invalid_argument);
  EXPECT_THROW(ApplySnorm(raw, stats, {{0, 1}, {0, 30}}), std::invalid_argument);
  SnormStats zero = stats;
  zero.std[1] = 0;
  EXPECT_THROW(ApplySnorm(raw, zero, trials), DataError);
}

// The N largest of `values` by a full sort, descending.
std::vector<float> NaiveTop(std::vector<float> values, std::int64_t top_n) {
  std::sort(values.begin(), values.end(), [](float a, float b) { return a > b; });
  values.resize(static_cast<std::size_t>(top_n));
  return values;
}

TEST(TopNSelector, MatchesFullSortWithTiesForEveryNCapacityAndPieceSize) {
  std::mt19937_64 rng(7);
  for (const std::int64_t m : {1, 2, 5, 37, 200}) {
    for (const int levels : {3, 1000000}) {  // 3 levels: nearly all values tied
      std::uniform_int_distribution<int> level(0, levels - 1);
      std::vector<float> values(static_cast<std::size_t>(m));
      for (float& v : values) v = static_cast<float>(level(rng)) / 7.0f - 1.0f;
      if (m > 3) values[1] = -std::numeric_limits<float>::infinity();
      for (std::int64_t top_n = 1; top_n <= m; ++top_n) {
        const std::vector<float> expected = NaiveTop(values, top_n);
        double mean = 0, var = 0;
        for (const float v : expected) mean += static_cast<double>(v) / static_cast<double>(top_n);
        for (const float v : expected) var += (v - mean) * (v - mean) / static_cast<double>(top_n);
        for (const std::int64_t capacity : {top_n, top_n + 1, 2 * top_n, m}) {
          if (capacity < top_n || (capacity == top_n && top_n < m)) continue;  // needs capacity > top_n
          for (const std::int64_t piece : {std::int64_t{1}, std::int64_t{3}, std::int64_t{16}, m}) {
            SCOPED_TRACE(testing::Message() << "m " << m << " levels " << levels << " top_n " << top_n << " capacity "
                                            << capacity << " piece " << piece);
            std::vector<float> buffer(static_cast<std::size_t>(capacity));
            TopNSelector selector(top_n, buffer.data(), capacity);
            for (std::int64_t j = 0; j < m; j += piece) selector.Add(values.data() + j, std::min(piece, m - j));
            EXPECT_EQ(selector.seen(), m);
            std::vector<float> top(static_cast<std::size_t>(top_n));
            selector.TopValues(top.data());
            ASSERT_EQ(top, expected);
            double got_mean = 0, got_std = 0;
            selector.MeanStd(&got_mean, &got_std);
            if (std::isinf(mean)) {
              EXPECT_TRUE(std::isinf(got_mean));
            } else {
              EXPECT_NEAR(got_mean, mean, 1e-6);
              EXPECT_NEAR(got_std, std::sqrt(var), 1e-6);
            }
          }
        }
      }
    }
  }
  float b[2];
  EXPECT_THROW(TopNSelector(0, b, 2), std::invalid_argument);
  EXPECT_THROW(TopNSelector(3, b, 2), std::invalid_argument);
  TopNSelector short_selector(2, b, 2);
  const float one = 1.0f;
  short_selector.Add(&one, 1);
  double mean = 0, sd = 0;
  EXPECT_THROW(short_selector.MeanStd(&mean, &sd), std::logic_error);
}

// ComputeAdaptiveSnormStats against a full sort of ScoreAllVsAll's rows: a cohort with repeated
// rows (tied scores), every top_n from 2 to m, tiles from one score to the whole matrix.
TEST(ScoreNorm, AdaptiveSnormSelectionMatchesFullSortForAllTopNAndTilings) {
  const Scorer cosine = MakeCosineScorer();
  const Matrix emb = RandomMatrix(23, 6, 21);
  const Matrix base = RandomMatrix(13, 6, 22);
  const std::int64_t m = 39;
  Matrix cohort(m, 6);
  for (std::int64_t r = 0; r < m; ++r) std::copy(base.row(r % 13), base.row(r % 13) + 6, cohort.row(r));
  const Matrix s = cosine.ScoreAllVsAll(emb, cohort);
  for (std::int64_t top_n = 2; top_n <= m; ++top_n) {
    for (const std::int64_t max_count : {std::int64_t{1}, std::int64_t{5}, std::int64_t{50}, std::int64_t{100'000'000}}) {
      SCOPED_TRACE(testing::Message() << "top_n " << top_n << " max_count " << max_count);
      ScoringOptions options;
      options.max_all_vs_all_score_count = max_count;
      const SnormStats stats = ComputeAdaptiveSnormStats(cosine, emb, cohort, top_n, options);
      ASSERT_EQ(stats.mean.size(), 23u);
      ASSERT_EQ(stats.std.size(), 23u);
      for (std::int64_t i = 0; i < 23; ++i) {
        const std::vector<float> top = NaiveTop(std::vector<float>(s.row(i), s.row(i) + m), top_n);
        double mean = 0, var = 0;
        for (const float v : top) mean += static_cast<double>(v) / static_cast<double>(top_n);
        for (const float v : top) var += (v - mean) * (v - mean) / static_cast<double>(top_n);
        EXPECT_NEAR(stats.mean[static_cast<std::size_t>(i)], mean, 1e-6);
        EXPECT_NEAR(stats.std[static_cast<std::size_t>(i)], std::sqrt(var), 1e-6);
      }
    }
  }
}

TEST(ScoreNorm, SelectRandomRowsIsDeterministicAndDistinct) {
  Matrix x(100, 2);
  for (int r = 0; r < 100; ++r) x(r, 0) = static_cast<float>(r), x(r, 1) = static_cast<float>(-r);
  const Matrix a = SelectRandomRows(x, 20, 0);
  EXPECT_EQ(a, SelectRandomRows(x, 20, 0));
  EXPECT_FALSE(a == SelectRandomRows(x, 20, 1));
  for (int i = 1; i < 20; ++i) EXPECT_LT(a(i - 1, 0), a(i, 0));  // distinct, ascending rows
  EXPECT_EQ(SelectRandomRows(x, 100, 5), x);
  EXPECT_THROW(SelectRandomRows(x, 101, 0), std::invalid_argument);
}

}  // namespace
}  // namespace asv::backend
