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

constexpr int kLayers = 256;
constexpr double kTailStart = 3.6541528853610088;  // r, Marsaglia & Tsang (2000), 256 layers
constexpr double kLayerArea = 4.92867323399e-3;    // v, same source

// 53 random bits as a double in [0, 1); via int64, which converts faster than uint64 on x86.
double Uniform53(std::uint64_t bits) {
  return static_cast<double>(static_cast<std::int64_t>(bits >> 11)) * 0x1.0p-53;
}
}  // namespace

// Layer i >= 1 is the box [0, x[i]] × [f(x[i]), f(x[i+1])] under f(x) = exp(−x²/2), x[1] = r >
// x[2] > ... > x[256] = 0, all of area v; layer 0 is the base strip [0, r] × [0, f(r)] plus the
// tail x > r, also of area v, drawn as a box of width x[0] = v / f(r).
struct GaussianRng::Tables {
  double x[kLayers + 1];
  double f[kLayers + 1];
  float scaled[kLayers + 1];  // x[i]·2^−23: turns the signed 24-bit integer into u·x[i], u in [−1, 1)
  float inner[kLayers + 1];   // x[i] as float: |u·x[i]| < x[i+1] lies in layer i's inner box
};

GaussianRng::GaussianRng(std::uint64_t seed) {
  for (auto& s : s_) s = SplitMix64(&seed);
  static const Tables tables = [] {
    Tables t{};
    t.x[0] = kLayerArea / std::exp(-0.5 * kTailStart * kTailStart);
    t.x[1] = kTailStart;
    for (int i = 1; i < kLayers - 1; ++i)
      t.x[i + 1] = std::sqrt(-2.0 * std::log(kLayerArea / t.x[i] + std::exp(-0.5 * t.x[i] * t.x[i])));
    t.x[kLayers] = 0.0;
    for (int i = 0; i <= kLayers; ++i) {
      t.f[i] = std::exp(-0.5 * t.x[i] * t.x[i]);
      t.scaled[i] = static_cast<float>(t.x[i] * 0x1.0p-23);
      t.inner[i] = static_cast<float>(t.x[i]);
    }
    return t;
  }();
  tables_ = &tables;
}

inline std::uint64_t GaussianRng::NextBits(std::uint64_t* s) {
  const std::uint64_t result = Rotl(s[1] * 5, 7) * 9;
  const std::uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = Rotl(s[3], 45);
  return result;
}

// For a draw `half` whose point x = u·x[layer] fell outside its layer's inner box: the wedge
// test or the tail, and fresh 32-bit draws (low halves of new words) after a rejection.
float GaussianRng::SlowPath(const Tables& t, std::uint64_t* s, std::uint32_t half, float x) {
  for (;;) {
    const int layer = static_cast<int>(half & (kLayers - 1));
    if (layer == 0) {
      // Tail beyond r (Marsaglia 1964): tx = −ln(u1)/r, ty = −ln(u2) with u in (0, 1], accepted
      // when 2·ty >= tx²; the sample is r + tx with the sign of x.
      double tx, ty;
      do {
        tx = -std::log(1.0 - Uniform53(NextBits(s))) / kTailStart;
        ty = -std::log(1.0 - Uniform53(NextBits(s)));
      } while (ty + ty < tx * tx);
      return static_cast<float>(x < 0.0f ? -(kTailStart + tx) : kTailStart + tx);
    }
    // Wedge: y uniform in [f(x[layer]), f(x[layer+1])), accepted under the curve.
    const double y = t.f[layer] + Uniform53(NextBits(s)) * (t.f[layer + 1] - t.f[layer]);
    if (y < std::exp(-0.5 * static_cast<double>(x) * x)) return x;
    half = static_cast<std::uint32_t>(NextBits(s));
    const int next = static_cast<int>(half & (kLayers - 1));
    x = static_cast<float>(static_cast<std::int32_t>(half) >> 8) * t.scaled[next];
    if (std::fabs(x) < t.inner[next + 1]) return x;
  }
}

