#include "asvcpp/features/batched_mfcc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/features/feature_window.h"
#include "asvcpp/features/mfcc.h"
#include "tests/asvcpp/features/speech_signal.h"
#include "tests/asvcpp/features/test_util.h"

namespace asv::features {
namespace {

using testing::SpeechLikeSignal;

MfccOptions AsvtorchOptions() { return testing::AsvtorchMfccOptions(0.0f); }  // without dither

// Every frame of every utterance of the batch against features::Mfcc (per frame, own FFT), for
// the ASVtorch options and Kaldi's defaults (snip_edges, 13 ceps, 23 bins) and variants that take
// the other branches (windowed energy, energy floor, no liftering, htk_compat, no DC removal, no
// pre-emphasis, hamming window, no use_energy).
TEST(BatchedMfcc, MatchesMfccOnEveryFrame) {
  std::vector<MfccOptions> variants;
  variants.push_back(AsvtorchOptions());
  MfccOptions kaldi;
  kaldi.frame_opts.dither = 0.0f;
  variants.push_back(kaldi);
  MfccOptions v = AsvtorchOptions();
  v.raw_energy = false;
  v.energy_floor = 1e6f;  // above some frames' energy: the floor applies
  v.cepstral_lifter = 0.0f;
  variants.push_back(v);
  v = kaldi;
  v.htk_compat = true;
  v.use_energy = false;
  v.frame_opts.remove_dc_offset = false;
  v.frame_opts.window_type = "hamming";  // non-zero at the ends: the first sample's pre-emphasis counts
  variants.push_back(v);
  v = AsvtorchOptions();
  v.htk_compat = true;
  v.frame_opts.preemph_coeff = 0.0f;
  variants.push_back(v);
  const std::int64_t n = 16000 + 123;  // odd length: reflected edges on both sides
  const std::vector<float> a = SpeechLikeSignal(n, 1), b = SpeechLikeSignal(n, 2);
  torch::Tensor batch = torch::empty({2, n}, torch::kFloat32);
  std::copy(a.begin(), a.end(), batch[0].data_ptr<float>());
  std::copy(b.begin(), b.end(), batch[1].data_ptr<float>());
  for (std::size_t k = 0; k < variants.size(); ++k) {
    SCOPED_TRACE(k);
    const MfccOptions& o = variants[k];
    const torch::Tensor got = BatchedMfcc(o).Compute(batch);
    const Mfcc reference(o);
    const std::int64_t frames = NumFrames(n, o.frame_opts);
    ASSERT_EQ(got.sizes(), (std::vector<std::int64_t>{2, frames, o.num_ceps}));
    for (int u = 0; u < 2; ++u) {
      const Matrix want = reference.Compute(u == 0 ? a.data() : b.data(), n);
      const torch::Tensor utterance = got[u];
      const auto g = utterance.accessor<float, 2>();
      double worst = 0.0;
      for (std::int64_t f = 0; f < frames; ++f) {
        for (std::int32_t c = 0; c < o.num_ceps; ++c) {
          // float32 rounding of sums over 400-sample frames and 512-point FFTs, amplified by the
          // log of small mel energies: a relative 1e-4 of the coefficient's scale.
          const double diff = std::fabs(g[f][c] - want(f, c)) / (1.0 + std::fabs(want(f, c)));
          worst = std::max(worst, diff);
        }
      }
      EXPECT_LT(worst, 1e-4) << "utterance " << u;
    }
  }
}

TEST(BatchedMfcc, ShortSignalsAndBadInput) {
  MfccOptions kaldi;
  kaldi.frame_opts.dither = 0.0f;
  const BatchedMfcc mfcc(kaldi);
  const torch::Tensor none = mfcc.Compute(torch::zeros({3, 399}));  // shorter than one 400-sample frame
  EXPECT_EQ(none.sizes(), (std::vector<std::int64_t>{3, 0, 13}));
  // A signal shorter than a frame with snip_edges false: one frame, positions reflected more than
  // once, as features::Mfcc does.
  const MfccOptions centred = AsvtorchOptions();
  const std::vector<float> tiny = SpeechLikeSignal(90, 3);  // positions -120 .. 279 of a 90-sample signal
  const torch::Tensor got = BatchedMfcc(centred).Compute(torch::tensor(tiny).view({1, 90}));
  const Matrix want = Mfcc(centred).Compute(tiny.data(), 90);
  ASSERT_EQ(got.size(1), want.rows());
  ASSERT_GT(want.rows(), 0);
  for (std::int64_t f = 0; f < want.rows(); ++f) {
    for (std::int32_t c = 0; c < centred.num_ceps; ++c) {
      EXPECT_NEAR(got[0][f][c].item<float>(), want(f, c), 1e-4 * (1.0 + std::fabs(want(f, c)))) << f << "," << c;
    }
  }
  EXPECT_THROW(mfcc.Compute(torch::zeros({400})), std::invalid_argument);
  EXPECT_THROW(mfcc.Compute(torch::zeros({1, 400}, torch::kFloat64)), std::invalid_argument);
  MfccOptions dithered;  // Kaldi's default dither 1.0
  EXPECT_THROW(BatchedMfcc{dithered}, ConfigError);
}

}  // namespace
}  // namespace asv::features
