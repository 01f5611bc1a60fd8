// Frame extraction and per-frame signal processing, exactly as Kaldi's
// src/feat/feature-window.{h,cc} (FirstSampleOfFrame, NumFrames, FeatureWindowFunction,
// ExtractWindow, ProcessWindow, Dither, Preemphasize).
//
// Samples are floats holding int16-range values (Kaldi reads wav files as int16 numbers, not
// normalised to [-1, 1]); dither and energy floor are absolute amounts in those units.
#pragma once

#include <cstdint>
#include <vector>

#include "asvcpp/features/feature_options.h"

namespace asv::features {

/// Index of the first sample of frame `frame` (Kaldi FirstSampleOfFrame): frame·shift with
/// snip_edges, else frame·shift + shift/2 − length/2 (negative for the first frames; those
/// samples are reflected by ExtractFrame).
std::int64_t FirstSampleOfFrame(std::int64_t frame, const FrameOptions& opts);

/// Number of frames for `num_samples` samples (Kaldi NumFrames with flush = true):
/// snip_edges: 0 if N < length else 1 + (N − length) / shift;
/// otherwise (N + shift/2) / shift, i.e. N/shift rounded to nearest (integer division).
std::int64_t NumFrames(std::int64_t num_samples, const FrameOptions& opts);

/// The window function, [WindowSize()] values computed in double and stored as float
/// (Kaldi FeatureWindowFunction), with a = 2π/(N−1):
///   hanning 0.5 − 0.5·cos(a·i); sine sin(a·i/2); hamming 0.54 − 0.46·cos(a·i);
///   povey (0.5 − 0.5·cos(a·i))^0.85; rectangular 1;
///   blackman c − 0.5·cos(a·i) + (0.5 − c)·cos(2a·i) with c = blackman_coeff.
/// Throws DataError for an unknown window type.
std::vector<float> MakeWindowFunction(const FrameOptions& opts);

/// Deterministic standard-normal generator for dither: xoshiro256** (Blackman & Vigna) seeded
/// through SplitMix64, turned into N(0, 1) samples by the 256-layer Ziggurat method of Marsaglia &
/// Tsang, "The Ziggurat Method for Generating Random Variables", J. Statistical Software 5(8),
/// 2000 (r = 3.6541528853610088, v = 4.92867323399e-3; tables built in double at first use),
/// with Marsaglia's exact method for the tail |x| > r. Each 64-bit draw gives two samples, one
/// per 32-bit half: bits 0..7 pick the layer, bits 8..31 are a signed 24-bit uniform u in
/// [−1, 1), independent of the layer (Doornik, "An Improved Ziggurat Method to Generate Normal
/// Random Samples", 2005). About 99% of samples cost half a draw, a multiplication and a
/// comparison, without a data-dependent branch (the sign comes with u, as in Marsaglia & Tsang's
/// RNOR); the rest (wedges, tail) use 53-bit uniforms and exp/log in double. Samples are floats
/// with a resolution of x[layer]·2^−23 <= 4.7e−7.
///
/// Any exact N(0, 1) generator is a valid dither (Kaldi's RandGauss uses Box–Muller on rand()),
/// so dithered features match Kaldi in distribution, not sample by sample. Unlike
/// std::normal_distribution, whose algorithm differs between standard libraries, the sequence is
/// fixed by the seed, so dithered features are reproducible. Not thread-safe; use one per call.
class GaussianRng {
 public:
  explicit GaussianRng(std::uint64_t seed);

  /// Next N(0, 1) sample.
  float Next();

  /// x[i] += scale·Next() for i = 0..n−1, in that order (so the result equals n calls to
  /// Next()); `x` has n floats, n >= 0. This is Kaldi's Dither (waveform[i] += RandGauss()·
  /// dither) for a whole frame in one call.
  void AddScaled(float scale, float* x, std::int64_t n);

 private:
  struct Tables;  // Ziggurat layer edges and f(x) = exp(−x²/2), in feature_window.cc
  // These take the generator state as a pointer, so that AddScaled can keep a copy in registers.
  static std::uint64_t NextBits(std::uint64_t* s);
  static float Sample(const Tables& t, std::uint64_t* s, std::uint32_t half);
  static float SlowPath(const Tables& t, std::uint64_t* s, std::uint32_t half, float x);  // ~1%
  std::uint64_t s_[4];
  const Tables* tables_;
  std::uint32_t spare_ = 0;  // high half of the last 64-bit draw, not yet used
  bool has_spare_ = false;
};

/// Copies the WindowSize() samples of frame `frame` into `out` (Kaldi ExtractWindow without the
/// processing). Samples outside [0, num_samples) are reflected including the edge sample
/// (−1 → 0, −2 → 1, N → N−1, N+1 → N−2), repeatedly if needed. Preconditions: num_samples > 0,
/// 0 <= frame < NumFrames(num_samples, opts).
void ExtractFrame(const float* samples, std::int64_t num_samples, std::int64_t frame, const FrameOptions& opts,
                  float* out);

/// Processes one frame of WindowSize() samples in place, in Kaldi's order (ProcessWindow):
/// dither (opts.dither·N(0,1) per sample from rng->AddScaled; `rng` may be null when dither is
/// 0), DC removal, then, if `log_energy_pre_window` is not null, stores log(max(Σx², FLT_EPSILON))
/// there; pre-emphasis x[i] −= c·x[i−1] for i = N−1..1 and x[0] −= c·x[0]; multiplication by
/// `window` ([WindowSize()]). The sums (DC offset, energy) are accumulated in double in an order
/// of our choosing (Kaldi leaves the order to BLAS sdot); the element-wise steps round exactly as
/// Kaldi's. Throws (ASV_CHECK) when dither != 0 and `rng` is null.
void ProcessFrame(const FrameOptions& opts, const float* window, GaussianRng* rng, float* frame,
                  float* log_energy_pre_window);

}  // namespace asv::features
