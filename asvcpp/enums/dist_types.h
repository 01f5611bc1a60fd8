// The enumerated `computing.*` setting of data-parallel training, with its names. Header only,
// no LibTorch: below both asv_settings and asv_distributed.
#pragma once

#include "asvcpp/base/enum_names.h"

namespace asv::distributed {

/// Communication backend of data-parallel training (`computing.dist_backend`; SpeechBrain's
/// `--distributed_backend`).
enum class DistBackend {
  kAuto,  ///< "auto": NCCL on GPUs, Gloo on the CPU.
  kNccl,  ///< "nccl": NCCL; needs GPUs and a LibTorch with NCCL.
  kGloo,  ///< "gloo": Gloo, also on GPUs (CUDA tensors, where LibTorch's Gloo supports them).
};
inline constexpr EnumName<DistBackend> kDistBackendNames[] = {
    {DistBackend::kAuto, "auto"}, {DistBackend::kNccl, "nccl"}, {DistBackend::kGloo, "gloo"}};
/// Name table of DistBackend (enum_names.h).
constexpr const auto& EnumNames(DistBackend) { return kDistBackendNames; }

}  // namespace asv::distributed
