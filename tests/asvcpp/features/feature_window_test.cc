#include "asvcpp/features/feature_window.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "asvcpp/base/error.h"

namespace asv::features {
namespace {

TEST(FeaturesFrameWindow, NumFramesSnipEdgesTrue) {
  FrameOptions o;  // 400 / 160
  EXPECT_EQ(NumFrames(0, o), 0);
  EXPECT_EQ(NumFrames(399, o), 0);
  EXPECT_EQ(NumFrames(400, o), 1);
  EXPECT_EQ(NumFrames(559, o), 1);
  EXPECT_EQ(NumFrames(560, o), 2);
  EXPECT_EQ(NumFrames(16000, o), 98);
  for (std::int64_t n = 400; n < 5000; n += 37) EXPECT_EQ(NumFrames(n, o), 1 + (n - 400) / 160) << n;
}

TEST(FeaturesFrameWindow, NumFramesSnipEdgesFalseRoundsToNearest) {
  FrameOptions o;
  o.snip_edges = false;
  for (std::int64_t n = 0; n < 5000; n += 7) EXPECT_EQ(NumFrames(n, o), (n + 80) / 160) << n;
  EXPECT_EQ(NumFrames(79, o), 0);
  EXPECT_EQ(NumFrames(80, o), 1);
  EXPECT_EQ(NumFrames(16000, o), 100);
  EXPECT_EQ(NumFrames(40000, o), 250);
}

TEST(FeaturesFrameWindow, FirstSampleOfFrame) {
  FrameOptions o;
  EXPECT_EQ(FirstSampleOfFrame(0, o), 0);
  EXPECT_EQ(FirstSampleOfFrame(3, o), 480);
  o.snip_edges = false;
  EXPECT_EQ(FirstSampleOfFrame(0, o), 80 - 200);
  EXPECT_EQ(FirstSampleOfFrame(3, o), 480 + 80 - 200);
}

TEST(FeaturesFrameWindow, ExtractFrameReflectsIncludingEdgeSample) {
  FrameOptions o;
  o.samp_freq = 1000;     // 1 sample per ms
  o.frame_length_ms = 8;  // 8 samples
  o.frame_shift_ms = 4;   // 4 samples
  o.snip_edges = false;
  std::vector<float> x(10);
  std::iota(x.begin(), x.end(), 0.0f);  // 0..9
  ASSERT_EQ(NumFrames(10, o), 3);       // (10 + 2) / 4
  std::vector<float> f(8);
  ExtractFrame(x.data(), 10, 0, o, f.data());  // starts at 0 + 2 - 4 = -2
  EXPECT_EQ(f, (std::vector<float>{1, 0, 0, 1, 2, 3, 4, 5}));
  ExtractFrame(x.data(), 10, 2, o, f.data());  // starts at 8 + 2 - 4 = 6
  EXPECT_EQ(f, (std::vector<float>{6, 7, 8, 9, 9, 8, 7, 6}));
  // Repeated reflection on a signal shorter than the frame: 3 samples, frame 0 starts at -2.
  const std::vector<float> y = {10, 11, 12};
  ASSERT_EQ(NumFrames(3, o), 1);
  ExtractFrame(y.data(), 3, 0, o, f.data());
  // indices -2..5 -> 1 0 | 0 1 2 | 2 1 0
  EXPECT_EQ(f, (std::vector<float>{11, 10, 10, 11, 12, 12, 11, 10}));
}

TEST(FeaturesFrameWindow, WindowFunctions) {
  FrameOptions o;
  o.samp_freq = 1000;
  o.frame_length_ms = 9;  // N = 9, a = 2π/8
  auto window = [&](const char* type) {
    o.window_type = type;
    return MakeWindowFunction(o);
  };
  const auto hann = window("hanning");
  EXPECT_NEAR(hann[0], 0.0f, 1e-7);
  EXPECT_NEAR(hann[4], 1.0f, 1e-7);
  EXPECT_NEAR(hann[2], 0.5f, 1e-7);
  EXPECT_NEAR(hann[8], 0.0f, 1e-7);
  const auto hamming = window("hamming");
  EXPECT_NEAR(hamming[0], 0.08f, 1e-7);
  EXPECT_NEAR(hamming[4], 1.0f, 1e-7);
  const auto povey = window("povey");
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(povey[i], std::pow(hann[i], 0.85), 1e-6) << i;
  const auto rect = window("rectangular");
  for (float v : rect) EXPECT_EQ(v, 1.0f);
  const auto blackman = window("blackman");
  EXPECT_NEAR(blackman[0], 0.0f, 1e-7);  // 0.42 - 0.5 + 0.08
  EXPECT_NEAR(blackman[4], 1.0f, 1e-6);  // 0.42 + 0.5 + 0.08
  const auto sine = window("sine");
  EXPECT_NEAR(sine[0], 0.0f, 1e-7);
  EXPECT_NEAR(sine[4], 1.0f, 1e-7);
  for (const auto* w : {&hann, &hamming, &povey, &blackman, &sine}) {
    for (int i = 0; i < 9; ++i) EXPECT_NEAR((*w)[i], (*w)[8 - i], 1e-6);  // symmetric
  }
  o.window_type = "triangle";
  EXPECT_THROW(MakeWindowFunction(o), DataError);
  EXPECT_THROW(o.Validate(), DataError);
}

TEST(FeaturesFrameWindow, ProcessFrameOrderOfOperations) {
  FrameOptions o;
  o.samp_freq = 1000;
  o.frame_length_ms = 4;
  o.dither = 0.0f;
  o.window_type = "rectangular";
  o.preemph_coeff = 0.5f;
  std::vector<float> frame = {1, 2, 3, 6};  // mean 3 -> -2 -1 0 3
  const auto window = MakeWindowFunction(o);
  float log_energy = 0.0f;
  ProcessFrame(o, window.data(), nullptr, frame.data(), &log_energy);
  EXPECT_FLOAT_EQ(log_energy, std::log(4.0f + 1.0f + 0.0f + 9.0f));  // after DC removal, before pre-emphasis
  // pre-emphasis x[i] -= 0.5 x[i-1], x[0] -= 0.5 x[0]
  EXPECT_EQ(frame, (std::vector<float>{-1.0f, 0.0f, 0.5f, 3.0f}));
  // Energy of an all-zero frame is floored at FLT_EPSILON.
  std::vector<float> zeros(4, 0.0f);
  ProcessFrame(o, window.data(), nullptr, zeros.data(), &log_energy);
  EXPECT_FLOAT_EQ(log_energy, std::log(std::numeric_limits<float>::epsilon()));
}

// Φ(x), the standard normal CDF.
double NormalCdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}

std::vector<float> Draw(std::uint64_t seed, std::size_t n) {
  std::vector<float> x(n, 0.0f);
  GaussianRng rng(seed);
  rng.AddScaled(1.0f, x.data(), static_cast<std::int64_t>(n));
  return x;
}

TEST(FeaturesFrameWindow, GaussianRngIsDeterministicPerSeed) {
  GaussianRng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100000; ++i) {
    const float x = a.Next();
    ASSERT_EQ(x, b.Next()) << i;
    differs |= x != c.Next();
  }
  EXPECT_TRUE(differs);
  EXPECT_EQ(Draw(7, 1000), Draw(7, 1000));
  EXPECT_NE(Draw(7, 1000), Draw(8, 1000));
}

