// Kaldi's triangular mel filterbank (kaldi-asr/kaldi: src/feat/mel-computations.{h,cc},
// class MelBanks), including its piecewise-linear VTLN frequency warp.
//
// mel(f) = 1127·ln(1 + f/700). num_bins + 2 points are equally spaced in mel between
// mel(low_freq) and mel(high_freq); bin b has edges left = p[b], centre = p[b+1],
// right = p[b+2]. FFT bin i (0 <= i < fft_size/2, the Nyquist bin is not used) with centre
// frequency i·fs/fft_size and mel value m gets weight (m − left)/(centre − left) for
// left < m <= centre and (right − m)/(right − centre) for centre < m < right. Triangles are
// unnormalised. All arithmetic in float, as Kaldi.
#pragma once

#include <cstdint>
#include <vector>

#include "asvcpp/features/feature_options.h"

namespace asv::features {

class MelBanks {
 public:
  /// Builds the banks for FFT size frame_opts.PaddedWindowSize() at frame_opts.samp_freq.
  /// `vtln_warp` 1.0 means no warping. Throws DataError for low/high frequencies outside
  /// [0, Nyquist] or high <= low, for bad VTLN cut-offs when vtln_warp != 1, and when a bin
  /// covers no FFT bin ("too many mel bins").
  MelBanks(const MelOptions& opts, const FrameOptions& frame_opts, float vtln_warp = 1.0f);

  /// mel_energies[b] = Σ_i weight_b[i]·power[i] in float (Kaldi: VecVec, i.e. BLAS sdot; like
  /// it we sum in four interleaved partial sums). `power` has at least fft_size/2 values (the
  /// output of PowerSpectrum), `mel_energies` has NumBins() values.
  void Compute(const float* power, float* mel_energies) const;

  std::int32_t NumBins() const noexcept { return static_cast<std::int32_t>(offsets_.size()); }
  /// First FFT bin with a nonzero weight in bin `b`.
  std::int32_t Offset(std::int32_t b) const { return offsets_[static_cast<std::size_t>(b)]; }
  /// Weights of bin `b`, for FFT bins Offset(b), Offset(b)+1, ...
  const std::vector<float>& Weights(std::int32_t b) const { return weights_[static_cast<std::size_t>(b)]; }
  /// Centre frequency of each bin, Hz.
  const std::vector<float>& CenterFreqs() const noexcept { return center_freqs_; }

  /// 1127·ln(1 + f/700) in float (MelBanks::MelScale).
  static float MelScale(float freq);
  /// 700·(exp(mel/1127) − 1) in float (MelBanks::InverseMelScale).
  static float InverseMelScale(float mel);
  /// Kaldi's VTLN warp (MelBanks::VtlnWarpFreq): identity outside [low_freq, high_freq],
  /// piecewise linear with slope 1/warp between the inflection points
  /// l = vtln_low·max(1, warp) and h = vtln_high·min(1, warp), fixed at low_freq and high_freq.
  static float VtlnWarpFreq(float vtln_low, float vtln_high, float low_freq, float high_freq, float vtln_warp,
                            float freq);

 private:
  std::vector<std::int32_t> offsets_;
  std::vector<std::vector<float>> weights_;
  std::vector<float> center_freqs_;
};

}  // namespace asv::features
