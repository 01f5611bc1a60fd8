#include "asvcpp/features/fft.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace asv::features {

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
    if (i < j) {
      swaps_.push_back(i);
      swaps_.push_back(j);
    }
  }
  for (std::int32_t half = 1; half < m_; half <<= 1) {
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
  for (std::size_t s = 0; s < swaps_.size(); s += 2) {
    const std::int32_t i = swaps_[s], j = swaps_[s + 1];
    std::swap(re[i], re[j]);
    std::swap(im[i], im[j]);
  }
  // First stage (half = 1): twiddle 1.
  if (m_ >= 2) {
    for (std::int32_t s = 0; s < m_; s += 2) {
      const float ar = re[s], ai = im[s], br = re[s + 1], bi = im[s + 1];
      re[s] = ar + br;
      im[s] = ai + bi;
      re[s + 1] = ar - br;
      im[s + 1] = ai - bi;
    }
  }
  const float* wr_stage = twiddle_re_.data() + 1;
  const float* wi_stage = twiddle_im_.data() + 1;
  for (std::int32_t half = 2; half < m_; half <<= 1) {
    for (std::int32_t start = 0; start < m_; start += 2 * half) {
      float* __restrict r0 = re + start;
      float* __restrict i0 = im + start;
      float* __restrict r1 = re + start + half;
      float* __restrict i1 = im + start + half;
      for (std::int32_t j = 0; j < half; ++j) {
        const float wr = wr_stage[j], wi = wi_stage[j];
        const float tr = wr * r1[j] - wi * i1[j];
        const float ti = wr * i1[j] + wi * r1[j];
        r1[j] = r0[j] - tr;
        i1[j] = i0[j] - ti;
        r0[j] += tr;
        i0[j] += ti;
      }
    }
    wr_stage += half;
    wi_stage += half;
  }
}

void RealFft::Forward(const float* in, float* re, float* im) const {
  for (std::int32_t t = 0; t < m_; ++t) {
    re[t] = in[2 * t];
    im[t] = in[2 * t + 1];
  }
  ComplexFft(re, im);
  // Split step, in place: positions k and m-k are read and written together.
  const float z0r = re[0], z0i = im[0];
  re[0] = z0r + z0i;
  im[0] = 0.0f;
  re[m_] = z0r - z0i;
  im[m_] = 0.0f;
  for (std::int32_t k = 1; 2 * k < m_; ++k) {
    const float a = re[k], b = im[k], c = re[m_ - k], d = im[m_ - k];
    const float er = 0.5f * (a + c), ei = 0.5f * (b - d);
    const float orr = 0.5f * (b + d), oi = -0.5f * (a - c);
    const float cs = split_cos_[k], sn = split_sin_[k];
    // W^k = cos - i·sin.
    const float wor = cs * orr + sn * oi, woi = cs * oi - sn * orr;
    re[k] = er + wor;
    im[k] = ei + woi;
    re[m_ - k] = er - wor;
    im[m_ - k] = -(ei - woi);
  }
  if (m_ >= 2) im[m_ / 2] = -im[m_ / 2];  // X[n/4] = conj(Z[n/4]).
}

void PowerSpectrum(const float* re, const float* im, std::int32_t num_bins, float* power) {
  for (std::int32_t k = 0; k < num_bins; ++k) power[k] = re[k] * re[k] + im[k] * im[k];
}

}  // namespace asv::features
