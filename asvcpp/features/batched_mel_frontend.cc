#include "asvcpp/features/batched_mel_frontend.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "asvcpp/features/feature_window.h"
#include "asvcpp/features/mel_banks.h"

namespace asv::features {

BatchedMelFrontEnd::BatchedMelFrontEnd(const FrameOptions& frame_opts, const MelOptions& mel_opts)
    : frame_opts_(frame_opts) {
  const std::vector<float> window = MakeWindowFunction(frame_opts_);
  window_ = torch::tensor(window, torch::TensorOptions().dtype(torch::kFloat32));
  const MelBanks banks(mel_opts, frame_opts_);
  const std::int64_t num_fft_bins = frame_opts_.PaddedWindowSize() / 2 + 1;
  num_bins_ = banks.NumBins();
  mel_transposed_ = torch::zeros({num_fft_bins, num_bins_}, torch::kFloat32);
  auto mel = mel_transposed_.accessor<float, 2>();
  for (std::int32_t b = 0; b < num_bins_; ++b) {
    const std::vector<float>& w = banks.Weights(b);
    for (std::size_t k = 0; k < w.size(); ++k) mel[banks.Offset(b) + static_cast<std::int64_t>(k)][b] = w[k];
  }
}

BatchedMelFrontEnd::Output BatchedMelFrontEnd::Compute(const torch::Tensor& samples, MelFrontEnd::Energy energy,
                                                       bool use_power, float dither,
                                                       const std::optional<torch::Generator>& generator,
                                                       const char* caller) const {
  if (samples.dim() != 2 || samples.scalar_type() != torch::kFloat32) {
    throw std::invalid_argument(fmt::format("{}: samples must be a [batch, n] float32 tensor, got {} dimensions of {}",
                                            caller, samples.dim(), c10::toString(samples.scalar_type())));
  }
  if (!(dither >= 0.0f) || !std::isfinite(dither)) {
    throw std::invalid_argument(fmt::format("{}: dither must be finite and >= 0, got {}", caller, dither));
  }
  const auto device = samples.device();
  if (dither > 0.0f && generator.has_value() && generator->device().type() != device.type()) {
    throw std::invalid_argument(fmt::format("{}: the generator is on {}, the samples on {}", caller,
                                            generator->device().str(), device.str()));
  }
  const FrameOptions& fo = frame_opts_;
  const std::int64_t batch = samples.size(0), n = samples.size(1);
  const std::int64_t num_frames = NumFrames(n, fo);
  Output out;
  if (num_frames == 0) {
    out.mel = torch::empty({batch, 0, num_bins_}, samples.options());
    if (energy != MelFrontEnd::Energy::kNone) out.log_energy = torch::empty({batch, 0}, samples.options());
    return out;
  }
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
  if (dither > 0.0f) {
    c10::optional<at::Generator> gen;  // c10::optional: LibTorch 1.13's factories take it, 2.x's std::optional alias
    if (generator.has_value()) gen = *generator;
    frames = frames + dither * torch::randn({batch, num_frames, length}, gen, samples.options());
  }
  if (fo.remove_dc_offset) frames = frames - frames.mean(-1, /*keepdim=*/true);
  const float eps = std::numeric_limits<float>::epsilon();
  if (energy == MelFrontEnd::Energy::kRaw) out.log_energy = frames.square().sum(-1).clamp_min(eps).log();
  // Pre-emphasis x[i] - c x[i - 1], with x[-1] = x[0] (Kaldi), then the window.
  const float c = fo.preemph_coeff;
  if (c != 0.0f) {
    const torch::Tensor previous = torch::cat({frames.narrow(-1, 0, 1), frames.narrow(-1, 0, length - 1)}, -1);
    frames = frames - c * previous;
  }
  frames = frames * window_.to(device);
  if (energy == MelFrontEnd::Energy::kWindowed) out.log_energy = frames.square().sum(-1).clamp_min(eps).log();
  // Power spectrum of the zero-padded frames, [batch, num_frames, padded / 2 + 1].
  const torch::Tensor spectrum = torch::fft::rfft(frames, fo.PaddedWindowSize(), -1);
  torch::Tensor power = torch::real(spectrum).square() + torch::imag(spectrum).square();
  if (!use_power) power = power.sqrt();
  out.mel = power.matmul(mel_transposed_.to(device));
  return out;
}

}  // namespace asv::features
