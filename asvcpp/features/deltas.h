// Delta and acceleration features, exactly Kaldi's compute-deltas / add-deltas
// (kaldi-asr/kaldi: src/feat/feature-functions.{h,cc} DeltaFeatures, ComputeDeltas).
//
// The order-i filter is the order-(i−1) filter convolved with the regression filter
// j / Σ_{j'=-w..w} j'² (j = −w..w, w = window); order 0 is the identity. Frames beyond the
// utterance edges are replaced by the first / last frame. Scales and sums in float.
#pragma once

#include <cstdint>
#include <vector>

#include "asvcpp/base/matrix.h"

namespace asv::features {

class KaldiOptions;

/// Kaldi DeltaFeaturesOptions (defaults order 2, window 2). ASVtorch uses order 2 for 'bva'
/// and 1 for 'bv', with window = features.delta_reach.
struct DeltaOptions {
  std::int32_t order = 2;   ///< --delta-order, in [0, 1000).
  std::int32_t window = 2;  ///< --delta-window: each order's filter spans 2·window + 1 frames.

  /// Registers every field under its Kaldi option name (see kaldi_options.h).
  void Register(KaldiOptions* opts);
  /// Throws DataError unless 0 <= order < 1000 and 0 < window < 1000 (Kaldi's checks).
  void Validate() const;
};

/// The filters of orders 0..order (DeltaFeatures' scales_): filter i has 2·i·window + 1 taps,
/// centred.
std::vector<std::vector<float>> DeltaScales(const DeltaOptions& opts);

/// `feats` [frames, dim] -> [frames, dim·(order + 1)]: the features, then the deltas of each
/// order. Throws DataError for invalid options.
Matrix ComputeDeltas(const DeltaOptions& opts, const Matrix& feats);

}  // namespace asv::features
