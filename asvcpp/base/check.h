// ASV_CHECK: cheap invariant checks that stay on in release builds.
#pragma once

#include <stdexcept>
#include <string>

namespace asv::base {
[[noreturn]] void CheckFailed(const char* expr, const char* file, int line, const std::string& msg);
}  // namespace asv::base

/// Throws std::logic_error naming the expression, file and line when `cond` is false.
#define ASV_CHECK(cond, ...)                                                              \
  do {                                                                                    \
    if (!(cond)) ::asv::base::CheckFailed(#cond, __FILE__, __LINE__, std::string{__VA_ARGS__}); \
  } while (false)
