// ASV_CHECK: cheap invariant checks that stay on in release builds.
#pragma once

#include <stdexcept>
#include <string>

namespace asv::base {
[[noreturn]] void CheckFailed(const char* expr, const char* file, int line, const std::string& msg);
}  // namespace asv::base

/// ASV_CHECK(cond) or ASV_CHECK(cond, message): throws std::logic_error naming the expression,
/// file and line (and the message) when `cond` is false.
#define ASV_CHECK(...) ASV_CHECK_PICK_(__VA_ARGS__, ASV_CHECK_MSG_, ASV_CHECK_NOMSG_, unused)(__VA_ARGS__)

#define ASV_CHECK_PICK_(_1, _2, NAME, ...) NAME
#define ASV_CHECK_NOMSG_(cond) ASV_CHECK_MSG_(cond, "")
#define ASV_CHECK_MSG_(cond, msg)                                                           \
  do {                                                                                      \
    if (!(cond)) ::asv::base::CheckFailed(#cond, __FILE__, __LINE__, std::string{msg});     \
  } while (false)
