// The enumerated `backend.*` settings, with their names. No LibTorch in this header: asv_settings
// includes it (header only, without linking asv_backend) so that the BackendSettings fields hold
// these enums and their choices come from the tables below.
#pragma once

#include "asvcpp/base/enum_names.h"

namespace asv::backend {

/// The scoring back-end (`backend.scoring`).
enum class Scoring {
  kPlda,    ///< "plda": closed-form two-covariance PLDA
  kCosine,  ///< "cosine": cosine similarity
};
inline constexpr EnumName<Scoring> kScoringNames[] = {{Scoring::kPlda, "plda"}, {Scoring::kCosine, "cosine"}};
/// Name table of Scoring (enum_names.h).
constexpr const auto& EnumNames(Scoring) { return kScoringNames; }

}  // namespace asv::backend
