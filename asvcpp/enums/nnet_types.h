// The enumerated `network.*` settings of the x-vector networks, with their names. Header only, no
// LibTorch: asvcpp/enums/ sits below both asv_settings and asv_nnet, so that the NetworkSettings
// fields hold these enums (their choices come from the tables below).
#pragma once

#include "asvcpp/base/enum_names.h"

namespace asv::nnet {

/// Activation f of every block (`network.activation`).
enum class Activation {
  kRelu,       ///< "relu"
  kLeakyRelu,  ///< "lrelu": leaky ReLU with slope LayerOptions::lrelu_slope
  kSelu,       ///< "selu"
};
inline constexpr EnumName<Activation> kActivationNames[] = {
    {Activation::kRelu, "relu"}, {Activation::kLeakyRelu, "lrelu"}, {Activation::kSelu, "selu"}};
/// Name table of Activation (enum_names.h).
constexpr const auto& EnumNames(Activation) { return kActivationNames; }

/// Padding of the frame-layer convolutions (`network.cnn_padding_mode`).
enum class PaddingMode {
  kZeros,     ///< "zeros"
  kCircular,  ///< "circular": needs at least r frames at the input of a layer with reach r
};
inline constexpr EnumName<PaddingMode> kPaddingModeNames[] = {{PaddingMode::kZeros, "zeros"},
                                                              {PaddingMode::kCircular, "circular"}};
/// Name table of PaddingMode (enum_names.h).
constexpr const auto& EnumNames(PaddingMode) { return kPaddingModeNames; }

/// ASVtorch's x-vector architectures (`network.network_class`, whose value may also carry
/// ASVtorch's module path; see settings::NetworkSettings::Architecture).
enum class Architecture { kStandardNet, kStandardSeNet, kStandardResSeNet, kLargeResSeNet };
inline constexpr EnumName<Architecture> kArchitectureNames[] = {
    {Architecture::kStandardNet, "StandardNet"},
    {Architecture::kStandardSeNet, "StandardSeNet"},
    {Architecture::kStandardResSeNet, "StandardResSeNet"},
    {Architecture::kLargeResSeNet, "LargeResSeNet"}};
/// Name table of Architecture (enum_names.h): ASVtorch's class names.
constexpr const auto& EnumNames(Architecture) { return kArchitectureNames; }

/// Utterance-level pooling (`network.pooling_layer_type`).
enum class PoolingType {
  kMeanStd,     ///< "default": mean + standard deviation, 2·stat_size outputs
  kClustering,  ///< "clustering": NetVLAD / LDE, n_clusters·stat_size outputs
};
inline constexpr EnumName<PoolingType> kPoolingTypeNames[] = {{PoolingType::kMeanStd, "default"},
                                                              {PoolingType::kClustering, "clustering"}};
/// Name table of PoolingType (enum_names.h).
constexpr const auto& EnumNames(PoolingType) { return kPoolingTypeNames; }

/// How frames are softly assigned to clusters (`network.cluster_assignment_mode`).
enum class ClusterAssignment { kNetVlad, kLde };
inline constexpr EnumName<ClusterAssignment> kClusterAssignmentNames[] = {{ClusterAssignment::kNetVlad, "net_vlad"},
                                                                          {ClusterAssignment::kLde, "lde"}};
/// Name table of ClusterAssignment (enum_names.h).
constexpr const auto& EnumNames(ClusterAssignment) { return kClusterAssignmentNames; }

/// How component vectors are normalised (`network.supervector_mode`).
enum class SupervectorMode { kNetVlad, kLde };
inline constexpr EnumName<SupervectorMode> kSupervectorModeNames[] = {{SupervectorMode::kNetVlad, "net_vlad"},
                                                                      {SupervectorMode::kLde, "lde"}};
/// Name table of SupervectorMode (enum_names.h).
constexpr const auto& EnumNames(SupervectorMode) { return kSupervectorModeNames; }

/// Shape of the LDE precision λ (`network.lde_covariance_type`). ASVtorch's "full" and
/// "shared_full" are implemented by neither; the setting rejects them with a reason.
enum class LdeCovariance { kSpherical, kSharedSpherical, kDiagonal, kSharedDiagonal };
inline constexpr EnumName<LdeCovariance> kLdeCovarianceNames[] = {{LdeCovariance::kSpherical, "spherical"},
                                                                  {LdeCovariance::kSharedSpherical, "shared_spherical"},
                                                                  {LdeCovariance::kDiagonal, "diagonal"},
                                                                  {LdeCovariance::kSharedDiagonal, "shared_diagonal"}};
/// Name table of LdeCovariance (enum_names.h).
constexpr const auto& EnumNames(LdeCovariance) { return kLdeCovarianceNames; }

}  // namespace asv::nnet
