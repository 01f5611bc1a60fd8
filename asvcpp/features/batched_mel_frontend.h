// The part of the batched Kaldi features that BatchedMfcc and BatchedFbank share, as LibTorch
// operations on any device: the batched counterpart of MelFrontEnd (mel_frontend.h; kaldi-asr/kaldi
// OfflineFeatureTpl::Compute in src/feat/feature-common-inl.h with ExtractWindow, then the first
// half of MfccComputer::Compute / FbankComputer::Compute). Per frame: extraction (edges reflected
// when snip_edges is false), dither, DC removal, raw log energy, pre-emphasis, window, zero padding,
// real FFT, power (or magnitude) spectrum and linear mel energies. Internal to asv_features_torch:
// use BatchedMfcc or BatchedFbank.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>

#include "asvcpp/features/feature_options.h"
#include "asvcpp/features/mel_frontend.h"

namespace asv::features {

/// Immutable after construction; Compute is const, so one object serves many threads.
class BatchedMelFrontEnd {
 public:
  /// Mel energies and log energies of a batch.
  struct Output {
    torch::Tensor mel;         ///< [batch, frames, num_bins] float32, linear (not log) mel energies
    torch::Tensor log_energy;  ///< [batch, frames] float32 natural-log energy; undefined for Energy::kNone
  };

  /// Builds the window and the mel banks (as a [fft bins, num_bins] matrix) on the CPU; no VTLN.
  /// Throws DataError for options MelBanks rejects. The caller validates `frame_opts` (and ignores
  /// frame_opts.dither: the amount is an argument of Compute).
  BatchedMelFrontEnd(const FrameOptions& frame_opts, const MelOptions& mel_opts);

  std::int32_t NumBins() const noexcept { return num_bins_; }

  /// Mel energies of `samples` [batch, n] (float32, int16-range values, any device). `energy`
  /// selects the log energy as MelFrontEnd::ComputeFrame does (floored at FLT_EPSILON before the
  /// log); `use_power` false takes the magnitude spectrum. With `dither` > 0, dither · N(0, 1) is
  /// added to every sample of every extracted frame before anything else (Kaldi's Dither in
  /// ProcessWindow: overlapping frames get independent draws), drawn by torch::randn with
  /// `generator` (the device's default generator when empty). Frames: NumFrames(n, frame_opts);
  /// zero frames give [batch, 0, num_bins]. Throws std::invalid_argument naming `caller` when
  /// `samples` is not a 2-D float32 tensor, when `dither` is negative or not finite, or when the
  /// generator's device type is not the samples'.
  Output Compute(const torch::Tensor& samples, MelFrontEnd::Energy energy, bool use_power, float dither,
                 const std::optional<torch::Generator>& generator, const char* caller) const;

 private:
  FrameOptions frame_opts_;
  std::int32_t num_bins_ = 0;
  torch::Tensor window_;          // [WindowSize()] float32
  torch::Tensor mel_transposed_;  // [PaddedWindowSize() / 2 + 1, num_bins] float32, the mel banks
};

}  // namespace asv::features
