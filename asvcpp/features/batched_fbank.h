// Kaldi-compatible log mel filterbanks of a batch of signals as LibTorch operations, on any device
// (the CPU, a GPU), with Kaldi's dither: the same computation as features::Fbank
// (asvcpp/features/fbank.h, kaldi-asr/kaldi src/feat/feature-fbank.cc FbankComputer), batched,
// for the training data path that cuts fixed-length segments and extracts their features on the
// training device. Per frame: extraction (edges reflected when snip_edges is false), dither, DC
// removal, raw log energy, pre-emphasis, window, zero padding, real FFT, power (or magnitude)
// spectrum, mel energies, log(max(mel, FLT_EPSILON)) when use_log_fbank, and with use_energy a
// log-energy column first (last with htk_compat). The front end up to the mel energies is
// BatchedMelFrontEnd (batched_mel_frontend.h), shared with BatchedMfcc. Also the per-segment mean
// normalisation that follows it in WeSpeaker's data pipeline.
// Needs LibTorch (library asv_features_torch); asv_features itself stays LibTorch-free.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>

#include "asvcpp/features/batched_mel_frontend.h"
#include "asvcpp/features/feature_options.h"

namespace asv::features {

class BatchedFbank {
 public:
  /// Throws DataError for options that features::Fbank rejects too (FbankOptions::Validate,
  /// round_to_power_of_two false, a mel range MelBanks rejects). opts.frame_opts.dither is not
  /// used: the amount of dither is an argument of Compute (pass frame_opts.dither for training,
  /// 0 for evaluation).
  explicit BatchedFbank(const FbankOptions& opts);

  /// Output dimension: num_bins (+1 with use_energy).
  std::int32_t Dim() const noexcept { return opts_.mel_opts.num_bins + (opts_.use_energy ? 1 : 0); }
  const FbankOptions& options() const noexcept { return opts_; }

  /// Filterbanks of `samples` [batch, n] (float32, int16-range values at frame_opts.samp_freq Hz,
  /// any device; segments of other lengths go in separate calls or are cut to one length), shape
  /// [batch, NumFrames(n, frame_opts), Dim()] float32 on the same device; [batch, 0, Dim()] when n is
  /// shorter than one frame (snip_edges true) or empty.
  ///
  /// Dither (Kaldi's Dither in ProcessWindow, torchaudio's kaldi.fbank likewise): with `dither` > 0,
  /// `dither` times a standard normal draw is added to every sample of every extracted frame before
  /// anything else, independently for overlapping frames, in sample units. The draws are one
  /// torch::randn of shape [batch, frames, WindowSize()] from `generator` (it must be on the
  /// samples' device type: a CPU generator for CPU samples, a CUDA one for CUDA samples), or from
  /// the device's default generator when `generator` is empty; a generator in the same state gives
  /// the same output on the same device. `dither` 0 draws nothing and matches
  /// features::Fbank::Compute without dither within 1e-4 absolute (float32 rounding; the FFT differs).
  ///
  /// Throws std::invalid_argument when `samples` is not a 2-D float32 tensor, when `dither` is
  /// negative or not finite, or when the generator is on another device type than the samples.
  torch::Tensor Compute(const torch::Tensor& samples, float dither = 0.0f,
                        const std::optional<torch::Generator>& generator = std::nullopt) const;

 private:
  FbankOptions opts_;
  BatchedMelFrontEnd front_end_;
  float log_energy_floor_ = 0.0f;
};

/// Per-segment mean normalisation, WeSpeaker's apply_cmvn with norm_mean true and norm_var false
/// (WeSpeaker wespeaker/dataset/processor.py, apply_cmvn: the mean over frames of each feature
/// dimension is subtracted; no variance normalisation). `features` [batch, frames, dim] float32 on
/// any device; returns a new tensor of the same shape, dtype and device, each segment minus its
/// own mean over its frames. A segment with no frames stays empty. Throws std::invalid_argument
/// when `features` is not a 3-D floating-point tensor.
torch::Tensor SubtractSegmentMean(const torch::Tensor& features);

}  // namespace asv::features
