// Sliding-window cepstral mean (and optionally variance) normalisation, exactly Kaldi's
// apply-cmvn-sliding (kaldi-asr/kaldi: src/feat/feature-functions.{h,cc} SlidingWindowCmn /
// SlidingWindowCmnInternal), computed in double.
//
// Window placement for frame t of T (end is one past the last frame):
//   center:   start = t − cmn_window/2, end = start + cmn_window;
//   !center:  start = t − cmn_window,   end = t + 1;
//   if start < 0: end −= start, start = 0 (shift right);
//   !center and end > t: end = max(t + 1, min_window);
//   if end > T: start −= end − T, end = T, start = max(start, 0) (shift left, then clip).
// So with center=true a centred window of cmn_window frames is shifted to lie inside the
// utterance, and an utterance shorter than cmn_window uses all its frames for every t.
// Output = x[t] − mean(window); with normalize_variance it is further divided by the window's
// standard deviation (variance floored at 1e-10; a 1-frame window gives 0).
#pragma once

#include <cstdint>

#include "asvcpp/base/matrix.h"

namespace asv::features {

class KaldiOptions;

/// Kaldi SlidingWindowCmnOptions with Kaldi's defaults (cmn-window 600, center false).
/// ASVtorch calls it with center=true and cmn_window = features.cmvn_window (300 by default):
/// see AsvTorch().
struct SlidingCmnOptions {
  std::int32_t cmn_window = 600;    ///< --cmn-window, frames.
  std::int32_t min_window = 100;    ///< --min-cmn-window, frames; used only when !center.
  std::int32_t max_warnings = 5;    ///< --max-warnings: variance-floor warnings per call (-1 all).
  bool normalize_variance = false;  ///< --norm-vars.
  bool center = false;              ///< --center.

  /// ASVtorch's per-utterance call: cmn_window = `window` (300), center = true,
  /// normalize_variance = `norm_vars`; min_window (unused when centred) is lowered to `window`
  /// if needed so that small windows pass Validate().
  static SlidingCmnOptions AsvTorch(std::int32_t window = 300, bool norm_vars = false);

  /// Registers every field under its Kaldi option name (see kaldi_options.h).
  void Register(KaldiOptions* opts);
  /// Throws DataError unless cmn_window > 0 and, with center, 0 < min_window <= cmn_window
  /// (Kaldi SlidingWindowCmnOptions::Check).
  void Validate() const;
};

/// Normalised copy of `feats` [frames, dim] (same shape). Empty input gives an empty output.
/// Throws DataError for invalid options.
Matrix ApplySlidingCmn(const SlidingCmnOptions& opts, const Matrix& feats);

}  // namespace asv::features
