#include "asvcpp/features/mel_frontend.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "asvcpp/base/error.h"

namespace asv::features {
namespace {
const FrameOptions& ValidatedFrame(const FrameOptions& opts) {
  opts.Validate();
  if (!opts.round_to_power_of_two || (opts.PaddedWindowSize() & (opts.PaddedWindowSize() - 1)) != 0) {
    // Kaldi falls back to a mixed-radix FFT for other sizes; we only implement powers of two.
    throw DataError("--round-to-power-of-two=false is not supported (the FFT needs a power-of-two size)");
  }
  return opts;
}
}  // namespace

MelFrontEnd::MelFrontEnd(const FrameOptions& frame_opts, const MelOptions& mel_opts, float vtln_warp)
    : frame_opts_(ValidatedFrame(frame_opts)),
      window_(MakeWindowFunction(frame_opts)),
      fft_(frame_opts.PaddedWindowSize()),
      mel_banks_(mel_opts, frame_opts, vtln_warp) {}

MelFrontEnd::Buffers MelFrontEnd::MakeBuffers() const {
  const auto padded = static_cast<std::size_t>(frame_opts_.PaddedWindowSize());
  Buffers b;
  b.frame.assign(padded, 0.0f);
  b.re.assign(padded / 2 + 1, 0.0f);
  b.im.assign(padded / 2 + 1, 0.0f);
  b.mel.assign(static_cast<std::size_t>(mel_banks_.NumBins()), 0.0f);
  return b;
}

float MelFrontEnd::ComputeFrame(const float* samples, std::int64_t num_samples, std::int64_t f, Energy energy,
                                bool use_power, GaussianRng* rng, Buffers* buffers) const {
  const std::int32_t length = frame_opts_.WindowSize();
  const std::int32_t padded = frame_opts_.PaddedWindowSize();
  float* frame = buffers->frame.data();
  ExtractFrame(samples, num_samples, f, frame_opts_, frame);
  float log_energy = 0.0f;
  ProcessFrame(frame_opts_, window_.data(), rng, frame, energy == Energy::kRaw ? &log_energy : nullptr);
  std::fill(frame + length, frame + padded, 0.0f);
  if (energy == Energy::kWindowed) {
    double e = 0.0;
    for (std::int32_t i = 0; i < length; ++i) e += static_cast<double>(frame[i]) * frame[i];
    log_energy = std::log(std::max(static_cast<float>(e), std::numeric_limits<float>::epsilon()));
  }
  float* re = buffers->re.data();
  float* im = buffers->im.data();
  fft_.Forward(frame, re, im);
  const std::int32_t num_bins = padded / 2 + 1;
  PowerSpectrum(re, im, num_bins, re);
  if (!use_power) {
    for (std::int32_t k = 0; k < num_bins; ++k) re[k] = std::sqrt(re[k]);
  }
  mel_banks_.Compute(re, buffers->mel.data());
  return log_energy;
}

}  // namespace asv::features
