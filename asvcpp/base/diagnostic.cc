#include "asvcpp/base/diagnostic.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <unordered_set>

#include "asvcpp/base/error.h"

namespace asv {

FileName::FileName(std::string_view name) {
  if (name.empty()) return;
  // Never destroyed, so names stay valid in static destructors; set nodes do not move on rehash.
  static auto* const pool = new std::unordered_set<std::string>();
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  name_ = &*pool->emplace(name).first;
}

const std::string& FileName::Empty() noexcept {
  static const auto* const empty = new std::string();  // Never destroyed, as the pool.
  return *empty;
}

std::string SourcePos::ToString() const {
  if (line <= 0) return file.str();
  if (column <= 0) return fmt::format("{}:{}", file.str(), line);
  return fmt::format("{}:{}:{}", file.str(), line, column);
}

namespace {

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kError: return "error";
    case Severity::kWarning: return "warning";
    case Severity::kNote: return "note";
  }
  return "error";
}

void RenderInto(const Diagnostic& d, std::string& out) {
  const std::string where = d.pos.ToString();
  if (where.empty()) {
    out += fmt::format("{}: {}\n", SeverityName(d.severity), d.message);
  } else {
    out += fmt::format("{}: {}: {}\n", where, SeverityName(d.severity), d.message);
  }
  if (d.pos.has_line() && !d.source_line.empty()) {
    const std::string number = std::to_string(d.pos.line);
    out += fmt::format(" {} | {}\n", number, d.source_line);
    if (d.pos.column > 0) {
      // Keep tabs so the caret lines up under the same column in a terminal.
      std::string pad;
      const auto limit = std::min<std::size_t>(d.pos.column - 1, d.source_line.size());
      for (std::size_t i = 0; i < limit; ++i) pad += d.source_line[i] == '\t' ? '\t' : ' ';
      out += fmt::format(" {} | {}^\n", std::string(number.size(), ' '), pad);
    }
  }
  for (const auto& note : d.notes) RenderInto(note, out);
}

}  // namespace

std::string Diagnostic::Render() const {
  std::string out;
  RenderInto(*this, out);
  return out;
}

Diagnostic& Diagnostics::Add(Severity severity, SourcePos pos, std::string message,
                             std::string source_line) {
  items_.push_back(Diagnostic{severity, std::move(pos), std::move(message), std::move(source_line), {}});
  return items_.back();
}

void Diagnostics::Append(const Diagnostics& other) {
  items_.insert(items_.end(), other.items_.begin(), other.items_.end());
}

void Diagnostics::AppendUnique(const Diagnostics& other) {
  for (const auto& d : other.items_) {
    const bool seen = std::any_of(items_.begin(), items_.end(), [&](const Diagnostic& e) {
      return e.severity == d.severity && e.pos.file == d.pos.file && e.pos.line == d.pos.line &&
             e.pos.column == d.pos.column && e.message == d.message;
    });
    if (!seen) items_.push_back(d);
  }
}

bool Diagnostics::has_errors() const noexcept { return error_count() > 0; }

std::size_t Diagnostics::error_count() const noexcept {
  return static_cast<std::size_t>(std::count_if(items_.begin(), items_.end(), [](const Diagnostic& d) {
    return d.severity == Severity::kError;
  }));
}

std::string Diagnostics::Render() const {
  std::string out;
  for (const auto& d : items_) RenderInto(d, out);
  return out;
}

void Diagnostics::ThrowIfErrors() const {
  if (has_errors()) throw ConfigError(items_);
}

std::string LineOf(const std::string& text, int line) {
  if (line <= 0) return {};
  std::size_t start = 0;
  for (int i = 1; i < line; ++i) {
    start = text.find('\n', start);
    if (start == std::string::npos) return {};
    ++start;
  }
  std::size_t end = text.find('\n', start);
  if (end == std::string::npos) end = text.size();
  if (end > start && text[end - 1] == '\r') --end;
  return text.substr(start, end - start);
}

}  // namespace asv
