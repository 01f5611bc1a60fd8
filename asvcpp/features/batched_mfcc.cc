#include "asvcpp/features/batched_mfcc.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/features/mfcc.h"

namespace asv::features {
namespace {

const MfccOptions& ValidatedBatchedMfcc(const MfccOptions& opts) {
  opts.Validate();
  if (opts.frame_opts.dither != 0.0f) {
    throw ConfigError(fmt::format(
        "BatchedMfcc computes without dither, but the options ask for dither {} (set --dither=0, or extract "
        "with features::Mfcc)",
        opts.frame_opts.dither));
  }
  return opts;
}

torch::Tensor FloatTensor(const std::vector<float>& v) {
  return torch::tensor(v, torch::TensorOptions().dtype(torch::kFloat32));
}

}  // namespace

BatchedMfcc::BatchedMfcc(const MfccOptions& opts)
    : opts_(ValidatedBatchedMfcc(opts)), front_end_(opts_.frame_opts, opts_.mel_opts) {
  const Matrix dct = ComputeDctMatrix(opts_.num_ceps, front_end_.NumBins());  // [num_ceps, num_bins]
  dct_transposed_ = torch::from_blob(const_cast<float*>(dct.data()), {dct.rows(), dct.cols()}, torch::kFloat32)
                        .t()
                        .contiguous();
  if (opts_.cepstral_lifter != 0.0f) lifter_ = FloatTensor(ComputeLifterCoeffs(opts_.cepstral_lifter, opts_.num_ceps));
  if (opts_.energy_floor > 0.0f) log_energy_floor_ = std::log(opts_.energy_floor);
}

torch::Tensor BatchedMfcc::Compute(const torch::Tensor& samples) const {
  torch::NoGradGuard no_grad;
  const auto energy = !opts_.use_energy  ? MelFrontEnd::Energy::kNone
                      : opts_.raw_energy ? MelFrontEnd::Energy::kRaw
                                         : MelFrontEnd::Energy::kWindowed;
  const BatchedMelFrontEnd::Output front =
      front_end_.Compute(samples, energy, /*use_power=*/true, /*dither=*/0.0f, std::nullopt, "BatchedMfcc");
  const auto device = samples.device();
  const float eps = std::numeric_limits<float>::epsilon();
  torch::Tensor features = front.mel.clamp_min(eps).log().matmul(dct_transposed_.to(device));
  if (lifter_.defined()) features = features * lifter_.to(device);
  if (opts_.use_energy) {
    torch::Tensor log_energy = front.log_energy;
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
