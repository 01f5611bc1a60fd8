#include "asvcpp/features/mfcc.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace asv::features {
namespace {
const MfccOptions& ValidatedMfcc(const MfccOptions& opts) {
  opts.Validate();
  return opts;
}

Matrix Transposed(const Matrix& m) {
  Matrix t(m.cols(), m.rows());
  for (std::int64_t r = 0; r < m.rows(); ++r) {
    for (std::int64_t c = 0; c < m.cols(); ++c) t(c, r) = m(r, c);
  }
  return t;
}

// out[k] = Σ_b dct[k][b]·mel[b], from the transposed matrix dct_t [num_bins, num_ceps]. Each
// out[k] is summed over b in ascending order, as a row-by-row dot product would, but the loop
// over k is innermost, so it vectorises across coefficients instead of forming one serial sum
// per coefficient.
void DctRow(const float* __restrict dct_t, const float* __restrict mel, std::int32_t num_bins, std::int32_t num_ceps,
            float* __restrict out) {
  for (std::int32_t k = 0; k < num_ceps; ++k) out[k] = 0.0f;
  for (std::int32_t b = 0; b < num_bins; ++b) {
    const float* __restrict d = dct_t + static_cast<std::ptrdiff_t>(b) * num_ceps;
    const float m = mel[b];
    for (std::int32_t k = 0; k < num_ceps; ++k) out[k] += d[k] * m;
  }
}
}  // namespace

Matrix ComputeDctMatrix(std::int32_t rows, std::int32_t cols) {
  Matrix m(rows, cols);
  const float normalizer0 = static_cast<float>(std::sqrt(1.0 / static_cast<float>(cols)));
  for (std::int32_t n = 0; n < cols; ++n) m(0, n) = normalizer0;
  const float normalizer = static_cast<float>(std::sqrt(2.0 / static_cast<float>(cols)));
  for (std::int32_t k = 1; k < rows; ++k) {
    for (std::int32_t n = 0; n < cols; ++n) {
      m(k, n) = static_cast<float>(normalizer * std::cos(M_PI / cols * (n + 0.5) * k));
    }
  }
  return m;
}

std::vector<float> ComputeLifterCoeffs(float q, std::int32_t n) {
  std::vector<float> c(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n; ++i)
    c[static_cast<std::size_t>(i)] = static_cast<float>(1.0 + 0.5 * q * std::sin(M_PI * i / q));
  return c;
}

Mfcc::Mfcc(const MfccOptions& opts, float vtln_warp)
    : opts_(ValidatedMfcc(opts)),
      front_end_(opts.frame_opts, opts.mel_opts, vtln_warp),
      dct_transposed_(Transposed(ComputeDctMatrix(opts.num_ceps, opts.mel_opts.num_bins))) {
  if (opts.cepstral_lifter != 0.0f) lifter_ = ComputeLifterCoeffs(opts.cepstral_lifter, opts.num_ceps);
  if (opts.energy_floor > 0.0f) log_energy_floor_ = std::log(opts.energy_floor);
}

Matrix Mfcc::Compute(const float* samples, std::int64_t n, std::uint64_t dither_seed) const {
  const std::int64_t num_frames = NumFrames(n, opts_.frame_opts);
  const std::int32_t num_ceps = opts_.num_ceps;
  Matrix out(num_frames, num_ceps);
  if (num_frames == 0) return out;
  MelFrontEnd::Buffers buffers = front_end_.MakeBuffers();
  GaussianRng rng(dither_seed);
  const auto energy_mode = !opts_.use_energy  ? MelFrontEnd::Energy::kNone
                           : opts_.raw_energy ? MelFrontEnd::Energy::kRaw
                                              : MelFrontEnd::Energy::kWindowed;
  const std::int32_t num_bins = front_end_.NumBins();
  float* mel = buffers.mel.data();
  for (std::int64_t f = 0; f < num_frames; ++f) {
    float log_energy = front_end_.ComputeFrame(samples, n, f, energy_mode, /*use_power=*/true, &rng, &buffers);
    for (std::int32_t b = 0; b < num_bins; ++b)
      mel[b] = std::log(std::max(mel[b], std::numeric_limits<float>::epsilon()));
    float* row = out.row(f);
    DctRow(dct_transposed_.data(), mel, num_bins, num_ceps, row);
    if (!lifter_.empty()) {
      for (std::int32_t k = 0; k < num_ceps; ++k) row[k] *= lifter_[static_cast<std::size_t>(k)];
    }
    if (opts_.use_energy) {
      if (opts_.energy_floor > 0.0f && log_energy < log_energy_floor_) log_energy = log_energy_floor_;
      row[0] = log_energy;
    }
    if (opts_.htk_compat) {
      float energy = row[0];
      for (std::int32_t k = 0; k + 1 < num_ceps; ++k) row[k] = row[k + 1];
      if (!opts_.use_energy) energy *= static_cast<float>(M_SQRT2);
      row[num_ceps - 1] = energy;
    }
  }
  return out;
}

}  // namespace asv::features
