// Options of SpecAugment (spec_augment.h) without LibTorch, for settings and recipe code.
#pragma once

#include <cstdint>

namespace asv::features {

/// SpecAugment options, WeSpeaker's defaults (spec_aug's arguments).
struct SpecAugmentOptions {
  std::int32_t num_t_mask = 1;  ///< time masks per augmented segment, >= 0
  std::int32_t num_f_mask = 1;  ///< frequency masks per augmented segment, >= 0
  std::int32_t max_t = 10;      ///< widest time mask, frames, >= 1
  std::int32_t max_f = 8;       ///< widest frequency mask, feature dimensions, >= 1
  double prob = 0.6;            ///< probability that a segment is augmented at all, in [0, 1]

  /// Throws ConfigError naming the field for a value outside the ranges above.
  void Validate() const;
};

}  // namespace asv::features
