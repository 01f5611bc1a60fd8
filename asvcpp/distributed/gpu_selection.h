// Which GPU each worker process gets. computing.gpu_ids holds physical GPU ids: the numbers
// nvidia-smi shows (asvrun sets CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA numbers GPUs the same
// way). Every worker is pinned by giving it CUDA_VISIBLE_DEVICES=<its GPU> before CUDA starts, so
// it sees exactly one device (cuda:0) and creates no context on any other GPU.
//
// When CUDA_VISIBLE_DEVICES is already set (by the user or a scheduler):
//   - a list of integers ("2,3"): gpu_ids must be members of it (still physical ids). CUDA stops
//     reading the list at the first entry it cannot use, so only the first `device_count`
//     entries count as visible;
//   - a list of UUIDs / MIG ids ("GPU-8f2c...,MIG-..."): gpu_ids are positions in the list.
//   - empty: no GPU is visible.
// No LibTorch in this file.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace asv::distributed {

/// The entries of a CUDA_VISIBLE_DEVICES value, split at commas and trimmed: "2, 3" -> {"2", "3"};
/// an empty or blank value gives none. Never throws.
std::vector<std::string> SplitVisibleDevices(std::string_view list);

/// For each entry of `gpu_ids`, the value of CUDA_VISIBLE_DEVICES that pins a worker to it: the
/// id itself ("2") when the variable is unset or numeric, the list entry ("GPU-8f2c...") for UUIDs.
/// `cuda_visible_devices`: the current value of the variable (nullopt: unset).
/// `device_count`: the number of GPUs CUDA reports under that value.
/// Throws ConfigError (naming computing.gpu_ids, the id and what is visible) for an empty list,
/// a duplicate id, a negative id or an id that is not visible, e.g. "computing.gpu_ids: GPU 3
/// does not exist: this machine has 2 GPUs (0, 1)" or "computing.gpu_ids: GPU 3 is not in
/// CUDA_VISIBLE_DEVICES=0,1".
std::vector<std::string> WorkerVisibleDevices(const std::vector<int>& gpu_ids,
                                              const std::optional<std::string>& cuda_visible_devices,
                                              int device_count);

}  // namespace asv::distributed
