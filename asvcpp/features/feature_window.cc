#include "asvcpp/features/feature_window.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "asvcpp/base/check.h"
#include "asvcpp/base/error.h"

namespace asv::features {

std::int64_t FirstSampleOfFrame(std::int64_t frame, const FrameOptions& opts) {
  const std::int64_t shift = opts.WindowShift();
  if (opts.snip_edges) return frame * shift;
  return frame * shift + shift / 2 - opts.WindowSize() / 2;
}

std::int64_t NumFrames(std::int64_t num_samples, const FrameOptions& opts) {
  const std::int64_t shift = opts.WindowShift();
  const std::int64_t length = opts.WindowSize();
  if (opts.snip_edges) {
    if (num_samples < length) return 0;
    return 1 + (num_samples - length) / shift;
  }
  return (num_samples + shift / 2) / shift;
}

std::vector<float> MakeWindowFunction(const FrameOptions& opts) {
  const std::int32_t n = opts.WindowSize();
  ASV_CHECK(n > 1, "window of fewer than 2 samples");
  std::vector<float> w(static_cast<std::size_t>(n));
  const double a = 2.0 * M_PI / (n - 1);
  const std::string& type = opts.window_type;
  for (std::int32_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(i);
    double v = 0.0;
    if (type == "hanning") {
      v = 0.5 - 0.5 * std::cos(a * x);
    } else if (type == "sine") {
      v = std::sin(0.5 * a * x);
    } else if (type == "hamming") {
      v = 0.54 - 0.46 * std::cos(a * x);
    } else if (type == "povey") {
      v = std::pow(0.5 - 0.5 * std::cos(a * x), 0.85);
    } else if (type == "rectangular") {
      v = 1.0;
    } else if (type == "blackman") {
      v = opts.blackman_coeff - 0.5 * std::cos(a * x) + (0.5 - opts.blackman_coeff) * std::cos(2 * a * x);
    } else {
      throw DataError(fmt::format("unknown --window-type '{}'", type));
    }
    w[static_cast<std::size_t>(i)] = static_cast<float>(v);
  }
  return w;
}

namespace {
std::uint64_t SplitMix64(std::uint64_t* x) {
  std::uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
std::uint64_t Rotl(std::uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}
}  // namespace

GaussianRng::GaussianRng(std::uint64_t seed) {
  for (auto& s : s_) s = SplitMix64(&seed);
}

std::uint64_t GaussianRng::NextBits() {
  const std::uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

float GaussianRng::Next() {
  if (has_spare_) {
    has_spare_ = false;
    return static_cast<float>(spare_);
  }
  // Marsaglia's polar method on 53-bit uniforms in [-1, 1).
  double u, v, s;
  do {
    u = static_cast<double>(NextBits() >> 11) * 0x1.0p-52 - 1.0;
    v = static_cast<double>(NextBits() >> 11) * 0x1.0p-52 - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  const double f = std::sqrt(-2.0 * std::log(s) / s);
  spare_ = v * f;
  has_spare_ = true;
  return static_cast<float>(u * f);
}

void ExtractFrame(const float* samples, std::int64_t num_samples, std::int64_t frame, const FrameOptions& opts,
                  float* out) {
  const std::int64_t length = opts.WindowSize();
  const std::int64_t start = FirstSampleOfFrame(frame, opts);
  if (start >= 0 && start + length <= num_samples) {
    std::copy(samples + start, samples + start + length, out);
    return;
  }
  for (std::int64_t s = 0; s < length; ++s) {
    std::int64_t i = start + s;
    while (i < 0 || i >= num_samples) {
      if (i < 0) {
        i = -i - 1;
      } else {
        i = 2 * num_samples - 1 - i;
      }
    }
    out[s] = samples[i];
  }
}

void ProcessFrame(const FrameOptions& opts, const float* window, GaussianRng* rng, float* frame,
                  float* log_energy_pre_window) {
  const std::int32_t n = opts.WindowSize();
  if (opts.dither != 0.0f) {
    ASV_CHECK(rng != nullptr, "dither without a random generator");
    for (std::int32_t i = 0; i < n; ++i) frame[i] += rng->Next() * opts.dither;
  }
  if (opts.remove_dc_offset) {
    double sum = 0.0;
    for (std::int32_t i = 0; i < n; ++i) sum += frame[i];
    const float mean = static_cast<float>(sum) / static_cast<float>(n);
    for (std::int32_t i = 0; i < n; ++i) frame[i] -= mean;
  }
  if (log_energy_pre_window != nullptr) {
    double energy = 0.0;
    for (std::int32_t i = 0; i < n; ++i) energy += static_cast<double>(frame[i]) * frame[i];
    *log_energy_pre_window = std::log(std::max(static_cast<float>(energy), std::numeric_limits<float>::epsilon()));
  }
  const float c = opts.preemph_coeff;
  if (c != 0.0f) {
    for (std::int32_t i = n - 1; i > 0; --i) frame[i] -= c * frame[i - 1];
    frame[0] -= c * frame[0];
  }
  for (std::int32_t i = 0; i < n; ++i) frame[i] *= window[i];
}

}  // namespace asv::features