// One sample from 32 random bits: layer from bits 0..7, signed 24-bit uniform from bits 8..31.
inline float GaussianRng::Sample(const Tables& t, std::uint64_t* s, std::uint32_t half) {
  const int layer = static_cast<int>(half & (kLayers - 1));
  const float x = static_cast<float>(static_cast<std::int32_t>(half) >> 8) * t.scaled[layer];
  if (std::fabs(x) < t.inner[layer + 1]) return x;
  return SlowPath(t, s, half, x);
}

float GaussianRng::Next() {
  if (has_spare_) {
    has_spare_ = false;
    return Sample(*tables_, s_, spare_);
  }
  const std::uint64_t bits = NextBits(s_);
  spare_ = static_cast<std::uint32_t>(bits >> 32);
  has_spare_ = true;
  return Sample(*tables_, s_, static_cast<std::uint32_t>(bits));
}

void GaussianRng::AddScaled(float scale, float* x, std::int64_t n) {
  if (n <= 0) return;
  std::int64_t i = 0;
  if (has_spare_) x[i++] += Next() * scale;
  std::uint64_t s[4] = {s_[0], s_[1], s_[2], s_[3]};
  const Tables& t = *tables_;
  for (; i + 2 <= n; i += 2) {
    const std::uint64_t bits = NextBits(s);
    x[i] += Sample(t, s, static_cast<std::uint32_t>(bits)) * scale;
    x[i + 1] += Sample(t, s, static_cast<std::uint32_t>(bits >> 32)) * scale;
  }
  for (int k = 0; k < 4; ++k) s_[k] = s[k];
  if (i < n) x[i] += Next() * scale;
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

namespace {
// Σ x[i] in double with four partial sums, so that the loop vectorises (a single running sum
// cannot be reordered without -ffast-math).
double Sum(const float* x, std::int32_t n) {
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  std::int32_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int j = 0; j < 4; ++j) acc[j] += x[i + j];
  }
  double sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  for (; i < n; ++i) sum += x[i];
  return sum;
}

// x[i] −= mean and returns Σ x[i]² of the result (double, four partial sums).
double SubtractAndSumSquares(float mean, float* x, std::int32_t n) {
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  std::int32_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int j = 0; j < 4; ++j) {
      x[i + j] -= mean;
      acc[j] += static_cast<double>(x[i + j]) * x[i + j];
    }
  }
  double sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  for (; i < n; ++i) {
    x[i] -= mean;
    sum += static_cast<double>(x[i]) * x[i];
  }
  return sum;
}
}  // namespace

void ProcessFrame(const FrameOptions& opts, const float* window, GaussianRng* rng, float* frame,
                  float* log_energy_pre_window) {
  const std::int32_t n = opts.WindowSize();
  if (opts.dither != 0.0f) {
    ASV_CHECK(rng != nullptr, "dither without a random generator");
    rng->AddScaled(opts.dither, frame, n);
  }
  const float mean = opts.remove_dc_offset ? static_cast<float>(Sum(frame, n)) / static_cast<float>(n) : 0.0f;
  if (log_energy_pre_window != nullptr) {
    const double energy = SubtractAndSumSquares(mean, frame, n);
    *log_energy_pre_window = std::log(std::max(static_cast<float>(energy), std::numeric_limits<float>::epsilon()));
  } else if (opts.remove_dc_offset) {
    for (std::int32_t i = 0; i < n; ++i) frame[i] -= mean;
  }
  // Pre-emphasis and window in one pass. Backwards, so each x[i−1] is read before it is
  // overwritten; each vector reads its inputs before storing, so the loop still vectorises.
  const float c = opts.preemph_coeff;
  float* __restrict x = frame;
  const float* __restrict w = window;
  for (std::int32_t i = n - 1; i > 0; --i) x[i] = (x[i] - c * x[i - 1]) * w[i];
  x[0] = (x[0] - c * x[0]) * w[0];
}

}  // namespace asv::features
