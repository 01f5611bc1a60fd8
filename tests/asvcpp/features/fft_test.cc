#include "asvcpp/features/fft.h"

#include <cmath>
#include <complex>
#include <random>
#include <stdexcept>

#include <gtest/gtest.h>

namespace asv::features {
namespace {

TEST(FeaturesFft, MatchesNaiveDft) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-1000.0f, 1000.0f);
  for (int n = 2; n <= 2048; n *= 2) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (float& v : x) v = dist(gen);
    RealFft fft(n);
    std::vector<float> re(static_cast<std::size_t>(n / 2 + 1)), im(re.size());
    fft.Forward(x.data(), re.data(), im.data());
    double max_mag = 0.0, max_err = 0.0;
    for (int k = 0; k <= n / 2; ++k) {
      std::complex<double> sum = 0.0;
      for (int t = 0; t < n; ++t) sum += static_cast<double>(x[t]) * std::polar(1.0, -2.0 * M_PI * k * t / n);
      max_mag = std::max(max_mag, std::abs(sum));
      max_err = std::max(max_err, std::abs(sum - std::complex<double>(re[k], im[k])));
    }
    EXPECT_LT(max_err, 2e-6 * max_mag * std::log2(n)) << "n = " << n;
    EXPECT_EQ(im[0], 0.0f);
    EXPECT_EQ(im[n / 2], 0.0f);
  }
}

TEST(FeaturesFft, ImpulseAndCosine) {
  const int n = 512;
  RealFft fft(n);
  std::vector<float> x(n, 0.0f), re(n / 2 + 1), im(n / 2 + 1), power(n / 2 + 1);
  x[0] = 1.0f;
  fft.Forward(x.data(), re.data(), im.data());
  for (int k = 0; k <= n / 2; ++k) {
    EXPECT_NEAR(re[k], 1.0f, 1e-6);
    EXPECT_NEAR(im[k], 0.0f, 1e-6);
  }
  for (int t = 0; t < n; ++t) x[t] = static_cast<float>(std::cos(2.0 * M_PI * 37 * t / n));
  fft.Forward(x.data(), re.data(), im.data());
  PowerSpectrum(re.data(), im.data(), n / 2 + 1, power.data());
  for (int k = 0; k <= n / 2; ++k) EXPECT_NEAR(power[k], k == 37 ? (n / 2.0) * (n / 2.0) : 0.0, 0.05) << k;
}

TEST(FeaturesFft, RejectsSizesThatAreNotPowersOfTwo) {
  EXPECT_THROW(RealFft(0), std::invalid_argument);
  EXPECT_THROW(RealFft(1), std::invalid_argument);
  EXPECT_THROW(RealFft(400), std::invalid_argument);
  EXPECT_NO_THROW(RealFft(2));
}

}  // namespace
}  // namespace asv::features
