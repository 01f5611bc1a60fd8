// Kaldi-compatible MFCCs of a batch of signals as LibTorch operations, on any device (the CPU, a
// GPU): the same computation as features::Mfcc (asvcpp/features/mfcc.h, kaldi-asr/kaldi
// src/feat/feature-mfcc.cc) without dither, batched. Per frame: extraction (edges reflected when
// snip_edges is false), DC removal, raw log energy, pre-emphasis, window, zero padding, real FFT,
// power spectrum, mel energies, log(max(mel, FLT_EPSILON)), DCT, liftering, C0 replaced by the log
// energy. Frames come from one gather of sample indices computed on the device, the FFT is torch::fft::rfft,
// mel banks and DCT are matrix products, so a whole batch is a handful of kernels. Everything up to
// the mel energies is BatchedMelFrontEnd (batched_mel_frontend.h), shared with BatchedFbank.
// Needs LibTorch (library asv_features_torch); asv_features itself stays LibTorch-free.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "asvcpp/features/batched_mel_frontend.h"
#include "asvcpp/features/feature_options.h"

namespace asv::features {

class BatchedMfcc {
 public:
  /// Throws ConfigError when `opts` asks for dither != 0, which this class does not do (extract
  /// with features::Mfcc for it); DataError for options that are invalid for features::Mfcc too.
  explicit BatchedMfcc(const MfccOptions& opts);

  /// Output dimension: num_ceps.
  std::int32_t Dim() const noexcept { return opts_.num_ceps; }

  /// MFCCs of `samples` [batch, n] (float32, int16-range values at frame_opts.samp_freq Hz, any
  /// device; utterances of other lengths go in separate calls or are cut to one length), shape
  /// [batch, NumFrames(n), num_ceps] float32 on the same device; [batch, 0, num_ceps] when n is
  /// shorter than one frame. Matches features::Mfcc::Compute without dither to float32 rounding
  /// (the FFT differs). Throws std::invalid_argument when `samples` is not a 2-D float32 tensor.
  torch::Tensor Compute(const torch::Tensor& samples) const;

 private:
  MfccOptions opts_;
  BatchedMelFrontEnd front_end_;
  torch::Tensor dct_transposed_;  // [num_bins, num_ceps] float32 (ComputeDctMatrix transposed)
  torch::Tensor lifter_;          // [num_ceps] float32, undefined without liftering
  float log_energy_floor_ = 0.0f;
};

}  // namespace asv::features
