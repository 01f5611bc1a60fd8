#include "asvcpp/features/mfcc.h"

#include <cmath>
#include <limits>
#include <thread>

#include <gtest/gtest.h>

#include "asvcpp/base/error.h"
#include "asvcpp/features/fbank.h"
#include "asvcpp/features/mel_banks.h"
#include "tests/asvcpp/features/test_util.h"

namespace asv::features {
namespace {

using testing::AsvtorchMfccOptions;
using testing::GoldenSignal;

TEST(FeaturesMelBanks, MelScaleRoundTrip) {
  EXPECT_NEAR(MelBanks::MelScale(700.0f), 1127.0f * std::log(2.0f), 1e-3);
  for (float f : {0.0f, 20.0f, 1000.0f, 7900.0f})
    EXPECT_NEAR(MelBanks::InverseMelScale(MelBanks::MelScale(f)), f, 1e-2);
}

TEST(FeaturesMelBanks, TrianglesOverlapToOne) {
  MelOptions mel;
  mel.num_bins = 30;
  mel.low_freq = 20;
  mel.high_freq = 7900;
  FrameOptions frame;
  MelBanks banks(mel, frame);
  ASSERT_EQ(banks.NumBins(), 30);
  // Sum of weights per FFT bin: 1 between the centres of the first and the last triangle.
  std::vector<double> total(256, 0.0);
  for (int b = 0; b < banks.NumBins(); ++b) {
    const auto& w = banks.Weights(b);
    for (std::size_t i = 0; i < w.size(); ++i) {
      EXPECT_GT(w[i], 0.0f);
      EXPECT_LE(w[i], 1.0f);
      total[static_cast<std::size_t>(banks.Offset(b)) + i] += w[i];
    }
    if (b > 0) {
      EXPECT_GT(banks.Offset(b), banks.Offset(b - 1));
    }
  }
  const float first_centre = banks.CenterFreqs().front(), last_centre = banks.CenterFreqs().back();
  int checked = 0;
  for (int i = 0; i < 256; ++i) {
    const float freq = 16000.0f / 512 * i;
    if (freq >= first_centre && freq <= last_centre) {
      EXPECT_NEAR(total[static_cast<std::size_t>(i)], 1.0, 1e-5) << i;
      ++checked;
    }
    if (freq <= 20.0f || freq >= 7900.0f) {
      EXPECT_EQ(total[static_cast<std::size_t>(i)], 0.0) << i;
    }
  }
  EXPECT_GT(checked, 200);
}

TEST(FeaturesMelBanks, BadRangesAndTooManyBins) {
  FrameOptions frame;
  MelOptions mel;
  mel.high_freq = 9000;  // above Nyquist
  EXPECT_THROW(MelBanks(mel, frame), DataError);
  mel.high_freq = -400;  // Nyquist - 400 = 7600: fine
  EXPECT_NO_THROW(MelBanks(mel, frame));
  mel.low_freq = 7700;  // above high
  EXPECT_THROW(MelBanks(mel, frame), DataError);
  mel = MelOptions();
  mel.num_bins = 200;  // more bins than FFT bins at low frequencies
  EXPECT_THROW(MelBanks(mel, frame), DataError);
}

TEST(FeaturesMelBanks, VtlnWarpIsIdentityAtOneAndMonotonic) {
  for (float f = 20.0f; f <= 7900.0f; f += 97.0f) {
    EXPECT_FLOAT_EQ(MelBanks::VtlnWarpFreq(100, 7500, 20, 7900, 1.0f, f), f);
  }
  float prev = 0.0f;
  for (float f = 20.0f; f <= 7900.0f; f += 97.0f) {
    const float w = MelBanks::VtlnWarpFreq(100, 7500, 20, 7900, 0.9f, f);
    EXPECT_GT(w, prev);
    prev = w;
  }
  EXPECT_FLOAT_EQ(MelBanks::VtlnWarpFreq(100, 7500, 20, 7900, 0.9f, 20.0f), 20.0f);
  EXPECT_FLOAT_EQ(MelBanks::VtlnWarpFreq(100, 7500, 20, 7900, 0.9f, 7900.0f), 7900.0f);
  EXPECT_NEAR(MelBanks::VtlnWarpFreq(100, 7500, 20, 7900, 0.9f, 1000.0f), 1000.0f / 0.9f, 1e-2);
}

TEST(FeaturesMfccMath, DctMatrixIsOrthonormalWithKaldiRowZero) {
  for (int n : {13, 23, 30, 40}) {
    const Matrix d = ComputeDctMatrix(n, n);
    EXPECT_FLOAT_EQ(d(0, 0), static_cast<float>(std::sqrt(1.0 / n)));
    EXPECT_NEAR(d(1, 0), std::sqrt(2.0 / n) * std::cos(M_PI / n * 0.5), 1e-7);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        double dot = 0.0;
        for (int k = 0; k < n; ++k) dot += static_cast<double>(d(i, k)) * d(j, k);
        EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, 1e-6) << n << ": " << i << "," << j;
      }
    }
  }
  const Matrix partial = ComputeDctMatrix(13, 23);
  const Matrix full = ComputeDctMatrix(23, 23);
  for (int i = 0; i < 13; ++i)
    for (int j = 0; j < 23; ++j) EXPECT_EQ(partial(i, j), full(i, j));
}

