#include "asvcpp/features/fft.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace asv::features {
namespace {
// The loops below take restrict parameters: GCC ignores restrict on local pointers, and without
// it the alias checks exceed its limit and the loops stay scalar.

// One radix-2 stage on a block: (a, b) -> (a + w·b, a − w·b), a in (r0, i0), b in (r1, i1).
void Butterflies(float* __restrict r0, float* __restrict i0, float* __restrict r1, float* __restrict i1,
                 const float* __restrict wr, const float* __restrict wi, std::int32_t half) {
  for (std::int32_t j = 0; j < half; ++j) {
    const float tr = wr[j] * r1[j] - wi[j] * i1[j];
    const float ti = wr[j] * i1[j] + wi[j] * r1[j];
    const float ar = r0[j], ai = i0[j];
    r1[j] = ar - tr;
    i1[j] = ai - ti;
    r0[j] = ar + tr;
    i0[j] = ai + ti;
  }
}

// Split step for k = 1..half−1, in place: lo_* point at Z[0], hi_* at Z[m] (so hi_*[−k] is
// Z[m−k]); the two halves are disjoint.
void SplitStep(float* __restrict lo_re, float* __restrict lo_im, float* __restrict hi_re, float* __restrict hi_im,
               const float* __restrict cosines, const float* __restrict sines, std::int32_t half) {
  for (std::int32_t k = 1; k < half; ++k) {
    const float a = lo_re[k], b = lo_im[k], c = hi_re[-k], d = hi_im[-k];
    const float er = 0.5f * (a + c), ei = 0.5f * (b - d);
    const float orr = 0.5f * (b + d), oi = -0.5f * (a - c);
    // W^k = cos − i·sin.
    const float wor = cosines[k] * orr + sines[k] * oi, woi = cosines[k] * oi - sines[k] * orr;
    lo_re[k] = er + wor;
    lo_im[k] = ei + woi;
    hi_re[-k] = er - wor;
    hi_im[-k] = -(ei - woi);
  }
}
}  // namespace

RealFft::RealFft(std::int32_t n) : n_(n), m_(n / 2) {
  if (n < 2 || (n & (n - 1)) != 0)
    throw std::invalid_argument("RealFft: size must be a power of two >= 2, got " + std::to_string(n));
  int bits = 0;
  while ((1 << bits) < m_) ++bits;
  for (std::int32_t i = 0; i < m_; ++i) {
    std::int32_t j = 0;
    for (int b = 0; b < bits; ++b) {
      if (i & (1 << b)) j |= 1 << (bits - 1 - b);
    }
    bit_reverse_.push_back(j);
  }
  // Stages with half-length >= 4 (the first two are done as one twiddle-free radix-4 pass).
  for (std::int32_t half = 4; half < m_; half <<= 1) {
    for (std::int32_t j = 0; j < half; ++j) {
      const double angle = M_PI * j / half;
      twiddle_re_.push_back(static_cast<float>(std::cos(angle)));
      twiddle_im_.push_back(static_cast<float>(-std::sin(angle)));
    }
  }
  for (std::int32_t k = 0; k <= m_ / 2; ++k) {
    const double angle = 2.0 * M_PI * k / n_;
    split_cos_.push_back(static_cast<float>(std::cos(angle)));
    split_sin_.push_back(static_cast<float>(std::sin(angle)));
  }
}

void RealFft::ComplexFft(float* re, float* im) const {
  // Input is in bit-reversed order (Forward scatters it so). Stages of half-length 1 and 2 as
  // one radix-4 pass: twiddles 1 and −i need no multiplication.
  if (m_ == 2) {
    const float ar = re[0], ai = im[0], br = re[1], bi = im[1];
    re[0] = ar + br;
    im[0] = ai + bi;
    re[1] = ar - br;
    im[1] = ai - bi;
    return;
  }
  if (m_ >= 4) {
    for (std::int32_t s = 0; s < m_; s += 4) {
      const float b0r = re[s] + re[s + 1], b0i = im[s] + im[s + 1];
      const float b1r = re[s] - re[s + 1], b1i = im[s] - im[s + 1];
      const float b2r = re[s + 2] + re[s + 3], b2i = im[s + 2] + im[s + 3];
      const float b3r = re[s + 2] - re[s + 3], b3i = im[s + 2] - im[s + 3];
      re[s] = b0r + b2r;
      im[s] = b0i + b2i;
      re[s + 2] = b0r - b2r;
      im[s + 2] = b0i - b2i;
      re[s + 1] = b1r + b3i;  // b1 + (−i)·b3
      im[s + 1] = b1i - b3r;
      re[s + 3] = b1r - b3i;
      im[s + 3] = b1i + b3r;
    }
  }
  const float* wr = twiddle_re_.data();
  const float* wi = twiddle_im_.data();
  for (std::int32_t half = 4; half < m_; half <<= 1) {
    for (std::int32_t start = 0; start < m_; start += 2 * half)
      Butterflies(re + start, im + start, re + start + half, im + start + half, wr, wi, half);
    wr += half;
    wi += half;
  }
}

void RealFft::Forward(const float* in, float* re, float* im) const {
  // Pack z[t] = x[2t] + i·x[2t+1] straight into bit-reversed order. Bit reversal is its own
  // inverse, so this is a gather (re[j] = z[rev[j]]), which runs faster than the equivalent
  // scatter: the stores stay sequential.
  const std::int32_t* rev = bit_reverse_.data();
  for (std::int32_t j = 0; j < m_; ++j) {
    const std::int32_t t = rev[j];
    re[j] = in[2 * t];
    im[j] = in[2 * t + 1];
  }
  ComplexFft(re, im);
  const float z0r = re[0], z0i = im[0];
  re[0] = z0r + z0i;
  im[0] = 0.0f;
  re[m_] = z0r - z0i;
  im[m_] = 0.0f;
  SplitStep(re, im, re + m_, im + m_, split_cos_.data(), split_sin_.data(), m_ / 2);
  if (m_ >= 2) im[m_ / 2] = -im[m_ / 2];  // X[n/4] = conj(Z[n/4]).
}

void PowerSpectrum(const float* re, const float* im, std::int32_t num_bins, float* power) {
  for (std::int32_t k = 0; k < num_bins; ++k) power[k] = re[k] * re[k] + im[k] * im[k];
}

}  // namespace asv::features
