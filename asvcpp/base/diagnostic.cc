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

// Source lines longer than this are shown as a window of this many bytes around the caret.
constexpr std::size_t kMaxShownLine = 120;

bool IsUtf8Continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The part of `line` shown for a caret at 0-based byte `caret`: at most kMaxShownLine bytes
// around it, cut at character boundaries, with "..." where text was left out. `caret` becomes
// the caret's byte offset in the result.
std::string ShownLine(const std::string& line, std::size_t& caret) {
  if (line.size() <= kMaxShownLine) return line;
  caret = std::min(caret, line.size());
  std::size_t begin = caret > kMaxShownLine / 2 ? caret - kMaxShownLine / 2 : 0;
  std::size_t end = std::min(line.size(), begin + kMaxShownLine);
  begin = end - std::min(end, kMaxShownLine);  // A caret near the end shows a full window too.
  while (begin > 0 && begin < line.size() && IsUtf8Continuation(line[begin])) ++begin;
  while (end < line.size() && end > begin && IsUtf8Continuation(line[end])) --end;
  std::string shown = begin > 0 ? "..." : "";
  caret = caret - begin + shown.size();
  shown.append(line, begin, end - begin);
  if (end < line.size()) shown += "...";
  return shown;
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
    std::size_t caret = d.pos.column > 0 ? static_cast<std::size_t>(d.pos.column) - 1 : 0;
    const std::string line = ShownLine(d.source_line, caret);
    out += fmt::format(" {} | {}\n", number, line);
    if (d.pos.column > 0) {
      // Keep tabs so the caret lines up under the same column in a terminal.
      std::string pad;
      const auto limit = std::min(caret, line.size());
      for (std::size_t i = 0; i < limit; ++i) pad += line[i] == '\t' ? '\t' : ' ';
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

Diagnostic& Diagnostics::Add(Severity severity, SourcePos pos, std::string message, std::string_view source_line) {
  std::string line = NextShown(severity) ? std::string(source_line) : std::string();
  errors_ += severity == Severity::kError ? 1 : 0;
  items_.push_back(Diagnostic{severity, std::move(pos), std::move(message), std::move(line), {}});
  return items_.back();
}

void Diagnostics::Append(const Diagnostics& other) {
  items_.insert(items_.end(), other.items_.begin(), other.items_.end());
  errors_ += other.errors_;
}

void Diagnostics::AppendUnique(const Diagnostics& other) {
  // Diagnostics by severity, position and message, in a hash set: linear in both lists (a file
  // with many errors is resolved for each config asked for).
  struct Key {
    const Diagnostic* d;
    bool operator==(const Key& o) const {
      return d->severity == o.d->severity && d->pos.file == o.d->pos.file && d->pos.line == o.d->pos.line &&
             d->pos.column == o.d->pos.column && d->message == o.d->message;
    }
  };
  struct Hash {
    std::size_t operator()(const Key& k) const {
      const std::size_t h = std::hash<std::string>()(k.d->message);
      return h ^ (std::hash<const std::string*>()(&k.d->pos.file.str()) + 0x9e3779b97f4a7c15ULL + (h << 6) +
                  static_cast<std::size_t>(k.d->pos.line) * 31 + static_cast<std::size_t>(k.d->pos.column));
    }
  };
  if (other.items_.empty()) return;  // Indexing what is here would cost as much as a long list.
  const std::size_t before = items_.size();
  items_.reserve(before + other.items_.size());  // Keys point into items_: no reallocation below.
  std::unordered_set<Key, Hash> seen;
  seen.reserve(before + other.items_.size());
  for (std::size_t i = 0; i < before; ++i) seen.insert(Key{&items_[i]});
  for (const auto& d : other.items_) {
    if (seen.count(Key{&d}) != 0) continue;
    errors_ += d.severity == Severity::kError ? 1 : 0;
    items_.push_back(d);
    seen.insert(Key{&items_.back()});
  }
}

std::string Diagnostics::Render() const {
  std::string out;
  for (const auto& d : items_) RenderInto(d, out);
  return out;
}

std::string Diagnostics::RenderWarnings() const {
  std::string out;
  std::size_t others = 0;
  for (const auto& d : items_) {
    if (d.severity == Severity::kError) continue;
    if (Shown(d.severity, 0, others++)) RenderInto(d, out);
  }
  if (others > kShownOthers) {
    const std::size_t more = others - kShownOthers;
    out += "and " + std::to_string(more) + (more == 1 ? " more warning\n" : " more warnings\n");
  }
  return out;
}

void Diagnostics::ThrowIfErrors() const& {
  if (has_errors()) throw ConfigError(items_);
}

void Diagnostics::ThrowIfErrors() && {
  if (has_errors()) throw ConfigError(std::move(items_));
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
