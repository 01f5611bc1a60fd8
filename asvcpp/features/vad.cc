#include "asvcpp/features/vad.h"

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/features/kaldi_options.h"

namespace asv::features {

VadOptions VadOptions::VoxcelebV2() {
  VadOptions o;
  o.vad_energy_threshold = 5.5f;
  o.vad_energy_mean_scale = 0.5f;
  o.vad_frames_context = 2;
  o.vad_proportion_threshold = 0.12f;
  return o;
}

void VadOptions::Register(KaldiOptions* opts) {
  opts->Register("vad-energy-threshold", &vad_energy_threshold,
                 "Constant term in energy threshold for MFCC0 for VAD (also see --vad-energy-mean-scale)");
  opts->Register("vad-energy-mean-scale", &vad_energy_mean_scale,
                 "If this is set to s, to get the actual threshold we let m be the mean log-energy of the "
                 "file, and use s*m + vad-energy-threshold");
  opts->Register("vad-frames-context", &vad_frames_context,
                 "Number of frames of context on each side of central frame, in window for which energy "
                 "is monitored");
  opts->Register("vad-proportion-threshold", &vad_proportion_threshold,
                 "Parameter controlling the proportion of frames within the window that need to have more "
                 "energy than the threshold");
}

void VadOptions::Validate() const {
  if (vad_energy_mean_scale < 0.0f)
    throw DataError(fmt::format("--vad-energy-mean-scale must be >= 0, got {}", vad_energy_mean_scale));
  if (vad_frames_context < 0)
    throw DataError(fmt::format("--vad-frames-context must be >= 0, got {}", vad_frames_context));
  if (!(vad_proportion_threshold > 0.0f && vad_proportion_threshold < 1.0f))
    throw DataError(fmt::format("--vad-proportion-threshold must be in (0, 1), got {}", vad_proportion_threshold));
}

std::vector<float> ComputeVadEnergy(const VadOptions& opts, const float* log_energy, std::int64_t num_frames) {
  opts.Validate();
  std::vector<float> voiced(static_cast<std::size_t>(num_frames), 0.0f);
  if (num_frames == 0) return voiced;
  float threshold = opts.vad_energy_threshold;
  if (opts.vad_energy_mean_scale != 0.0f) {
    double sum = 0.0;
    for (std::int64_t t = 0; t < num_frames; ++t) sum += log_energy[t];
    // Kaldi: threshold += scale * log_energy.Sum() / T, in float.
    threshold += opts.vad_energy_mean_scale * static_cast<float>(sum) / static_cast<float>(num_frames);
  }
  const std::int64_t context = opts.vad_frames_context;
  for (std::int64_t t = 0; t < num_frames; ++t) {
    std::int64_t num = 0, den = 0;
    for (std::int64_t t2 = t - context; t2 <= t + context; ++t2) {
      if (t2 >= 0 && t2 < num_frames) {
        ++den;
        if (log_energy[t2] > threshold) ++num;
      }
    }
    voiced[static_cast<std::size_t>(t)] =
        static_cast<float>(num) >= static_cast<float>(den) * opts.vad_proportion_threshold ? 1.0f : 0.0f;
  }
  return voiced;
}

std::vector<float> ComputeVadEnergy(const VadOptions& opts, const Matrix& feats) {
  std::vector<float> c0(static_cast<std::size_t>(feats.rows()));
  if (feats.cols() == 0 && feats.rows() > 0) throw DataError("ComputeVadEnergy: features have no columns");
  for (std::int64_t t = 0; t < feats.rows(); ++t) c0[static_cast<std::size_t>(t)] = feats(t, 0);
  return ComputeVadEnergy(opts, c0.data(), feats.rows());
}

}  // namespace asv::features
