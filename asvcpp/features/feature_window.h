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

/// Deterministic standard-normal generator for dither: xoshiro256** seeded through SplitMix64,
/// Marsaglia's polar method in double. Unlike std::normal_distribution, whose algorithm differs
/// between standard libraries, the sequence is fixed by the seed, so dithered features are
/// reproducible. Not thread-safe; use one per call.
class GaussianRng {
 public:
  explicit GaussianRng(std::uint64_t seed);
  /// Next N(0, 1) sample.
  float Next();

 private:
  std::uint64_t NextBits();
  std::uint64_t s_[4];
  double spare_ = 0.0;
  bool has_spare_ = false;
};

/// Copies the WindowSize() samples of frame `frame` into `out` (Kaldi ExtractWindow without the
/// processing). Samples outside [0, num_samples) are reflected including the edge sample
/// (−1 → 0, −2 → 1, N → N−1, N+1 → N−2), repeatedly if needed. Preconditions: num_samples > 0,
/// 0 <= frame < NumFrames(num_samples, opts).
void ExtractFrame(const float* samples, std::int64_t num_samples, std::int64_t frame, const FrameOptions& opts,
                  float* out);

/// Processes one frame of WindowSize() samples in place, in Kaldi's order (ProcessWindow):
/// dither (adds opts.dither·N(0,1) per sample from `rng`; `rng` may be null when dither is 0),
/// DC removal, then, if `log_energy_pre_window` is not null, stores
/// log(max(Σx², FLT_EPSILON)) there; pre-emphasis x[i] −= c·x[i−1] for i = N−1..1 and
/// x[0] −= c·x[0]; multiplication by `window` ([WindowSize()]).
void ProcessFrame(const FrameOptions& opts, const float* window, GaussianRng* rng, float* frame,
                  float* log_energy_pre_window);

}  // namespace asv::features
