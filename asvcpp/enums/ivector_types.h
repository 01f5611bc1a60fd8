// Enumerated settings whose values no asvcpp module reads (ASVtorch's i-vector recipes), with
// their names. The enums that a module reads are in the other headers of this folder.
#pragma once

#include "asvcpp/base/enum_names.h"

namespace asv::settings {

/// The i-vector model (`ivector.ivec_type`).
enum class IvectorType { kAugmented, kStandard };
inline constexpr EnumName<IvectorType> kIvectorTypeNames[] = {{IvectorType::kAugmented, "augmented"},
                                                              {IvectorType::kStandard, "standard"}};
/// Name table of IvectorType (enum_names.h).
constexpr const auto& EnumNames(IvectorType) { return kIvectorTypeNames; }

/// Residual covariance of the i-vector extractor (`ivector.covariance_type`).
enum class IvectorCovariance { kFull, kDiagonal, kSpherical, kSharedFull, kSharedDiagonal, kSharedSpherical };
inline constexpr EnumName<IvectorCovariance> kIvectorCovarianceNames[] = {
    {IvectorCovariance::kFull, "full"},
    {IvectorCovariance::kDiagonal, "diagonal"},
    {IvectorCovariance::kSpherical, "spherical"},
    {IvectorCovariance::kSharedFull, "shared_full"},
    {IvectorCovariance::kSharedDiagonal, "shared_diagonal"},
    {IvectorCovariance::kSharedSpherical, "shared_spherical"}};
/// Name table of IvectorCovariance (enum_names.h).
constexpr const auto& EnumNames(IvectorCovariance) { return kIvectorCovarianceNames; }

}  // namespace asv::settings
