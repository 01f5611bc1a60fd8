// What the LibTorch this binary was built against can do on this machine: version, CUDA, NCCL,
// Gloo and the visible GPUs. Free of LibTorch headers so any tool can include it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace asv::distributed {

/// One visible CUDA device. `index` is the CUDA runtime index (after CUDA_VISIBLE_DEVICES).
struct GpuInfo {
  int index = 0;
  std::string name;
  std::int64_t total_memory_bytes = 0;
  int compute_major = 0;
  int compute_minor = 0;
};

struct RuntimeInfo {
  std::string torch_version;  ///< e.g. "1.13.0" or "2.11.0"
  bool cuda_build = false;    ///< Built against a CUDA LibTorch (target torch_cuda).
  bool nccl_build = false;    ///< NCCL process groups compiled in.
  bool gloo_build = false;    ///< Gloo process groups compiled in (CPU data parallelism).
  bool cuda_available = false;  ///< A driver and at least one GPU are usable now.
  std::vector<GpuInfo> gpus;    ///< Empty without CUDA.
  int intra_op_threads = 0;     ///< LibTorch's intra-op thread count.
};

/// Queries LibTorch and, in CUDA builds, the CUDA runtime. Never throws: a CUDA build on a
/// machine without a driver reports cuda_available = false and no GPUs.
RuntimeInfo GetRuntimeInfo();

/// Sets LibTorch's intra-op thread count (at::set_num_threads): data-parallel CPU workers share
/// the cores of their node.
void SetIntraOpThreads(int threads);

/// Gives LibTorch one intra-op thread per usable core (the CPUs of this process's affinity mask)
/// unless the environment sets OMP_NUM_THREADS, which LibTorch honours itself. LibTorch's own
/// default follows OpenMP's and can be a single thread (Debian 12's LibTorch 1.13 on a 2-core VM
/// starts with 1), which would leave training in one process and embedding extraction on one
/// core. Returns the thread count in effect afterwards.
int UseEveryCoreUnlessTold();

/// Multi-line human-readable summary of `info` (one "key: value" per line).
std::string Describe(const RuntimeInfo& info);

}  // namespace asv::distributed
