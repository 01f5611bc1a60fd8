#include "asvcpp/features/batched_mfcc.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/features/feature_window.h"
#include "asvcpp/features/mel_banks.h"
#include "asvcpp/features/mfcc.h"

namespace asv::features {
namespace {

torch::Tensor FloatTensor(const std::vector<float>& v) {
  return torch::tensor(v, torch::TensorOptions().dtype(torch::kFloat32));
}

}  // namespace

BatchedMfcc::BatchedMfcc(const MfccOptions& opts) : opts_(opts) {
  opts_.Validate();
  if (opts_.frame_opts.dither != 0.0f) {
    throw ConfigError(fmt::format(
        "BatchedMfcc computes without dither, but the options ask for dither {} (set --dither=0, or extract "
        "with features::Mfcc)",
        opts_.frame_opts.dither));
  }
  window_ = FloatTensor(MakeWindowFunction(opts_.frame_opts));
  const MelBanks banks(opts_.mel_opts, opts_.frame_opts);
  const std::int64_t num_fft_bins = opts_.frame_opts.PaddedWindowSize() / 2 + 1;
  const std::int32_t num_bins = banks.NumBins();
  mel_transposed_ = torch::zeros({num_fft_bins, num_bins}, torch::kFloat32);
  auto mel = mel_transposed_.accessor<float, 2>();
  for (std::int32_t b = 0; b < num_bins; ++b) {
    const std::vector<float>& w = banks.Weights(b);
    for (std::size_t k = 0; k < w.size(); ++k) mel[banks.Offset(b) + static_cast<std::int64_t>(k)][b] = w[k];
  }
  const Matrix dct = ComputeDctMatrix(opts_.num_ceps, num_bins);  // [num_ceps, num_bins]
  dct_transposed_ = torch::from_blob(const_cast<float*>(dct.data()), {dct.rows(), dct.cols()}, torch::kFloat32)
                        .t()
                        .contiguous();
  if (opts_.cepstral_lifter != 0.0f) lifter_ = FloatTensor(ComputeLifterCoeffs(opts_.cepstral_lifter, opts_.num_ceps));
  if (opts_.energy_floor > 0.0f) log_energy_floor_ = std::log(opts_.energy_floor);
}

torch::Tensor BatchedMfcc::Compute(const torch::Tensor& samples) const {
  torch::NoGradGuard no_grad;
  if (samples.dim() != 2 || samples.scalar_type() != torch::kFloat32) {
    throw std::invalid_argument(fmt::format("BatchedMfcc: samples must be a [batch, n] float32 tensor, got {} dimensions of {}",
                                            samples.dim(), c10::toString(samples.scalar_type())));
  }
  const FrameOptions& fo = opts_.frame_opts;
  const std::int64_t batch = samples.size(0), n = samples.size(1);
  const std::int64_t num_frames = NumFrames(n, fo);
  const auto device = samples.device();
  if (num_frames == 0) return torch::empty({batch, 0, opts_.num_ceps}, samples.options());
  // Sample indices of every frame position, [num_frames, length], built on the device (first
  // samples are linear in the frame index, FirstSampleOfFrame). Positions outside [0, n) are
  // reflected as Kaldi's ExtractWindow does (-1 -> 0, n -> n - 1), repeatedly for signals shorter
  // than a frame.
  const std::int64_t length = fo.WindowSize();
  const auto int64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  torch::Tensor index = (torch::arange(num_frames, int64) * fo.WindowShift() + FirstSampleOfFrame(0, fo)).unsqueeze(1) +
                        torch::arange(length, int64);
  while ((index < 0).logical_or(index >= n).any().item<bool>()) {
    index = torch::where(index < 0, -index - 1, index);
    index = torch::where(index >= n, (2 * n - 1) - index, index);
  }
  // [batch, num_frames, length]
  torch::Tensor frames = samples.index_select(1, index.view({-1})).view({batch, num_frames, length});
  if (fo.remove_dc_offset) frames = frames - frames.mean(-1, /*keepdim=*/true);
  const float eps = std::numeric_limits<float>::epsilon();
  torch::Tensor log_energy;
  if (opts_.use_energy && opts_.raw_energy) log_energy = frames.square().sum(-1).clamp_min(eps).log();
  // Pre-emphasis x[i] - c x[i - 1], with x[-1] = x[0] (Kaldi), then the window.
  const float c = fo.preemph_coeff;
  if (c != 0.0f) {
    const torch::Tensor previous = torch::cat({frames.narrow(-1, 0, 1), frames.narrow(-1, 0, length - 1)}, -1);
    frames = frames - c * previous;
  }
  frames = frames * window_.to(device);
  if (opts_.use_energy && !opts_.raw_energy) log_energy = frames.square().sum(-1).clamp_min(eps).log();
  // Power spectrum of the zero-padded frames, [batch, num_frames, padded / 2 + 1].
  const torch::Tensor spectrum = torch::fft::rfft(frames, fo.PaddedWindowSize(), -1);
  const torch::Tensor power = torch::real(spectrum).square() + torch::imag(spectrum).square();
  torch::Tensor features = power.matmul(mel_transposed_.to(device)).clamp_min(eps).log().matmul(dct_transposed_.to(device));
  if (lifter_.defined()) features = features * lifter_.to(device);
  if (opts_.use_energy) {
    if (opts_.energy_floor > 0.0f) log_energy = log_energy.clamp_min(log_energy_floor_);
    features.select(-1, 0).copy_(log_energy);
  }
  if (opts_.htk_compat) {
    // C0 or the energy goes last (C0 times sqrt(2) without use_energy).
    torch::Tensor first = features.narrow(-1, 0, 1);
    if (!opts_.use_energy) first = first * static_cast<float>(M_SQRT2);
    features = torch::cat({features.narrow(-1, 1, opts_.num_ceps - 1), first}, -1);
  }
  return features.contiguous();
}

}  // namespace asv::features
