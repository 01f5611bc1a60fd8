#include "asvcpp/features/batched_fbank.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "asvcpp/base/error.h"

namespace asv::features {
namespace {

const FbankOptions& ValidatedFbank(const FbankOptions& opts) {
  opts.Validate();
  const std::int32_t padded = opts.frame_opts.PaddedWindowSize();
  if (!opts.frame_opts.round_to_power_of_two || (padded & (padded - 1)) != 0) {
    // As features::Fbank (MelFrontEnd), the reference this class is tested against.
    throw DataError("--round-to-power-of-two=false is not supported (the FFT needs a power-of-two size)");
  }
  return opts;
}

}  // namespace

BatchedFbank::BatchedFbank(const FbankOptions& opts)
    : opts_(ValidatedFbank(opts)), front_end_(opts_.frame_opts, opts_.mel_opts) {
  if (opts_.energy_floor > 0.0f) log_energy_floor_ = std::log(opts_.energy_floor);
}

torch::Tensor BatchedFbank::Compute(const torch::Tensor& samples, float dither,
                                    const std::optional<torch::Generator>& generator) const {
  torch::NoGradGuard no_grad;
  const auto energy = !opts_.use_energy  ? MelFrontEnd::Energy::kNone
                      : opts_.raw_energy ? MelFrontEnd::Energy::kRaw
                                         : MelFrontEnd::Energy::kWindowed;
  const BatchedMelFrontEnd::Output front =
      front_end_.Compute(samples, energy, opts_.use_power, dither, generator, "BatchedFbank");
  torch::Tensor features =
      opts_.use_log_fbank ? front.mel.clamp_min(std::numeric_limits<float>::epsilon()).log() : front.mel;
  if (opts_.use_energy) {
    torch::Tensor log_energy = front.log_energy;
    if (opts_.energy_floor > 0.0f) log_energy = log_energy.clamp_min(log_energy_floor_);
    log_energy = log_energy.unsqueeze(-1);
    features = opts_.htk_compat ? torch::cat({features, log_energy}, -1) : torch::cat({log_energy, features}, -1);
  }
  return features.contiguous();
}

torch::Tensor SubtractSegmentMean(const torch::Tensor& features) {
  if (features.dim() != 3 || !torch::isFloatingType(features.scalar_type())) {
    throw std::invalid_argument(
        fmt::format("SubtractSegmentMean: features must be a [batch, frames, dim] floating-point tensor, got {} "
                    "dimensions of {}",
                    features.dim(), c10::toString(features.scalar_type())));
  }
  if (features.size(1) == 0) return features.clone();
  return features - features.mean(1, /*keepdim=*/true);
}

}  // namespace asv::features