TEST(FeaturesMfccMath, LifterCoefficients) {
  const auto c = ComputeLifterCoeffs(22.0f, 13);
  EXPECT_FLOAT_EQ(c[0], 1.0f);
  EXPECT_FLOAT_EQ(c[11], 12.0f);  // 1 + 11·sin(π/2)
  EXPECT_NEAR(c[1], 1.0 + 11.0 * std::sin(M_PI / 22.0), 1e-6);
}

TEST(FeaturesMfcc, ShapeAndShortInputs) {
  const Mfcc mfcc(AsvtorchMfccOptions(0.0f));
  EXPECT_EQ(mfcc.Dim(), 30);
  const std::vector<float> x(79, 1.0f);
  EXPECT_EQ(mfcc.Compute(x.data(), 0).rows(), 0);
  EXPECT_EQ(mfcc.Compute(x.data(), 0).cols(), 30);
  EXPECT_EQ(mfcc.Compute(x.data(), 79).rows(), 0);
  const std::vector<float> y(80, 1.0f);
  const Matrix m = mfcc.Compute(y.data(), 80);  // one frame, reflected many times
  ASSERT_EQ(m.rows(), 1);
  for (int c = 0; c < 30; ++c) EXPECT_TRUE(std::isfinite(m(0, c)));
  // A constant signal has zero energy after DC removal: everything is floored, not -inf.
  EXPECT_FLOAT_EQ(m(0, 0), std::log(std::numeric_limits<float>::epsilon()));
}

TEST(FeaturesMfcc, DitherIsReproducibleBySeed) {
  const auto signal = GoldenSignal();
  const auto n = static_cast<std::int64_t>(signal.size());
  const Mfcc dithered(AsvtorchMfccOptions(1.0f));
  const Matrix a = dithered.Compute(signal.data(), n, 1);
  EXPECT_EQ(a, dithered.Compute(signal.data(), n, 1));
  const Matrix b = dithered.Compute(signal.data(), n, 2);
  EXPECT_FALSE(a == b);
  // Dither of 1 (int16 units) on a loud signal changes little.
  const Matrix clean = Mfcc(AsvtorchMfccOptions(0.0f)).Compute(signal.data(), n, 1);
  double max_diff = 0.0;
  for (std::int64_t i = 0; i < a.rows(); ++i) max_diff = std::max(max_diff, std::fabs(double(a(i, 0)) - clean(i, 0)));
  EXPECT_LT(max_diff, 0.05);
  EXPECT_EQ(clean, Mfcc(AsvtorchMfccOptions(0.0f)).Compute(signal.data(), n, 99));  // seed irrelevant without dither
}

TEST(FeaturesMfcc, ConcurrentCallsShareOneExtractor) {
  const auto signal = GoldenSignal();
  const auto n = static_cast<std::int64_t>(signal.size());
  const Mfcc mfcc(AsvtorchMfccOptions(1.0f));
  const Matrix expected = mfcc.Compute(signal.data(), n, 5);
  std::vector<Matrix> results(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int rep = 0; rep < 5; ++rep) results[i] = mfcc.Compute(signal.data(), n, 5);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_EQ(r, expected);
}

