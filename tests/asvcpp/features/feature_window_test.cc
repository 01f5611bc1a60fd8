#include "asvcpp/features/feature_window.h"

#include <cmath>
#include <limits>
#include <numeric>

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

TEST(FeaturesFrameWindow, GaussianRngIsDeterministicAndStandardNormal) {
  GaussianRng a(42), b(42), c(43);
  double sum = 0.0, sumsq = 0.0;
  bool differs = false;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const float x = a.Next();
    EXPECT_EQ(x, b.Next());
    differs |= x != c.Next();
    sum += x;
    sumsq += static_cast<double>(x) * x;
  }
  EXPECT_TRUE(differs);
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sumsq / n, 1.0, 0.02);
}

}  // namespace
}  // namespace asv::features
