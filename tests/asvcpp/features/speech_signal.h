// A speech-like test signal for the batched (LibTorch) feature tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace asv::features::testing {

/// `n` samples at 16 kHz in the int16 range: coloured noise with a slow 3 Hz envelope plus a
/// 440 Hz tone; `seed` picks the noise.
inline std::vector<float> SpeechLikeSignal(std::int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(n));
  float low = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) {
    low = 0.9f * low + 0.1f * normal(rng);
    const double t = static_cast<double>(i) / 16000.0;
    x[static_cast<std::size_t>(i)] = static_cast<float>(
        (2000.0 * low + 300.0 * normal(rng)) * (1.2 + std::sin(2 * M_PI * 3 * t)) + 500.0 * std::sin(2 * M_PI * 440 * t));
  }
  return x;
}

}  // namespace asv::features::testing
