#include "asvcpp/base/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

namespace asv {

namespace {

// Errors shown in full (Diagnostics::Shown); after them only the count of what follows. Warnings
// (and notes) likewise: a key set 100,000 times in a file made a message of 100,000 warnings
// before its first error.
std::string RenderAll(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  std::size_t errors = 0, others = 0;
  std::size_t hidden_errors = 0, hidden_others = 0;
  for (const auto& d : diagnostics) {
    const bool error = d.severity == Severity::kError;
    if (Diagnostics::Shown(d.severity, errors, others)) {
      out += d.Render();
    } else {
      ++(error ? hidden_errors : hidden_others);
    }
    ++(error ? errors : others);
  }
  std::vector<std::string> hidden;
  if (hidden_errors > 0) hidden.push_back(fmt::format("{} more error{}", hidden_errors, hidden_errors == 1 ? "" : "s"));
  if (hidden_others > 0) hidden.push_back(fmt::format("{} more warning{}", hidden_others, hidden_others == 1 ? "" : "s"));
  if (!hidden.empty()) out += fmt::format("and {}\n", fmt::join(hidden, " and "));
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
