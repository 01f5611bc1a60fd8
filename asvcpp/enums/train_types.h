// The enumerated `network.*` settings of training, with their names. Header only, no
// LibTorch: asvcpp/enums/ sits below both asv_settings and asv_train, so that the NetworkSettings
// fields hold these enums (their choices come from the tables below).
#pragma once

#include "asvcpp/base/enum_names.h"

namespace asv::train {

/// Optimizer (`network.optimizer`): SGD (ASVtorch's and WeSpeaker's; sgd.h) or AdamW (adamw.h).
enum class OptimizerKind { kSgd, kAdamW };
inline constexpr EnumName<OptimizerKind> kOptimizerNames[] = {{OptimizerKind::kSgd, "sgd"},
                                                              {OptimizerKind::kAdamW, "adamw"}};
/// Name table of OptimizerKind (enum_names.h).
constexpr const auto& EnumNames(OptimizerKind) { return kOptimizerNames; }

/// Arithmetic of the training forward pass (`network.precision`; see precision.h).
enum class Precision {
  kFloat32,   ///< "fp32": everything in float32 (the default).
  kBFloat16,  ///< "bf16": autocast to bfloat16; float32 master weights and optimizer.
};
inline constexpr EnumName<Precision> kPrecisionNames[] = {{Precision::kFloat32, "fp32"},
                                                          {Precision::kBFloat16, "bf16"}};
/// Name table of Precision (enum_names.h).
constexpr const auto& EnumNames(Precision) { return kPrecisionNames; }

}  // namespace asv::train
