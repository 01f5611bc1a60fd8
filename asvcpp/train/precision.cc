#include "asvcpp/train/precision.h"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <fmt/format.h>
#include <torch/version.h>

#include "asvcpp/base/error.h"

// LibTorch 2.4 replaced the per-device autocast functions (set_enabled for CUDA, set_cpu_enabled,
// set_autocast_gpu_dtype, ...) by device-generic ones; the old names remain as deprecated wrappers.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define ASV_AUTOCAST_DEVICE_GENERIC 1
#else
#define ASV_AUTOCAST_DEVICE_GENERIC 0
#endif

namespace asv::train {
namespace {

bool AutocastEnabled(bool cuda) {
#if ASV_AUTOCAST_DEVICE_GENERIC
  return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

at::ScalarType AutocastDtype(bool cuda) {
#if ASV_AUTOCAST_DEVICE_GENERIC
  return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#endif
}

void SetAutocast(bool cuda, bool enabled, at::ScalarType dtype) {
#if ASV_AUTOCAST_DEVICE_GENERIC
  const at::DeviceType type = cuda ? at::kCUDA : at::kCPU;
  at::autocast::set_autocast_enabled(type, enabled);
  at::autocast::set_autocast_dtype(type, dtype);
#else
  if (cuda) {
    at::autocast::set_enabled(enabled);
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_cpu_enabled(enabled);
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
#endif
}

}  // namespace

AutocastGuard::AutocastGuard(Precision precision, const std::string& device) {
  if (precision == Precision::kFloat32) return;
  if (device == "cpu") {
    cuda_ = false;
  } else if (device == "cuda" || device.rfind("cuda:", 0) == 0) {
    cuda_ = true;
  } else {
    throw ConfigError(fmt::format("network.precision '{}' needs a 'cpu' or 'cuda[:N]' device, not '{}'",
                                  EnumToName(precision), device));
  }
  previous_enabled_ = AutocastEnabled(cuda_);
  previous_dtype_ = static_cast<int>(AutocastDtype(cuda_));
  SetAutocast(cuda_, true, at::kBFloat16);
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  SetAutocast(cuda_, previous_enabled_, static_cast<at::ScalarType>(previous_dtype_));
}

void ApplyMathModes(bool allow_tf32) {
  at::globalContext().setAllowTF32CuBLAS(allow_tf32);
  at::globalContext().setAllowTF32CuDNN(allow_tf32);
}

}  // namespace asv::train
