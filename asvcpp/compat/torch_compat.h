// The one place where LibTorch version differences live (Debian 1.13 CPU vs the 2.x wheels with
// CUDA). Every other file calls these wrappers instead of testing TORCH_VERSION_* itself.
// Each shim below names the LibTorch API that changed (PyTorch's c10d headers under
// torch/csrc/distributed/c10d/, c10/core/Allocator.h) and the release that changed it.
#pragma once

#include <string>
#include <variant>

#include <torch/version.h>

#define ASV_TORCH_VERSION_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace asv::compat {

/// The explicit padding held by a convolution's options (torch::nn::ConvNdOptions<D>::padding(),
/// `Array` = torch::ExpandingArray<D>), or nullptr when the padding is kValid or kSame. Its
/// padding_t is a c10::variant up to 2.0 and a std::variant from 2.1 (c10/util/variant.h removed).
template <class Array, class Padding>
const Array* ExplicitPadding(const Padding& padding) {
#if ASV_TORCH_VERSION_AT_LEAST(2, 1)
  return std::get_if<Array>(&padding);
#else
  return c10::get_if<Array>(&padding);
#endif
}

/// "major.minor.patch" of the LibTorch headers this file was compiled against.
inline std::string TorchVersion() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

}  // namespace asv::compat

// ---- c10d process groups (PyTorch torch/csrc/distributed/c10d/Backend.hpp, ProcessGroup.hpp) ---
// Declarations only: the file that calls collectives includes the c10d headers itself.
namespace c10d {
class ProcessGroup;
class Backend;
}  // namespace c10d

namespace asv::compat {

/// The class whose collectives (allreduce, broadcast, ...) we call directly on a Gloo or NCCL
/// process group: 1.13's ProcessGroupGloo/NCCL derive from c10d::ProcessGroup, 2.x's from
/// c10d::Backend (ProcessGroup became a per-device dispatcher we do not need).
#if TORCH_VERSION_MAJOR >= 2
using CollectiveBackend = c10d::Backend;
#else
using CollectiveBackend = c10d::ProcessGroup;
#endif

/// Ends a backend before it is destroyed: 2.x has Backend::shutdown() (ProcessGroupNCCL wants it
/// after the last collective); 1.13 relies on the destructor.
template <class Backend>
void ShutdownBackend(Backend& backend) {
#if TORCH_VERSION_MAJOR >= 2
  backend.shutdown();
#else
  (void)backend;
#endif
}

/// Tells an NCCL backend which GPU this process uses (2.3+: Backend::setBoundDeviceId, which
/// also fixes the device of barriers); earlier versions use the current CUDA device.
template <class Backend, class Device>
void BindDevice(Backend& backend, const Device& device) {
#if ASV_TORCH_VERSION_AT_LEAST(2, 3)
  backend.setBoundDeviceId(device);
#else
  (void)backend;
  (void)device;
#endif
}

// ---- c10::Allocator (train/cpu_allocator.cc) ------------------------------------------------
// 1.13 declares `DataPtr allocate(size_t) const`; 2.3 made it non-const and added the pure
// virtual `copy_data(dest, src, count) const` (both in c10/core/Allocator.h; checked against the
// 1.13 and 2.11 headers, releases between them are not built here).
#if ASV_TORCH_VERSION_AT_LEAST(2, 3)
#define ASV_ALLOCATOR_ALLOCATE_CONST
#define ASV_ALLOCATOR_HAS_COPY_DATA 1
#else
#define ASV_ALLOCATOR_ALLOCATE_CONST const
#define ASV_ALLOCATOR_HAS_COPY_DATA 0
#endif

// Gradient-accumulator post hooks (torch::autograd::impl::grad_accumulator(p)->add_post_hook,
// FunctionPostHook::operator()(outputs, inputs), del_post_hook(key)) have the same signatures in
// 1.13 and 2.11; 2.x only adds a non-pure FunctionPostHook::compiled_args. No shim needed.
// Gloo's createDevice*(name) gained a defaulted lazyInit argument in 2.x: one-argument calls
// compile on both.

}  // namespace asv::compat
