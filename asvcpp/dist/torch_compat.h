// The one place where LibTorch version differences live (Debian 1.13 CPU vs the 2.x wheels with
// CUDA). Every other file calls these wrappers instead of testing TORCH_VERSION_* itself.
// See ../shared/reference/libtorch.md section 9 for the differences this header absorbs.
#pragma once

#include <torch/version.h>

#include <string>

#define ASV_TORCH_VERSION_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace asv::dist::compat {

/// "major.minor.patch" of the LibTorch headers this file was compiled against.
inline std::string TorchVersion() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

}  // namespace asv::dist::compat
