// Real-input FFT for power-of-two sizes, used by the MFCC and fbank extractors.
//
// A length-n real signal x is packed as n/2 complex values z[t] = x[2t] + i·x[2t+1], scattered
// straight into bit-reversed order; a decimation-in-time complex FFT of size n/2 (the first two
// radix-2 stages fused into one multiplication-free radix-4 pass, then radix-2 stages with
// per-stage twiddle tables; real and imaginary parts in separate arrays so that the butterflies
// and the split step vectorise) gives Z,
// and the standard split step recovers X[k] = E[k] + e^{-2πik/n}·O[k] with
// E[k] = (Z[k] + conj(Z[n/2-k]))/2 and O[k] = (Z[k] − conj(Z[n/2-k]))/(2i)
// (e.g. Oppenheim & Schafer, "Discrete-Time Signal Processing", §9.3; the same trick as
// Kaldi's SplitRadixRealFft / RealFft in src/matrix/srfft.cc and matrix-functions.cc).
#pragma once

#include <cstdint>
#include <vector>

namespace asv::features {

/// Forward real DFT of a fixed power-of-two size n >= 2. Immutable after construction, so one
/// object can be shared by threads.
class RealFft {
 public:
  /// Precomputes the tables for size `n`. Throws std::invalid_argument unless n is a power of
  /// two >= 2.
  explicit RealFft(std::int32_t n);

  std::int32_t size() const noexcept { return n_; }

  /// X[k] = Σ_t in[t]·e^{-2πikt/n} for k = 0..n/2 (the non-redundant half, n/2+1 bins; X[0] and
  /// X[n/2] are real). `in` has n floats; `re` and `im` have n/2+1 floats each and must not
  /// overlap `in` or each other. No allocation.
  void Forward(const float* in, float* re, float* im) const;

 private:
  void ComplexFft(float* re, float* im) const;  // in place, size n_/2

  std::int32_t n_;
  std::int32_t m_;                   // n_/2, complex FFT size
  std::vector<std::int32_t> bit_reverse_;  // [m_] bit-reversal permutation
  std::vector<float> twiddle_re_;          // per stage of half-length h >= 4: cos(2πj/2h), j < h
  std::vector<float> twiddle_im_;          // -sin(2πj/2h)
  std::vector<float> split_cos_;           // cos(2πk/n), k <= m_/2
  std::vector<float> split_sin_;           // sin(2πk/n)
};

/// Power spectrum |X[k]|² for k = 0..n/2 from the output of RealFft::Forward; `power` has
/// n/2+1 floats (may alias `re`).
void PowerSpectrum(const float* re, const float* im, std::int32_t num_bins, float* power);

}  // namespace asv::features
