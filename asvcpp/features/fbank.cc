#include "asvcpp/features/fbank.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace asv::features {
namespace {
const FbankOptions& Validated(const FbankOptions& opts) {
  opts.Validate();
  return opts;
}
}  // namespace

Fbank::Fbank(const FbankOptions& opts, float vtln_warp)
    : opts_(Validated(opts)), front_end_(opts.frame_opts, opts.mel_opts, vtln_warp) {
  if (opts.energy_floor > 0.0f) log_energy_floor_ = std::log(opts.energy_floor);
}

Matrix Fbank::Compute(const float* samples, std::int64_t n, std::uint64_t dither_seed) const {
  const std::int64_t num_frames = NumFrames(n, opts_.frame_opts);
  const std::int32_t dim = Dim();
  Matrix out(num_frames, dim);
  if (num_frames == 0) return out;
  MelFrontEnd::Buffers buffers = front_end_.MakeBuffers();
  GaussianRng rng(dither_seed);
  const auto energy_mode = !opts_.use_energy  ? MelFrontEnd::Energy::kNone
                           : opts_.raw_energy ? MelFrontEnd::Energy::kRaw
                                              : MelFrontEnd::Energy::kWindowed;
  const std::int32_t num_bins = front_end_.NumBins();
  const std::int32_t mel_offset = (opts_.use_energy && !opts_.htk_compat) ? 1 : 0;
  for (std::int64_t f = 0; f < num_frames; ++f) {
    float log_energy = front_end_.ComputeFrame(samples, n, f, energy_mode, opts_.use_power, &rng, &buffers);
    float* row = out.row(f);
    const float* mel = buffers.mel.data();
    for (std::int32_t b = 0; b < num_bins; ++b) {
      row[mel_offset + b] =
          opts_.use_log_fbank ? std::log(std::max(mel[b], std::numeric_limits<float>::epsilon())) : mel[b];
    }
    if (opts_.use_energy) {
      if (opts_.energy_floor > 0.0f && log_energy < log_energy_floor_) log_energy = log_energy_floor_;
      row[opts_.htk_compat ? num_bins : 0] = log_energy;
    }
  }
  return out;
}

}  // namespace asv::features
