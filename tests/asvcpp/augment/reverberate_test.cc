#include "asvcpp/augment/reverberate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>

namespace asv::augment {
namespace {

std::vector<float> Random(std::size_t n, std::uint64_t seed, double scale = 1000.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(normal(rng));
  return x;
}

double MeanSquare(const std::vector<float>& x) {
  double s = 0.0;
  for (float v : x) s += static_cast<double>(v) * v;
  return s / static_cast<double>(x.size());
}

TEST(ConvolveTest, EqualsTheDirectSum) {
  const auto x = Random(1000, 1), h = Random(77, 2, 0.1);
  const auto y = Convolve(x, h);
  ASSERT_EQ(y.size(), 1076u);
  for (std::size_t n = 0; n < y.size(); n += 7) {
    double direct = 0.0;
    for (std::size_t k = 0; k < h.size(); ++k) {
      if (n >= k && n - k < x.size()) direct += static_cast<double>(h[k]) * x[n - k];
    }
    EXPECT_NEAR(y[n], direct, 1e-3) << n;
  }
  EXPECT_THROW(Convolve({}, h), std::invalid_argument);
}

TEST(QuantizeToInt16Test, TruncatesTowardZeroAndClipsAsKaldiWritesAWav) {
  std::vector<float> x = {1.7f, -1.7f, 0.4f, -0.4f, 32767.9f, 40000.0f, -32768.5f, -40000.0f, 12.0f};
  EXPECT_EQ(QuantizeToInt16(x), 2u);
  EXPECT_EQ(x, (std::vector<float>{1, -1, 0, 0, 32767, 32767, -32768, -32768, 12}));
}

TEST(ConvolveTest, BlocksOfAShortFilterAddUpOverALongSignal) {
  // Filter of 5 taps: FFTs of 32, blocks of 28 samples; 3,000 samples make 108 blocks.
  const auto x = Random(3000, 21), h = Random(5, 22, 0.5);
  const auto y = Convolve(x, h);
  ASSERT_EQ(y.size(), 3004u);
  for (std::size_t n = 0; n < y.size(); ++n) {
    double direct = 0.0;
    for (std::size_t k = 0; k < h.size(); ++k) {
      if (n >= k && n - k < x.size()) direct += static_cast<double>(h[k]) * x[n - k];
    }
    ASSERT_NEAR(y[n], direct, 1e-3) << n;
  }
}

TEST(RepeatToLengthTest, TilesFromTheStartAndCuts) {
  EXPECT_EQ(RepeatToLength({1, 2, 3}, 8), (std::vector<float>{1, 2, 3, 1, 2, 3, 1, 2}));
  EXPECT_EQ(RepeatToLength({1, 2, 3}, 2), (std::vector<float>{1, 2}));
  EXPECT_THROW(RepeatToLength({}, 2), std::invalid_argument);
}

// An RIR that is a single tap: the output is the input shifted back by the peak, scaled as
// wav-reverberate normalises: by sqrt(P_before / P_after) with P_after over all N + L - 1
// samples of the convolution, i.e. sqrt((N + L - 1) / N) for a unit tap.
TEST(ReverberateTest, AUnitTapRirGivesTheInputAtTheLevelWavReverberateNormalisesTo) {
  const auto x = Random(1600, 3);
  std::vector<float> rir(400, 0.0f);
  rir[37] = 32768.0f;  // 1.0 after wav-reverberate's 2^-15 scaling
  const auto y = Reverberate(x, &rir, {}, 16000);
  ASSERT_EQ(y.size(), x.size());
  const double gain = std::sqrt((1600.0 + 400.0 - 1.0) / 1600.0);
  for (std::size_t i = 0; i < x.size(); i += 13) EXPECT_NEAR(y[i], gain * x[i], 1e-2 * gain) << i;
}

TEST(ReverberateTest, ThePeakIsTheSignedMaximumAndTheOutputStartsThere) {
  std::vector<float> x(800, 0.0f);
  x[100] = 1000.0f;
  std::vector<float> rir(64, 0.0f);
  rir[5] = -30000.0f;  // larger magnitude, negative
  rir[20] = 16384.0f;  // the signed maximum: the output is shifted by 20
  const auto y = Reverberate(x, &rir, {}, 16000);
  // Convolution: -30000/32768 * 1000 at 105, 0.5 * 1000 at 120; shifted by 20: 85 and 100.
  const double power_before = 1000.0 * 1000.0 / 800.0;
  const double a = -30000.0 / 32768.0 * 1000.0, b = 500.0;
  const double power_after = (a * a + b * b) / (800.0 + 64.0 - 1.0);
  const double gain = std::sqrt(power_before / power_after);
  EXPECT_NEAR(y[85], gain * a, 1e-2);
  EXPECT_NEAR(y[100], gain * b, 1e-2);
  EXPECT_NEAR(y[50], 0.0, 1e-2);
}

// Additive noise at an SNR: before normalisation the noise's scaled power is the signal power
// over 10^(snr/10); the output is then brought back to the input's level.
TEST(ReverberateTest, NoiseIsMixedAtItsSnrFromItsStartAndCutAtTheEnd) {
  const std::size_t n = 16000;
  const auto x = Random(n, 4, 3000.0);
  const auto noise = Random(6000, 5, 10.0);
  const double snr = 5.0;
  const double start = 0.75;  // samples 12000 .. 15999 get the first 4000 noise samples
  const auto y = Reverberate(x, nullptr, {{&noise, snr, start}}, 16000);
  ASSERT_EQ(y.size(), n);
  const double p_x = MeanSquare(x);
  const double scale = std::sqrt(std::pow(10.0, -snr / 10.0) * p_x / (MeanSquare(noise) + FLT_EPSILON));
  std::vector<double> mixed(n);
  for (std::size_t i = 0; i < n; ++i) mixed[i] = x[i] + (i >= 12000 ? scale * noise[i - 12000] : 0.0);
  double p_mixed = 0.0;
  for (double v : mixed) p_mixed += v * v;
  p_mixed /= static_cast<double>(n);
  const double gain = std::sqrt(p_x / p_mixed);
  EXPECT_LT(gain, 1.0);
  for (std::size_t i = 0; i < n; i += 97) EXPECT_NEAR(y[i], gain * mixed[i], 0.05) << i;
  EXPECT_NEAR(MeanSquare(y), p_x, 1e-4 * p_x);  // the input's level
}

TEST(ReverberateTest, SeveralNoisesAddUpAndANoiseStartingPastTheEndIsSkipped) {
  const std::size_t n = 8000;
  const auto x = Random(n, 6, 2000.0);
  const auto a = Random(8000, 7), b = Random(3000, 8);
  const auto both = Reverberate(x, nullptr, {{&a, 10.0, 0.0}, {&b, 0.0, 0.1}, {&b, 0.0, 0.5}}, 16000);
  const auto two = Reverberate(x, nullptr, {{&a, 10.0, 0.0}, {&b, 0.0, 0.1}}, 16000);
  EXPECT_EQ(both, two);  // 0.5 s = sample 8000: at the end
  const auto one = Reverberate(x, nullptr, {{&a, 10.0, 0.0}}, 16000);
  EXPECT_NE(one, two);
  EXPECT_THROW(Reverberate(x, nullptr, {{&a, 10.0, -1.0}}, 16000), std::invalid_argument);
  EXPECT_THROW(Reverberate({}, nullptr, {}, 16000), std::invalid_argument);
}

// With an RIR the SNR refers to the early reverberation: the input convolved with the RIR from
// int(0.001 fs) samples before its peak to int(0.05 fs) after.
TEST(ReverberateTest, WithAnRirTheSnrRefersToTheEarlyReverberation) {
  const std::size_t n = 4000;
  const auto x = Random(n, 9, 1000.0);
  std::vector<float> rir(2000, 0.0f);
  rir[10] = 32768.0f;     // peak at 10: early window [10 - 16, 10 + 800) = [0, 810)
  rir[1500] = 16384.0f;   // late reflection, outside the early window
  const auto noise = Random(n + 2000, 10, 50.0);
  const auto y = Reverberate(x, &rir, {{&noise, 0.0, 0.0}}, 16000);
  // Early reverberation = x itself (unit tap): P_signal = mean square over N + 810 - 1 samples.
  const double p_early = MeanSquare(x) * n / (n + 810.0 - 1.0);
  const double scale = std::sqrt(p_early / (MeanSquare(noise) + FLT_EPSILON));
  std::vector<double> full(n + 2000 - 1, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    full[i + 10] += x[i];
    full[i + 1500] += 0.5 * x[i];
  }
  for (std::size_t i = 0; i < full.size(); ++i) full[i] += scale * noise[i];
  double p_after = 0.0;
  for (double v : full) p_after += v * v;
  p_after /= static_cast<double>(full.size());
  const double gain = std::sqrt(MeanSquare(x) / p_after);
  for (std::size_t i = 0; i < n; i += 31) EXPECT_NEAR(y[i], gain * full[i + 10], 0.05) << i;
}

TEST(ReverberateTest, ASilentInputStaysSilent) {
  const std::vector<float> x(100, 0.0f);
  const auto noise = Random(100, 11);
  const auto y = Reverberate(x, nullptr, {{&noise, 0.0, 0.0}}, 16000);
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace asv::augment
