// Kaldi-compatible log mel filterbank extraction (kaldi-asr/kaldi: src/feat/feature-fbank.{h,cc}
// FbankComputer, driven as compute-fbank-feats does). Shares MelFrontEnd with Mfcc.
//
// Per frame: mel energies from MelFrontEnd (power spectrum, or magnitude with
// use_power=false), log(max(mel, FLT_EPSILON)) when use_log_fbank, and with use_energy a
// log-energy column first (last with htk_compat), floored at log(energy_floor) if > 0.
#pragma once

#include <cstdint>

#include "asvcpp/base/matrix.h"
#include "asvcpp/features/feature_options.h"
#include "asvcpp/features/mel_frontend.h"

namespace asv::features {

/// Filterbank extractor; same construction/threading contract as Mfcc.
class Fbank {
 public:
  /// Throws DataError for invalid options.
  explicit Fbank(const FbankOptions& opts, float vtln_warp = 1.0f);

  /// Output dimension: num_bins (+1 with use_energy).
  std::int32_t Dim() const noexcept { return opts_.mel_opts.num_bins + (opts_.use_energy ? 1 : 0); }
  const FbankOptions& options() const noexcept { return opts_; }

  /// Features of `samples` [n] (int16-range values), shape [NumFrames(n, frame_opts), Dim()];
  /// dither from a GaussianRng seeded with `dither_seed`.
  Matrix Compute(const float* samples, std::int64_t n, std::uint64_t dither_seed = 0) const;

 private:
  FbankOptions opts_;
  MelFrontEnd front_end_;
  float log_energy_floor_ = 0.0f;
};

}  // namespace asv::features
