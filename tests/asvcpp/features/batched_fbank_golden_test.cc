// features::BatchedFbank against the per-frame features::Fbank, frame by frame: without dither
// for WeSpeaker's options, Kaldi's defaults and variants, and with dither on the same draws.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "asvcpp/features/batched_fbank.h"
#include "asvcpp/features/fbank.h"
#include "asvcpp/features/feature_window.h"
#include "tests/asvcpp/features/speech_signal.h"

namespace asv::features {
namespace {

using testing::SpeechLikeSignal;

torch::Tensor Batch(const std::vector<std::vector<float>>& signals) {
  const auto n = static_cast<std::int64_t>(signals.front().size());
  torch::Tensor batch = torch::empty({static_cast<std::int64_t>(signals.size()), n}, torch::kFloat32);
  for (std::size_t u = 0; u < signals.size(); ++u) {
    std::copy(signals[u].begin(), signals[u].end(), batch[static_cast<std::int64_t>(u)].data_ptr<float>());
  }
  return batch;
}

// Largest |got - want| over every frame and column, in log-mel units; `linear` compares
// log(max(x, FLT_EPSILON)) of linear mel energies. Both sides are float32: a mel bin whose energy
// is below e^-12 (6e-6) of the frame's strongest column carries rounding errors of the 400-sample
// sums of the strong part of the frame (the low bins of a frame with a loud tone and little
// low-frequency energy), up to a few 1e-4 in either implementation (in the worst such value here
// a float64 computation gives 5.701848, the batched 5.701791, features::Fbank 5.701642), so
// those count a tenth.
double WorstDifference(const torch::Tensor& got, const Matrix& want, bool linear) {
  EXPECT_EQ(got.size(0), want.rows());
  EXPECT_EQ(got.size(1), want.cols());
  const auto g = got.accessor<float, 2>();
  const auto log_of = [linear](double v) {
    return linear ? std::log(std::max(v, static_cast<double>(std::numeric_limits<float>::epsilon()))) : v;
  };
  double worst = 0.0;
  for (std::int64_t f = 0; f < std::min<std::int64_t>(got.size(0), want.rows()); ++f) {
    const std::int64_t cols = std::min<std::int64_t>(got.size(1), want.cols());
    double strongest = -std::numeric_limits<double>::infinity();
    for (std::int64_t c = 0; c < cols; ++c) strongest = std::max(strongest, log_of(want(f, c)));
    for (std::int64_t c = 0; c < cols; ++c) {
      const double w = log_of(want(f, c));
      const double diff = std::fabs(log_of(g[f][c]) - w);
      worst = std::max(worst, w < strongest - 12.0 ? diff / 10.0 : diff);
    }
  }
  return worst;
}

FbankOptions Wespeaker(bool snip_edges) {
  FbankOptions o = WespeakerFbankOptions();
  o.frame_opts.dither = 0.0f;
  o.frame_opts.snip_edges = snip_edges;
  return o;
}

// Every frame of every segment against features::Fbank (per frame, own FFT), within 1e-4
// absolute on the log filterbanks (see WorstDifference for the weakest bins): WeSpeaker's options with snip_edges true (theirs) and false,
// Kaldi's defaults (povey window, 23 bins), and variants through the other branches (energy
// column first and last, raw and windowed, floored; magnitude spectrum; no DC removal or
// pre-emphasis; linear mel energies, compared as logs).
TEST(BatchedFbankGolden, MatchesFbankOnEveryFrame) {
  struct Variant {
    FbankOptions opts;
    bool linear = false;  // use_log_fbank false
  };
  std::vector<Variant> variants;
  variants.push_back({Wespeaker(true)});
  variants.push_back({Wespeaker(false)});
  FbankOptions kaldi;
  kaldi.frame_opts.dither = 0.0f;
  variants.push_back({kaldi});
  FbankOptions v = Wespeaker(true);
  v.use_energy = true;
  v.energy_floor = 1e6f;  // above some frames' energy: the floor applies
  variants.push_back({v});
  v = Wespeaker(false);
  v.use_energy = true;
  v.raw_energy = false;
  v.htk_compat = true;
  v.energy_floor = 0.0f;
  v.use_power = false;
  variants.push_back({v});
  v = kaldi;
  v.frame_opts.remove_dc_offset = false;
  v.frame_opts.preemph_coeff = 0.0f;
  v.mel_opts.num_bins = 40;
  v.mel_opts.high_freq = -400.0f;
  variants.push_back({v});
  v = Wespeaker(true);
  v.use_log_fbank = false;
  variants.push_back({v, /*linear=*/true});

  const std::int64_t n = 32240 + 77;  // a training segment and a bit: reflected edges on both sides
  std::vector<std::vector<float>> signals = {SpeechLikeSignal(n, 11), SpeechLikeSignal(n, 12),
                                             std::vector<float>(static_cast<std::size_t>(n), 0.0f)};
  for (std::size_t i = 20000; i < 24000; ++i) signals[0][i] = 0.0f;  // digital silence: log(FLT_EPSILON)
  const torch::Tensor batch = Batch(signals);
  for (std::size_t k = 0; k < variants.size(); ++k) {
    SCOPED_TRACE(k);
    const FbankOptions& o = variants[k].opts;
    const BatchedFbank batched(o);
    const torch::Tensor got = batched.Compute(batch);
    const Fbank reference(o);
    ASSERT_EQ(got.sizes(), (std::vector<std::int64_t>{3, NumFrames(n, o.frame_opts), reference.Dim()}));
    EXPECT_EQ(batched.Dim(), reference.Dim());
    EXPECT_EQ(got.device(), batch.device());
    for (std::int64_t u = 0; u < 3; ++u) {
      const Matrix want = reference.Compute(signals[static_cast<std::size_t>(u)].data(), n);
      EXPECT_LT(WorstDifference(got[u], want, variants[k].linear), 1e-4) << "segment " << u;
    }
  }
}

// Signals shorter than a frame: none with snip_edges, one reflected frame without.
TEST(BatchedFbankGolden, ShortSignals) {
  const BatchedFbank snipped(Wespeaker(true));
  EXPECT_EQ(snipped.Compute(torch::zeros({2, 399})).sizes(), (std::vector<std::int64_t>{2, 0, 80}));
  const FbankOptions centred = Wespeaker(false);
  const std::vector<float> tiny = SpeechLikeSignal(90, 3);  // positions -120 .. 279 of a 90-sample signal
  const torch::Tensor got = BatchedFbank(centred).Compute(torch::tensor(tiny).view({1, 90}));
  const Matrix want = Fbank(centred).Compute(tiny.data(), 90);
  ASSERT_GT(want.rows(), 0);
  EXPECT_LT(WorstDifference(got[0], want, false), 1e-4);
}

// With dither, on the same draws: the documented draws are dither · torch::randn([batch, frames,
// WindowSize()]) from the generator, one row per extracted frame. Each reference frame is the
// frame features::ExtractFrame cuts (edges reflected) plus its row of noise, given to
// features::Fbank without dither as a one-frame signal (snip_edges true, so nothing is reflected
// again).
TEST(BatchedFbankGolden, DitherMatchesFbankOnTheSameDraws) {
  for (const bool snip_edges : {true, false}) {
    SCOPED_TRACE(snip_edges);
    FbankOptions o = Wespeaker(snip_edges);
    const float dither = 1.0f;
    const std::int64_t n = 8000 + 33;
    std::vector<std::vector<float>> signals = {SpeechLikeSignal(n, 21), SpeechLikeSignal(n, 22)};
    for (float& x : signals[1]) x *= 1e-3f;  // quiet: the dither matters
    const torch::Tensor batch = Batch(signals);
    const torch::Tensor got = BatchedFbank(o).Compute(batch, dither, at::make_generator<at::CPUGeneratorImpl>(7));
    const std::int64_t frames = NumFrames(n, o.frame_opts), length = o.frame_opts.WindowSize();
    const torch::Tensor noise = dither * torch::randn({2, frames, length}, at::make_generator<at::CPUGeneratorImpl>(7));
    FbankOptions one_frame = o;
    one_frame.frame_opts.snip_edges = true;
    const Fbank reference(one_frame);
    const auto r = noise.accessor<float, 3>();
    std::vector<float> frame(static_cast<std::size_t>(o.frame_opts.PaddedWindowSize()));
    const torch::Tensor clean = BatchedFbank(o).Compute(batch);
    double worst = 0.0, changed = 0.0;
    for (std::int64_t u = 0; u < 2; ++u) {
      for (std::int64_t f = 0; f < frames; ++f) {
        ExtractFrame(signals[static_cast<std::size_t>(u)].data(), n, f, o.frame_opts, frame.data());
        for (std::int64_t i = 0; i < length; ++i) frame[static_cast<std::size_t>(i)] += r[u][f][i];
        const Matrix want = reference.Compute(frame.data(), length);
        ASSERT_EQ(want.rows(), 1);
        worst = std::max(worst, WorstDifference(got[u].narrow(0, f, 1), want, false));
        changed = std::max(changed, (got[u][f] - clean[u][f]).abs().max().item<double>());
      }
    }
    EXPECT_LT(worst, 1e-4);
    EXPECT_GT(changed, 0.1);  // the quiet segment's filterbanks moved: the noise went in
  }
}

}  // namespace
}  // namespace asv::features
