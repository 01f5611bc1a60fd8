// Kaldi-compatible MFCC extraction (kaldi-asr/kaldi: src/feat/feature-mfcc.{h,cc}
// MfccComputer, driven as compute-mfcc-feats does through OfflineFeatureTpl::Compute).
//
// Per frame: MelFrontEnd (framing, dither, DC removal, raw log energy, pre-emphasis, window,
// FFT, power spectrum, mel energies), then log(max(mel, FLT_EPSILON)), DCT (ComputeDctMatrix,
// first num_ceps rows), liftering c_i *= 1 + (Q/2)·sin(πi/Q), and with use_energy C0 replaced by
// the log energy (floored at log(energy_floor) when energy_floor > 0); htk_compat moves
// C0/energy last (C0·√2 without use_energy).
#pragma once

#include <cstdint>
#include <vector>

#include "asvcpp/base/matrix.h"
#include "asvcpp/features/feature_options.h"
#include "asvcpp/features/mel_frontend.h"

namespace asv::features {

/// Kaldi's ComputeDctMatrix (src/matrix/matrix-functions.cc): [rows, cols] with
/// M(0, n) = sqrt(1/cols) and M(k, n) = sqrt(2/cols)·cos(π/cols·(n + ½)·k) for k >= 1, in float.
/// A square one is orthonormal.
Matrix ComputeDctMatrix(std::int32_t rows, std::int32_t cols);

/// Kaldi's ComputeLifterCoeffs (src/feat/mel-computations.cc): [n] values
/// 1 + 0.5·Q·sin(π·i/Q).
std::vector<float> ComputeLifterCoeffs(float q, std::int32_t n);

/// MFCC extractor. Construct once (window, mel banks, DCT matrix, lifter and FFT tables are
/// precomputed); Compute is const and keeps no state between calls, so one object can be used
/// by many threads at once.
class Mfcc {
 public:
  /// Throws DataError for invalid options (MfccOptions::Validate, mel frequency range).
  /// `vtln_warp` is Kaldi's --vtln-warp of compute-mfcc-feats (1.0 = none).
  explicit Mfcc(const MfccOptions& opts, float vtln_warp = 1.0f);

  /// Output dimension: num_ceps.
  std::int32_t Dim() const noexcept { return opts_.num_ceps; }
  const MfccOptions& options() const noexcept { return opts_; }

  /// MFCCs of `samples` [n] (int16-range values at opts.frame_opts.samp_freq Hz), shape
  /// [NumFrames(n, frame_opts), num_ceps]; [0, num_ceps] when the signal is shorter than one
  /// frame. Dither noise comes from a GaussianRng seeded with `dither_seed`, so the result is a
  /// pure function of (options, samples, seed). Allocates its buffers once per call.
  Matrix Compute(const float* samples, std::int64_t n, std::uint64_t dither_seed = 0) const;

 private:
  MfccOptions opts_;
  MelFrontEnd front_end_;
  Matrix dct_transposed_;      // [num_bins, num_ceps], ComputeDctMatrix transposed
  std::vector<float> lifter_;  // [num_ceps], empty without liftering
  float log_energy_floor_ = 0.0f;
};

}  // namespace asv::features
