// Seeded randomness that gives the same results on every platform and standard library.
//
// std::mt19937_64's output sequence is fixed by the C++ standard; the distributions
// (std::uniform_int_distribution, std::shuffle, std::sample) are not, so asvcpp draws indices
// with its own functions below.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace asv::data {

/// Uniform integer in [0, n) from `rng`, by rejection sampling (no modulo bias). n must be > 0
/// (std::invalid_argument otherwise).
std::uint64_t UniformIndex(std::mt19937_64& rng, std::uint64_t n);

/// Uniform double in [0, 1) from the top 53 bits of one rng() call: the same value on every
/// platform (std::uniform_real_distribution's is not fixed by the standard).
inline double UniformUnit(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

/// A uniformly drawn element of `items` (one UniformIndex draw); `items` must not be empty
/// (std::invalid_argument otherwise).
template <typename T>
const T& PickUniform(const std::vector<T>& items, std::mt19937_64& rng) {
  return items[static_cast<std::size_t>(UniformIndex(rng, items.size()))];
}

/// In-place Fisher-Yates shuffle using UniformIndex (from the last element down).
template <typename T>
void Shuffle(std::vector<T>& items, std::mt19937_64& rng) {
  for (std::size_t i = items.size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(UniformIndex(rng, i));
    std::swap(items[i - 1], items[j]);
  }
}

/// `k` distinct indices drawn from [0, n) without replacement, returned in increasing order
/// (partial Fisher-Yates on 0..n-1 seeded by std::mt19937_64(seed)). k > n is clamped to n.
std::vector<std::size_t> SampleIndices(std::size_t n, std::size_t k, std::uint64_t seed);

}  // namespace asv::data
