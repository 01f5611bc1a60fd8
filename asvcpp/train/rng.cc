#include "asvcpp/train/rng.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace asv::train {

std::uint64_t MixSeed(std::uint64_t a, std::uint64_t b) {
  auto mix = [](std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  return mix(mix(a) ^ (b + 0x632be59bd9b4e019ULL));
}

Rng::Rng(std::uint64_t seed, std::uint64_t stream) : engine_(MixSeed(seed, stream)) {}

std::uint64_t Rng::Index(std::uint64_t n) {
  if (n == 0) throw std::invalid_argument("Rng::Index: empty range");
  // Largest multiple of n that fits; draws at or above it are rejected.
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t limit = max - (max % n + 1) % n;
  std::uint64_t x = engine_();
  while (x > limit) x = engine_();
  return x % n;
}

std::int64_t Rng::Uniform(std::int64_t lo, std::int64_t hi) {
  if (lo > hi) throw std::invalid_argument("Rng::Uniform: lo > hi");
  const auto span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) + 1;
  if (span == 0) return static_cast<std::int64_t>(engine_());  // the full 64-bit range
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + Index(span));
}

std::vector<std::size_t> Rng::Sample(std::size_t n, std::size_t k) {
  k = std::min(k, n);
  std::vector<std::size_t> pool(n);
  std::iota(pool.begin(), pool.end(), std::size_t{0});
  for (std::size_t i = 0; i < k; ++i) {
    const auto j = i + static_cast<std::size_t>(Index(n - i));
    std::swap(pool[i], pool[j]);
  }
  pool.resize(k);
  return pool;
}

}  // namespace asv::train
