// Golden tests: asvcpp features against files made by tools/golden/make_feature_golden.py
// (kaldi-native-fbank 1.22.5 for MFCC/fbank; NumPy transcriptions of Kaldi's C++ for VAD,
// sliding CMN and deltas; see that script's docstring). Tolerance 1e-3 absolute per value.
#include <cmath>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "asvcpp/features/cmn.h"
#include "asvcpp/features/deltas.h"
#include "asvcpp/features/fbank.h"
#include "asvcpp/features/mfcc.h"
#include "asvcpp/features/vad.h"
#include "tests/asvcpp/features/test_util.h"

namespace asv::features {
namespace {

using testing::FirstColumns;
using testing::GoldenSignal;
using testing::ReadGolden;

constexpr double kTolerance = 1e-3;

// Max |a - b| over all values; fails the test when shapes differ.
double MaxAbsError(const Matrix& a, const Matrix& b) {
  EXPECT_EQ(a.rows(), b.rows());
  EXPECT_EQ(a.cols(), b.cols());
  if (a.rows() != b.rows() || a.cols() != b.cols()) return INFINITY;
  double worst = 0.0;
  for (std::int64_t i = 0; i < a.rows() * a.cols(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a.data()[i]) - b.data()[i]));
  }
  return worst;
}

void Report(const std::string& what, double err) {
  std::printf("[ golden ] %s: max abs error %.3g\n", what.c_str(), err);
  ::testing::Test::RecordProperty(what + "_max_abs_error", std::to_string(err));
}

MfccOptions AsvTorchMfcc(bool snip_edges) {
  // tests/.../asvtorch_configs/voxceleb_xvector/mfcc.conf with dither 0.
  MfccOptions o;
  o.frame_opts.samp_freq = 16000;
  o.frame_opts.frame_length_ms = 25;
  o.frame_opts.dither = 0.0f;
  o.frame_opts.snip_edges = snip_edges;
  o.mel_opts.low_freq = 20;
  o.mel_opts.high_freq = 7900;
  o.mel_opts.num_bins = 30;
  o.num_ceps = 30;
  return o;
}

TEST(FeaturesGolden, SignalMatchesGenerator) {
  const auto signal = GoldenSignal();
  long long sum = 0, sumsq = 0;
  for (float v : signal) {
    sum += static_cast<long long>(v);
    sumsq += static_cast<long long>(v) * static_cast<long long>(v);
  }
  const std::string expected = "# signal: n=" + std::to_string(signal.size()) + " sum=" + std::to_string(sum) +
                               " sumsq=" + std::to_string(sumsq);
  for (const char* name : {"mfcc_snip_false.txt", "mfcc_snip_true.txt", "fbank_hamming.txt", "vad.txt"}) {
    const auto g = ReadGolden(name);
    ASSERT_GE(g.header.size(), 3u);
    EXPECT_EQ(g.header[2], expected) << name;
  }
}

TEST(FeaturesGolden, MfccSnipEdgesFalse) {
  const auto signal = GoldenSignal();
  const Matrix ours = Mfcc(AsvTorchMfcc(false)).Compute(signal.data(), static_cast<std::int64_t>(signal.size()));
  const auto g = ReadGolden("mfcc_snip_false.txt");
  EXPECT_EQ(ours.rows(), (40000 + 80) / 160);
  const double err = MaxAbsError(ours, g.values);
  Report("mfcc_snip_false", err);
  EXPECT_LE(err, kTolerance);
}

TEST(FeaturesGolden, MfccSnipEdgesTrue) {
  const auto signal = GoldenSignal();
  const Matrix ours = Mfcc(AsvTorchMfcc(true)).Compute(signal.data(), static_cast<std::int64_t>(signal.size()));
  const auto g = ReadGolden("mfcc_snip_true.txt");
  EXPECT_EQ(ours.rows(), 1 + (40000 - 400) / 160);
  const double err = MaxAbsError(ours, g.values);
  Report("mfcc_snip_true", err);
  EXPECT_LE(err, kTolerance);
}

TEST(FeaturesGolden, FbankHammingWindowedEnergy) {
  FbankOptions o;
  o.frame_opts.dither = 0.0f;
  o.frame_opts.snip_edges = false;
  o.frame_opts.window_type = "hamming";
  o.mel_opts.num_bins = 40;
  o.use_energy = true;
  o.raw_energy = false;
  const auto signal = GoldenSignal();
  const Matrix ours = Fbank(o).Compute(signal.data(), static_cast<std::int64_t>(signal.size()));
  const auto g = ReadGolden("fbank_hamming.txt");
  const double err = MaxAbsError(ours, g.values);
  Report("fbank_hamming", err);
  EXPECT_LE(err, kTolerance);
}

TEST(FeaturesGolden, VadOnReferenceMfcc) {
  const Matrix mfcc = FirstColumns(ReadGolden("mfcc_snip_false.txt").values, 10);
  const auto vad = ComputeVadEnergy(VadOptions::VoxcelebV2(), mfcc);
  const auto g = ReadGolden("vad.txt");
  ASSERT_EQ(static_cast<std::int64_t>(vad.size()), g.values.rows());
  int voiced = 0;
  for (std::size_t t = 0; t < vad.size(); ++t) {
    EXPECT_EQ(vad[t], g.values(static_cast<std::int64_t>(t), 0)) << "frame " << t;
    voiced += vad[t] == 1.0f;
  }
  EXPECT_GT(voiced, 50);
  EXPECT_LT(voiced, 200);
}

TEST(FeaturesGolden, VadOnOurMfccAgrees) {
  const auto signal = GoldenSignal();
  const Matrix ours = Mfcc(AsvTorchMfcc(false)).Compute(signal.data(), static_cast<std::int64_t>(signal.size()));
  const auto vad = ComputeVadEnergy(VadOptions::VoxcelebV2(), ours);
  const auto g = ReadGolden("vad.txt");
  for (std::size_t t = 0; t < vad.size(); ++t) EXPECT_EQ(vad[t], g.values(static_cast<std::int64_t>(t), 0)) << t;
}

void CheckCmn(const std::string& file, SlidingCmnOptions o) {
  const Matrix mfcc = FirstColumns(ReadGolden("mfcc_snip_false.txt").values, 10);
  const Matrix ours = ApplySlidingCmn(o, mfcc);
  const double err = MaxAbsError(ours, ReadGolden(file).values);
  Report(file, err);
  EXPECT_LE(err, kTolerance);
}

TEST(FeaturesGolden, SlidingCmnWindow300Centred) {
  CheckCmn("cmn_w300_center.txt", SlidingCmnOptions::AsvTorch(300));
}

TEST(FeaturesGolden, SlidingCmnWindow100CentredNormVars) {
  CheckCmn("cmn_w100_center_normvars.txt", SlidingCmnOptions::AsvTorch(100, true));
}

TEST(FeaturesGolden, SlidingCmnWindow100LeftMin50) {
  SlidingCmnOptions o;
  o.cmn_window = 100;
  o.min_window = 50;
  o.center = false;
  CheckCmn("cmn_w100_left_min50.txt", o);
}

TEST(FeaturesGolden, DeltasOrder2Window3) {
  const Matrix mfcc = FirstColumns(ReadGolden("mfcc_snip_false.txt").values, 10);
  DeltaOptions o;
  o.order = 2;
  o.window = 3;
  const double err = MaxAbsError(ComputeDeltas(o, mfcc), ReadGolden("deltas_order2_window3.txt").values);
  Report("deltas_order2_window3", err);
  EXPECT_LE(err, kTolerance);
}

}  // namespace
}  // namespace asv::features
