#include "asvcpp/features/mel_banks.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"

namespace asv::features {

float MelBanks::MelScale(float freq) {
  return 1127.0f * logf(1.0f + freq / 700.0f);
}

float MelBanks::InverseMelScale(float mel) {
  return 700.0f * (expf(mel / 1127.0f) - 1.0f);
}

float MelBanks::VtlnWarpFreq(float vtln_low, float vtln_high, float low_freq, float high_freq, float vtln_warp,
                             float freq) {
  if (freq < low_freq || freq > high_freq) return freq;
  const float one = 1.0f;
  const float l = vtln_low * std::max(one, vtln_warp);
  const float h = vtln_high * std::min(one, vtln_warp);
  const float scale = 1.0f / vtln_warp;
  const float fl = scale * l;
  const float fh = scale * h;
  if (!(l > low_freq && h < high_freq)) {
    throw DataError(fmt::format("VTLN warp {}: inflection points {} and {} Hz must lie inside ({}, {}) Hz", vtln_warp,
                                l, h, low_freq, high_freq));
  }
  const float scale_left = (fl - low_freq) / (l - low_freq);
  const float scale_right = (high_freq - fh) / (high_freq - h);
  if (freq < l) return low_freq + scale_left * (freq - low_freq);
  if (freq < h) return scale * freq;
  return high_freq + scale_right * (freq - high_freq);
}

MelBanks::MelBanks(const MelOptions& opts, const FrameOptions& frame_opts, float vtln_warp) {
  const std::int32_t num_bins = opts.num_bins;
  if (num_bins < 3) throw DataError(fmt::format("--num-mel-bins must be at least 3, got {}", num_bins));
  const float sample_freq = frame_opts.samp_freq;
  const std::int32_t padded = frame_opts.PaddedWindowSize();
  if (padded % 2 != 0) throw DataError(fmt::format("FFT size {} is odd", padded));
  const std::int32_t num_fft_bins = padded / 2;
  const float nyquist = 0.5f * sample_freq;

  const float low_freq = opts.low_freq;
  const float high_freq = opts.high_freq > 0.0f ? opts.high_freq : nyquist + opts.high_freq;
  if (low_freq < 0.0f || low_freq >= nyquist || high_freq <= 0.0f || high_freq > nyquist || high_freq <= low_freq) {
    throw DataError(
        fmt::format("bad mel options: --low-freq={} and --high-freq={} (resolved to {} Hz) "
                    "vs. Nyquist {} Hz",
                    opts.low_freq, opts.high_freq, high_freq, nyquist));
  }
  const float fft_bin_width = sample_freq / static_cast<float>(padded);
  const float mel_low = MelScale(low_freq);
  const float mel_high = MelScale(high_freq);
  const float mel_delta = (mel_high - mel_low) / static_cast<float>(num_bins + 1);

  float vtln_low = opts.vtln_low;
  float vtln_high = opts.vtln_high;
  if (vtln_high < 0.0f) vtln_high += nyquist;
  if (vtln_warp != 1.0f && (vtln_low < 0.0f || vtln_low <= low_freq || vtln_low >= high_freq || vtln_high <= 0.0f ||
                            vtln_high >= high_freq || vtln_high <= vtln_low)) {
    throw DataError(
        fmt::format("bad VTLN options: --vtln-low={} and --vtln-high={} vs. --low-freq={} "
                    "and --high-freq={}",
                    vtln_low, vtln_high, low_freq, high_freq));
  }
  auto warp_mel = [&](float mel) {
    return MelScale(VtlnWarpFreq(vtln_low, vtln_high, low_freq, high_freq, vtln_warp, InverseMelScale(mel)));
  };

  offsets_.resize(static_cast<std::size_t>(num_bins));
  weights_.resize(static_cast<std::size_t>(num_bins));
  center_freqs_.resize(static_cast<std::size_t>(num_bins));
  std::vector<float> fft_mel(static_cast<std::size_t>(num_fft_bins));
  for (std::int32_t i = 0; i < num_fft_bins; ++i) fft_mel[static_cast<std::size_t>(i)] = MelScale(fft_bin_width * i);

  for (std::int32_t bin = 0; bin < num_bins; ++bin) {
    float left_mel = mel_low + bin * mel_delta;
    float center_mel = mel_low + (bin + 1) * mel_delta;
    float right_mel = mel_low + (bin + 2) * mel_delta;
    if (vtln_warp != 1.0f) {
      left_mel = warp_mel(left_mel);
      center_mel = warp_mel(center_mel);
      right_mel = warp_mel(right_mel);
    }
    center_freqs_[static_cast<std::size_t>(bin)] = InverseMelScale(center_mel);
    std::int32_t first = -1, last = -1;
    std::vector<float> this_bin(static_cast<std::size_t>(num_fft_bins), 0.0f);
    for (std::int32_t i = 0; i < num_fft_bins; ++i) {
      const float mel = fft_mel[static_cast<std::size_t>(i)];
      if (mel > left_mel && mel < right_mel) {
        const float weight = mel <= center_mel ? (mel - left_mel) / (center_mel - left_mel)
                                               : (right_mel - mel) / (right_mel - center_mel);
        this_bin[static_cast<std::size_t>(i)] = weight;
        if (first == -1) first = i;
        last = i;
      }
    }
    if (first == -1) {
      throw DataError(
          fmt::format("mel bin {} of {} covers no FFT bin; --num-mel-bins={} is too large for "
                      "the FFT size {} and range {}-{} Hz",
                      bin, num_bins, num_bins, padded, low_freq, high_freq));
    }
    offsets_[static_cast<std::size_t>(bin)] = first;
    weights_[static_cast<std::size_t>(bin)].assign(this_bin.begin() + first, this_bin.begin() + last + 1);
  }
  if (opts.debug_mel) {
    for (std::int32_t b = 0; b < num_bins; ++b) {
      ASV_LOG(Info, "mel bin {}: offset {}, {} weights, centre {} Hz", b, offsets_[static_cast<std::size_t>(b)],
              weights_[static_cast<std::size_t>(b)].size(), center_freqs_[static_cast<std::size_t>(b)]);
    }
  }
}

namespace {
// Σ w[i]·p[i] in float with four partial sums (one SSE register), as BLAS sdot (Kaldi's VecVec)
// does; a single running sum would be a serial chain of additions.
float Dot(const float* __restrict w, const float* __restrict p, std::size_t n) {
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (std::size_t j = 0; j < 4; ++j) acc[j] += w[i + j] * p[i + j];
  }
  float sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  for (; i < n; ++i) sum += w[i] * p[i];
  return sum;
}
}  // namespace

void MelBanks::Compute(const float* power, float* mel_energies) const {
  for (std::size_t b = 0; b < offsets_.size(); ++b) {
    const std::vector<float>& w = weights_[b];
    mel_energies[b] = Dot(w.data(), power + offsets_[b], w.size());
  }
}

}  // namespace asv::features