TEST(FeaturesFrameWindow, GaussianRngAddScaledEqualsRepeatedNext) {
  // Block calls of odd and even lengths (the generator makes two samples per 64-bit draw and
  // keeps the spare one) give exactly the per-sample sequence, scaled.
  GaussianRng block(5), single(5);
  const float scale = 2.5f;
  std::vector<float> x;
  std::vector<float> expected;
  for (int len : {1, 3, 400, 0, 2, 7, 401, 16, 5}) {
    std::vector<float> chunk(static_cast<std::size_t>(len), 1.0f);
    block.AddScaled(scale, chunk.data(), len);
    x.insert(x.end(), chunk.begin(), chunk.end());
    for (int i = 0; i < len; ++i) expected.push_back(1.0f + single.Next() * scale);
    // Mix in single calls on the block generator too.
    x.push_back(block.Next());
    expected.push_back(single.Next());
  }
  EXPECT_EQ(x, expected);
}

// The statistical tests use 4M samples of one fixed seed; each bound is a >= 5-sigma (or
// p < 1e-3) bound for an exact N(0, 1) generator, so a correct generator passes and errors in
// the Ziggurat tables, wedges or tail of the size of one layer (area 0.005) fail.
constexpr std::size_t kNumSamples = 4'000'000;

TEST(FeaturesFrameWindow, GaussianRngMomentsAreStandardNormal) {
  const auto x = Draw(2024, kNumSamples);
  const double n = static_cast<double>(x.size());
  double m1 = 0, m2 = 0, m3 = 0, m4 = 0, lag1 = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    m1 += v;
    m2 += v * v;
    m3 += v * v * v;
    m4 += v * v * v * v;
    if (i > 0) lag1 += v * x[i - 1];
  }
  m1 /= n, m2 /= n, m3 /= n, m4 /= n, lag1 /= n - 1;
  // Standard errors for N(0, 1): mean 1/√n, E x² √(2/n), E x³ √(15/n), E x⁴ √(96/n).
  EXPECT_NEAR(m1, 0.0, 5.0 / std::sqrt(n));
  EXPECT_NEAR(m2, 1.0, 5.0 * std::sqrt(2.0 / n));
  EXPECT_NEAR(m3, 0.0, 5.0 * std::sqrt(15.0 / n));
  EXPECT_NEAR(m4, 3.0, 5.0 * std::sqrt(96.0 / n));
  EXPECT_NEAR(lag1, 0.0, 5.0 / std::sqrt(n));  // consecutive samples (two per draw) uncorrelated
}

