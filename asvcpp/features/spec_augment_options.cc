#include "asvcpp/features/spec_augment_options.h"

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::features {

void SpecAugmentOptions::Validate() const {
  if (num_t_mask < 0) throw ConfigError(fmt::format("spec_augment num_t_mask must be >= 0, got {}", num_t_mask));
  if (num_f_mask < 0) throw ConfigError(fmt::format("spec_augment num_f_mask must be >= 0, got {}", num_f_mask));
  if (max_t < 1) throw ConfigError(fmt::format("spec_augment max_t must be >= 1, got {}", max_t));
  if (max_f < 1) throw ConfigError(fmt::format("spec_augment max_f must be >= 1, got {}", max_f));
  if (!(prob >= 0.0 && prob <= 1.0)) throw ConfigError(fmt::format("spec_augment prob must be in [0, 1], got {}", prob));
}

}  // namespace asv::features
