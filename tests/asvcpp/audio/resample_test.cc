#include "asvcpp/audio/resample.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace asv::audio {
namespace {

std::vector<float> SineF(std::size_t n, double hz, int rate, double amp) {
  std::vector<float> s(n);
  for (std::size_t i = 0; i < n; ++i) {
    s[i] = static_cast<float>(amp * std::sin(2.0 * M_PI * hz * static_cast<double>(i) / rate));
  }
  return s;
}

// Largest deviation from the ideal sine at the output rate, away from the edges (the filter's
// transients).
double MaxError(const std::vector<float>& y, double hz, int rate, double amp) {
  const std::vector<float> ideal = SineF(y.size(), hz, rate, amp);
  double worst = 0.0;
  for (std::size_t i = y.size() / 10; i < y.size() * 9 / 10; ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(y[i]) - ideal[i]));
  }
  return worst;
}

TEST(ResampleTest, KeepsLengthRatioAndWaveform) {
  const std::vector<float> x = SineF(8000, 440.0, 8000, 10000.0);  // 1 s at 8 kHz
  const std::vector<float> up = Resample(x, 8000, 16000);
  EXPECT_EQ(up.size(), 16000u);
  EXPECT_LT(MaxError(up, 440.0, 16000, 10000.0), 10000.0 * 1e-3);

  const std::vector<float> y = SineF(44100, 1000.0, 44100, 8000.0);
  const std::vector<float> down = Resample(y, 44100, 16000);
  EXPECT_EQ(down.size(), 16000u);
  EXPECT_LT(MaxError(down, 1000.0, 16000, 8000.0), 8000.0 * 1e-3);
}

TEST(ResampleTest, RemovesContentAboveTheNewNyquistFrequency) {
  const std::vector<float> x = SineF(48000, 7000.0, 48000, 10000.0);
  const std::vector<float> y = Resample(x, 48000, 8000);  // 7 kHz > 4 kHz Nyquist
  double peak = 0.0;
  for (std::size_t i = y.size() / 10; i < y.size() * 9 / 10; ++i) peak = std::max(peak, std::abs(double{y[i]}));
  EXPECT_LT(peak, 10.0);
}

TEST(ResampleTest, SameRateAndEmptyInputAreUnchanged) {
  const std::vector<float> x = {1.0f, -2.0f, 3.0f};
  EXPECT_EQ(Resample(x, 16000, 16000), x);
  EXPECT_TRUE(Resample({}, 8000, 16000).empty());
  EXPECT_THROW(Resample(x, 0, 16000), std::invalid_argument);
  EXPECT_THROW(Resample(x, 16000, -1), std::invalid_argument);
}

}  // namespace
}  // namespace asv::audio
