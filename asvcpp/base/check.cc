#include "asvcpp/base/check.h"

#include <fmt/format.h>

namespace asv::base {

void CheckFailed(const char* expr, const char* file, int line, const std::string& msg) {
  throw std::logic_error(fmt::format("internal check failed: {} at {}:{}{}{}", expr, file, line,
                                     msg.empty() ? "" : ": ", msg));
}

}  // namespace asv::base
