// Seeded random numbers that are the same on every platform and standard library.
//
// std::mt19937_64's output sequence is fixed by the C++ standard; std::uniform_int_distribution,
// std::shuffle and friends are not (libstdc++ and libc++ differ), so asvcpp's training code draws
// with the arithmetic below. Everything random in an epoch is a function of (seed, epoch), which
// makes resuming from a checkpoint exact.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace asv::train {

/// SplitMix64 finaliser of `a` combined with `b`: a well-mixed 64-bit seed for a sub-stream
/// (e.g. MixSeed(run_seed, epoch)). Steele et al. 2014, "Fast splittable pseudorandom number
/// generators".
std::uint64_t MixSeed(std::uint64_t a, std::uint64_t b);

/// A std::mt19937_64 with portable draws.
class Rng {
 public:
  /// Engine seeded with MixSeed(seed, stream).
  explicit Rng(std::uint64_t seed, std::uint64_t stream = 0);

  /// Next raw 64-bit output of the engine.
  std::uint64_t Next() { return engine_(); }

  /// Uniform integer in [0, n) by rejection sampling (no modulo bias). Throws
  /// std::invalid_argument when n == 0.
  std::uint64_t Index(std::uint64_t n);

  /// Uniform integer in [lo, hi], both inclusive. Throws std::invalid_argument when lo > hi.
  std::int64_t Uniform(std::int64_t lo, std::int64_t hi);

  /// In-place Fisher-Yates shuffle (from the last element down).
  template <class T>
  void Shuffle(std::vector<T>& items) {
    for (std::size_t i = items.size(); i > 1; --i) {
      const auto j = static_cast<std::size_t>(Index(i));
      std::swap(items[i - 1], items[j]);
    }
  }

  /// `k` distinct indices from [0, n) in draw order (partial Fisher-Yates); k > n is clamped.
  std::vector<std::size_t> Sample(std::size_t n, std::size_t k);

 private:
  std::mt19937_64 engine_;
};

}  // namespace asv::train
