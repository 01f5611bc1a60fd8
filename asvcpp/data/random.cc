#include "asvcpp/data/random.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace asv::data {

std::uint64_t UniformIndex(std::mt19937_64& rng, std::uint64_t n) {
  if (n == 0) throw std::invalid_argument("UniformIndex: n must be positive");
  // Values below 2^64 mod n would make the low residues more likely; redraw them.
  const std::uint64_t threshold = (0 - n) % n;
  for (;;) {
    const std::uint64_t x = rng();
    if (x >= threshold) return x % n;
  }
}

std::vector<std::size_t> SampleIndices(std::size_t n, std::size_t k, std::uint64_t seed) {
  k = std::min(k, n);
  std::vector<std::size_t> pool(n);
  std::iota(pool.begin(), pool.end(), std::size_t{0});
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < k; ++i) {
    const std::size_t j = i + static_cast<std::size_t>(UniformIndex(rng, n - i));
    std::swap(pool[i], pool[j]);
  }
  pool.resize(k);
  std::sort(pool.begin(), pool.end());
  return pool;
}

}  // namespace asv::data
