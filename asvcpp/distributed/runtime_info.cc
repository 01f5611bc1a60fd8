#include "asvcpp/distributed/runtime_info.h"

#include <fmt/format.h>
#include <sched.h>

#include <cstdlib>
#include <torch/torch.h>

#include "asvcpp/compat/torch_compat.h"

#ifdef ASV_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif

namespace asv::distributed {

RuntimeInfo GetRuntimeInfo() {
  RuntimeInfo info;
  info.torch_version = compat::TorchVersion();
  info.intra_op_threads = torch::get_num_threads();
#ifdef ASV_WITH_CUDA
  info.cuda_build = true;
#endif
#ifdef ASV_WITH_NCCL
  info.nccl_build = true;
#endif
#ifdef ASV_WITH_GLOO
  info.gloo_build = true;
#endif
#ifdef ASV_WITH_CUDA
  try {
    info.cuda_available = torch::cuda::is_available();
    if (info.cuda_available) {
      const int n = static_cast<int>(c10::cuda::device_count());
      for (int i = 0; i < n; ++i) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
        info.gpus.push_back(GpuInfo{i, prop.name, static_cast<std::int64_t>(prop.totalGlobalMem),
                                    prop.major, prop.minor});
      }
    }
  } catch (const std::exception&) {
    info.cuda_available = false;
    info.gpus.clear();
  }
#endif
  return info;
}

void SetIntraOpThreads(int threads) {
  torch::set_num_threads(threads);
}

int UseEveryCoreUnlessTold() {
  if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    const int cores = sched_getaffinity(0, sizeof mask, &mask) == 0 ? CPU_COUNT(&mask) : 0;
    if (cores > 0 && cores != torch::get_num_threads()) torch::set_num_threads(cores);
  }
  return torch::get_num_threads();
}

std::string Describe(const RuntimeInfo& info) {
  std::string out = fmt::format("LibTorch: {}\n", info.torch_version);
  out += fmt::format("CUDA build: {}\nNCCL: {}\nGloo: {}\n", info.cuda_build ? "yes" : "no",
                     info.nccl_build ? "yes" : "no", info.gloo_build ? "yes" : "no");
  out += fmt::format("CPU threads (intra-op): {}\n", info.intra_op_threads);
  if (!info.cuda_build) {
    out += "GPUs: none (CPU-only LibTorch)\n";
  } else if (!info.cuda_available) {
    out += "GPUs: none usable (no CUDA driver or device)\n";
  } else {
    for (const auto& gpu : info.gpus) {
      out += fmt::format("GPU {}: {} ({:.1f} GiB, compute {}.{})\n", gpu.index, gpu.name,
                         static_cast<double>(gpu.total_memory_bytes) / (1024.0 * 1024.0 * 1024.0),
                         gpu.compute_major, gpu.compute_minor);
    }
  }
  return out;
}

}  // namespace asv::distributed
