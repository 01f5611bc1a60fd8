// The enumerated `backend.*` settings, with their names. Header only, no LibTorch: asvcpp/enums/
// sits below both asv_settings and asv_backend, so that the BackendSettings fields hold these enums
// (their choices come from the tables below) without either folder including the other.
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
