// The enumerated `features.*` settings, with their names (ASVtorch's spellings). Header
// only, no LibTorch: asvcpp/enums/ sits below both asv_settings and asv_features, so that the
// FeatureSettings fields hold these enums (their choices come from the tables below).
#pragma once

#include "asvcpp/base/enum_names.h"

namespace asv::features {

/// Sliding-window normalisation of the features (`features.cmvn`).
enum class Cmvn {
  kNone,          ///< "": none
  kMean,          ///< "m": mean
  kMeanVariance,  ///< "mv": mean and variance
};
inline constexpr EnumName<Cmvn> kCmvnNames[] = {{Cmvn::kNone, ""}, {Cmvn::kMean, "m"}, {Cmvn::kMeanVariance, "mv"}};
/// Name table of Cmvn (enum_names.h).
constexpr const auto& EnumNames(Cmvn) { return kCmvnNames; }

/// Dynamic features appended to the base features (`features.deltas`).
enum class Deltas {
  kBase,        ///< "b": base features only
  kDelta,       ///< "bv": + deltas
  kDeltaDelta,  ///< "bva": + deltas and delta-deltas
};
inline constexpr EnumName<Deltas> kDeltasNames[] = {
    {Deltas::kBase, "b"}, {Deltas::kDelta, "bv"}, {Deltas::kDeltaDelta, "bva"}};
/// Name table of Deltas (enum_names.h).
constexpr const auto& EnumNames(Deltas) { return kDeltasNames; }

}  // namespace asv::features