TEST(FeaturesFrameWindow, GaussianRngTailProbabilities) {
  const auto x = Draw(99, kNumSamples);
  const double n = static_cast<double>(x.size());
  // 3.6541528853610088 is where the Ziggurat's base layer ends and the exact tail method starts.
  for (double t : {0.5, 1.0, 2.0, 3.0, 3.6541528853610088, 4.0, 4.5}) {
    std::size_t above = 0, below = 0;
    for (float v : x) {
      above += v > t;
      below += v < -t;
    }
    const double p = 1.0 - NormalCdf(t);  // each side
    const double sigma2 = std::sqrt(2.0 * n * p * (1.0 - 2.0 * p));
    EXPECT_NEAR(static_cast<double>(above + below), 2.0 * n * p, 5.0 * sigma2 + 3.0) << "P(|x| > " << t << ")";
    const double sigma1 = std::sqrt(n * p * (1.0 - p));
    EXPECT_NEAR(static_cast<double>(above), n * p, 5.0 * sigma1 + 3.0) << "P(x > " << t << ")";
    EXPECT_NEAR(static_cast<double>(below), n * p, 5.0 * sigma1 + 3.0) << "P(x < " << -t << ")";
  }
  // The tail goes beyond the last layer: with 4M samples, |x| > 4.5 happens ~27 times.
  EXPECT_GT(*std::max_element(x.begin(), x.end()), 4.3f);
  EXPECT_LT(*std::min_element(x.begin(), x.end()), -4.3f);
}

TEST(FeaturesFrameWindow, GaussianRngKolmogorovSmirnovAndChiSquare) {
  auto x = Draw(12345, kNumSamples);
  const double n = static_cast<double>(x.size());
  // Chi-square on 80 bins of width 0.1 over [-4, 4) plus the two tails: 81 degrees of freedom,
  // P(χ²₈₁ > 130) ≈ 4e-4.
  std::vector<double> count(82, 0.0);
  for (float v : x) {
    const double b = std::floor((static_cast<double>(v) + 4.0) / 0.1);
    count[static_cast<std::size_t>(std::clamp(b + 1.0, 0.0, 81.0))] += 1.0;
  }
  double chi2 = 0.0;
  for (std::size_t b = 0; b < count.size(); ++b) {
    const double lo = b == 0 ? -INFINITY : -4.0 + 0.1 * static_cast<double>(b - 1);
    const double hi = b == 81 ? INFINITY : -4.0 + 0.1 * static_cast<double>(b);
    const double expected = n * (NormalCdf(hi) - NormalCdf(lo));
    chi2 += (count[b] - expected) * (count[b] - expected) / expected;
  }
  EXPECT_LT(chi2, 130.0);
  // Kolmogorov–Smirnov: √n·D < 1.95 (p ≈ 0.001 under the null).
  std::sort(x.begin(), x.end());
  double d = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double f = NormalCdf(x[i]);
    d = std::max({d, f - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - f});
  }
  EXPECT_LT(std::sqrt(n) * d, 1.95) << "D = " << d;
}

TEST(FeaturesFrameWindow, ProcessFrameDitherIsReproducible) {
  FrameOptions o;  // 400 samples, dither 1, povey window, pre-emphasis 0.97
  const auto window = MakeWindowFunction(o);
  std::vector<float> a(400, 100.0f), b(400, 100.0f);
  float ea = 0.0f, eb = 0.0f;
  GaussianRng ra(3), rb(3);
  ProcessFrame(o, window.data(), &ra, a.data(), &ea);
  ProcessFrame(o, window.data(), &rb, b.data(), &eb);
  EXPECT_EQ(a, b);
  EXPECT_EQ(ea, eb);
  // A constant signal has no energy after DC removal but for the dither: Σ ≈ 400·1.
  EXPECT_NEAR(ea, std::log(400.0f), 0.5f);
  o.dither = 0.0f;
  std::vector<float> c(400, 100.0f);
  EXPECT_THROW(ProcessFrame(FrameOptions{}, window.data(), nullptr, c.data(), nullptr), std::exception);
}

}  // namespace
}  // namespace asv::features
