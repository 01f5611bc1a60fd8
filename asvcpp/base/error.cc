#include "asvcpp/base/error.h"

#include <fmt/format.h>

namespace asv {

namespace {

std::string RenderAll(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  std::size_t errors = 0;
  for (const auto& d : diagnostics) {
    out += d.Render();
    if (d.severity == Severity::kError) ++errors;
  }
  out += fmt::format("{} error{} in configuration; nothing was run.", errors, errors == 1 ? "" : "s");
  return out;
}

}  // namespace

ConfigError::ConfigError(std::vector<Diagnostic> diagnostics)
    : Error(kExitConfigError, RenderAll(diagnostics)), diagnostics_(std::move(diagnostics)) {}

ConfigError::ConfigError(const std::string& message)
    : Error(kExitConfigError, message),
      diagnostics_{Diagnostic{Severity::kError, {}, message, {}, {}}} {}

int ExitCodeFor(const std::exception& e) noexcept {
  if (const auto* asv_error = dynamic_cast<const Error*>(&e)) return asv_error->code();
  return kExitFailure;
}

}  // namespace asv