TEST(FeaturesMfcc, EnergyOptionsAndHtkCompat) {
  const auto signal = GoldenSignal();
  const auto n = static_cast<std::int64_t>(signal.size());
  MfccOptions o = AsvtorchMfccOptions(0.0f);
  const Matrix with_energy = Mfcc(o).Compute(signal.data(), n);
  o.use_energy = false;
  const Matrix with_c0 = Mfcc(o).Compute(signal.data(), n);
  for (std::int64_t t = 0; t < with_energy.rows(); ++t) {
    for (int c = 1; c < 30; ++c) EXPECT_EQ(with_energy(t, c), with_c0(t, c));
  }
  EXPECT_NE(with_energy(10, 0), with_c0(10, 0));
  // Raw energy of frame 10 by hand: frame 10 starts at 10·160 + 80 − 200, DC removed.
  double mean = 0.0, energy = 0.0;
  for (int i = 0; i < 400; ++i) mean += signal[1480 + i];
  mean /= 400;
  for (int i = 0; i < 400; ++i) energy += (signal[1480 + i] - mean) * (signal[1480 + i] - mean);
  EXPECT_NEAR(with_energy(10, 0), std::log(energy), 1e-4);

  o.htk_compat = true;
  const Matrix htk_c0 = Mfcc(o).Compute(signal.data(), n);
  for (int c = 0; c < 29; ++c) EXPECT_EQ(htk_c0(10, c), with_c0(10, c + 1));
  EXPECT_FLOAT_EQ(htk_c0(10, 29), with_c0(10, 0) * static_cast<float>(M_SQRT2));

  o = AsvtorchMfccOptions(0.0f);
  o.energy_floor = 1e12f;  // above every frame's energy
  const Matrix floored = Mfcc(o).Compute(signal.data(), n);
  for (std::int64_t t = 0; t < floored.rows(); ++t) EXPECT_FLOAT_EQ(floored(t, 0), std::log(1e12f));
}

TEST(FeaturesMfcc, InvalidOptionsThrow) {
  MfccOptions o;
  o.num_ceps = 24;  // > 23 bins
  EXPECT_THROW(Mfcc{o}, DataError);
  o = MfccOptions();
  o.frame_opts.round_to_power_of_two = false;
  EXPECT_THROW(Mfcc{o}, DataError);
  o = MfccOptions();
  o.frame_opts.frame_shift_ms = 0;
  EXPECT_THROW(Mfcc{o}, DataError);
}

TEST(FeaturesFbank, ShapesAndEnergyColumn) {
  const auto signal = GoldenSignal();
  const auto n = static_cast<std::int64_t>(signal.size());
  FbankOptions o;
  o.frame_opts.dither = 0.0f;
  o.mel_opts.num_bins = 40;
  const Matrix plain = Fbank(o).Compute(signal.data(), n);
  EXPECT_EQ(plain.cols(), 40);
  EXPECT_EQ(plain.rows(), 1 + (n - 400) / 160);
  o.use_energy = true;
  const Matrix energy_first = Fbank(o).Compute(signal.data(), n);
  o.htk_compat = true;
  const Matrix energy_last = Fbank(o).Compute(signal.data(), n);
  ASSERT_EQ(energy_first.cols(), 41);
  for (int b = 0; b < 40; ++b) {
    EXPECT_EQ(energy_first(5, b + 1), plain(5, b));
    EXPECT_EQ(energy_last(5, b), plain(5, b));
  }
  EXPECT_EQ(energy_first(5, 0), energy_last(5, 40));
  // Magnitude instead of power, linear instead of log.
  o = FbankOptions();
  o.frame_opts.dither = 0.0f;
  o.mel_opts.num_bins = 40;
  o.use_log_fbank = false;
  const Matrix linear = Fbank(o).Compute(signal.data(), n);
  EXPECT_NEAR(std::log(linear(5, 7)), plain(5, 7), 1e-4);
  o.use_power = false;
  const Matrix magnitude = Fbank(o).Compute(signal.data(), n);
  EXPECT_LT(magnitude(5, 7), linear(5, 7));
}

}  // namespace
}  // namespace asv::features
