#include "asvcpp/features/cmn.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "asvcpp/base/error.h"

namespace asv::features {
namespace {

Matrix RandomFeatures(std::int64_t rows, std::int64_t cols, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Matrix m(rows, cols);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) m(r, c) = 10.0f * static_cast<float>(c) + 3.0f * dist(gen) + 0.01f * r;
  return m;
}

// Direct O(T·w) reference with the window written as clamps (independent of Kaldi's
// step-by-step shifting): centred windows are [t − w/2, t − w/2 + w) clamped into [0, T);
// left windows end at max(t + 1, min_window) and start w frames before t, then are shifted left
// when they run past the end.
Matrix DirectCmn(const SlidingCmnOptions& o, const Matrix& x) {
  const std::int64_t T = x.rows(), D = x.cols(), w = o.cmn_window;
  Matrix y(T, D);
  for (std::int64_t t = 0; t < T; ++t) {
    std::int64_t start, end;
    if (o.center) {
      start = std::max<std::int64_t>(0, std::min<std::int64_t>(t - w / 2, T - w));
      end = std::min<std::int64_t>(T, start + w);
    } else {
      start = std::max<std::int64_t>(0, t - w);
      end = std::max<std::int64_t>(t + 1, o.min_window);
      if (end > T) {
        start = std::max<std::int64_t>(0, start - (end - T));
        end = T;
      }
    }
    const double n = static_cast<double>(end - start);
    for (std::int64_t d = 0; d < D; ++d) {
      double sum = 0.0, sumsq = 0.0;
      for (std::int64_t s = start; s < end; ++s) {
        sum += x(s, d);
        sumsq += static_cast<double>(x(s, d)) * x(s, d);
      }
      const double mean = sum / n;
      double v = x(t, d) - mean;
      if (o.normalize_variance) v = n == 1 ? 0.0 : v / std::sqrt(std::max(sumsq / n - mean * mean, 1e-10));
      y(t, d) = static_cast<float>(v);
    }
  }
  return y;
}

TEST(FeaturesSlidingCmn, MatchesDirectComputation) {
  for (std::int64_t frames : {1, 2, 5, 99, 100, 101, 151, 250, 301, 700}) {
    const Matrix x = RandomFeatures(frames, 4, static_cast<unsigned>(frames));
    for (std::int32_t window : {1, 2, 100, 300, 600}) {
      for (bool center : {true, false}) {
        for (bool norm_vars : {false, true}) {
          for (std::int32_t min_window : {1, 50, 100}) {
            SlidingCmnOptions o;
            o.cmn_window = window;
            o.center = center;
            o.normalize_variance = norm_vars;
            o.min_window = std::min(min_window, window);
            o.max_warnings = 0;
            const Matrix ours = ApplySlidingCmn(o, x);
            const Matrix ref = DirectCmn(o, x);
            double worst = 0.0;
            for (std::int64_t i = 0; i < frames * 4; ++i)
              worst = std::max(worst, std::fabs(static_cast<double>(ours.data()[i]) - ref.data()[i]));
            EXPECT_LT(worst, 1e-4) << "T=" << frames << " w=" << window << " center=" << center << " norm=" << norm_vars
                                   << " min=" << o.min_window;
          }
        }
      }
    }
  }
}

TEST(FeaturesSlidingCmn, ShortUtteranceUsesGlobalMean) {
  const Matrix x = RandomFeatures(120, 3, 1);
  const Matrix y = ApplySlidingCmn(SlidingCmnOptions::AsvTorch(300), x);
  for (std::int64_t d = 0; d < 3; ++d) {
    double mean = 0.0;
    for (std::int64_t t = 0; t < 120; ++t) mean += x(t, d);
    mean /= 120;
    for (std::int64_t t = 0; t < 120; ++t) EXPECT_NEAR(y(t, d), x(t, d) - mean, 1e-4);
  }
}

TEST(FeaturesSlidingCmn, CentredWindowPlacement) {
  // x(t) = t: with a centred window of 4 the mean at t (interior) is the mean of t−2..t+1.
  Matrix x(10, 1);
  for (int t = 0; t < 10; ++t) x(t, 0) = static_cast<float>(t);
  const Matrix y = ApplySlidingCmn(SlidingCmnOptions::AsvTorch(4), x);
  EXPECT_FLOAT_EQ(y(0, 0), 0.0f - 1.5f);  // window [0, 4)
  EXPECT_FLOAT_EQ(y(1, 0), 1.0f - 1.5f);  // [0, 4)
  EXPECT_FLOAT_EQ(y(2, 0), 2.0f - 1.5f);  // [0, 4)
  EXPECT_FLOAT_EQ(y(5, 0), 5.0f - 4.5f);  // [3, 7)
  EXPECT_FLOAT_EQ(y(9, 0), 9.0f - 7.5f);  // [6, 10)
}

TEST(FeaturesSlidingCmn, OptionsAndEmptyInput) {
  SlidingCmnOptions o;
  EXPECT_EQ(o.cmn_window, 600);  // Kaldi defaults
  EXPECT_FALSE(o.center);
  EXPECT_EQ(ApplySlidingCmn(o, Matrix()).rows(), 0);
  o.cmn_window = 0;
  EXPECT_THROW(ApplySlidingCmn(o, Matrix(3, 2)), DataError);
  o = SlidingCmnOptions::AsvTorch(300);
  o.min_window = 400;
  EXPECT_THROW(ApplySlidingCmn(o, Matrix(3, 2)), DataError);
}

}  // namespace
}  // namespace asv::features
