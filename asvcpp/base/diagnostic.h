// Source positions and diagnostics with compiler-style rendering:
//
//   run_configs:12:17: error: unknown field 'network.frame_layer_sise' (did you mean 'frame_layer_size'?)
//      12 | network.frame_layer_sise = 512
//         |         ^
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace asv {

/// The name of a source (a file path, or an origin such as "--set network.max_epochs"), interned:
/// every FileName with the same text points at one process-wide copy that is never freed, so
/// copying, moving and comparing names costs a pointer. A parser stamps a position on every token;
/// with a plain std::string each of them allocated a copy of the path.
/// Constructing one from text takes a lock and a hash lookup (thread-safe); the few distinct names
/// a process reads stay in memory until it exits.
class FileName {
 public:
  FileName() noexcept = default;  ///< The empty name.
  FileName(std::string_view name);  // NOLINT(google-explicit-constructor): SourcePos{path, line, column}.
  FileName(const std::string& name) : FileName(std::string_view(name)) {}  // NOLINT(google-explicit-constructor)
  FileName(const char* name) : FileName(std::string_view(name)) {}         // NOLINT(google-explicit-constructor)

  const std::string& str() const noexcept { return name_ != nullptr ? *name_ : Empty(); }
  /// Reads as the path wherever a `const std::string&` is expected.
  operator const std::string&() const noexcept { return str(); }  // NOLINT(google-explicit-constructor)
  bool empty() const noexcept { return str().empty(); }

  /// Same text (interning makes this a pointer comparison).
  friend bool operator==(const FileName& a, const FileName& b) noexcept { return a.name_ == b.name_; }
  friend bool operator!=(const FileName& a, const FileName& b) noexcept { return !(a == b); }

 private:
  static const std::string& Empty() noexcept;

  const std::string* name_ = nullptr;  // Into the intern pool; nullptr is "".
};

/// A position in a text file. line and column are 1-based; column counts bytes. line == 0 means
/// "no position" (the whole file, or the command line). Copying one is cheap (no allocation).
struct SourcePos {
  FileName file;
  int line = 0;
  int column = 0;

  bool has_line() const noexcept { return line > 0; }
  /// "file:line:column", "file:line", or "file" depending on what is known.
  std::string ToString() const;
};

enum class Severity { kError, kWarning, kNote };

/// One problem found in an input, with enough context to print it without the file at hand.
struct Diagnostic {
  Severity severity = Severity::kError;
  SourcePos pos;
  std::string message;
  std::string source_line;  ///< Text of line pos.line (without newline); empty if unknown.
  std::vector<Diagnostic> notes;  ///< Related positions ("first defined here").

  /// Renders "file:line:col: error: message", then the source line and a caret under the column,
  /// then the notes, each the same way. Ends with a newline. A source line longer than 120 bytes
  /// is shown as 120 bytes around the caret, with "..." where text is left out.
  std::string Render() const;
};

/// Collects diagnostics in order of discovery; errors and warnings alike.
///
/// A ConfigError shows the first kShownErrors errors in full, and of the warnings and notes
/// before the last of them the first kShownOthers, then only counts the rest. A diagnostic added
/// when it can no longer be shown (NextShown is false) is kept without its source line: a file of
/// 100,000 bad lines stores 100,000 short records, not 100,000 copies of its lines. A caller that
/// builds a costly message or note may ask NextShown first and keep it short.
class Diagnostics {
 public:
  static constexpr std::size_t kShownErrors = 50;
  static constexpr std::size_t kShownOthers = 50;

  /// Adds a diagnostic; `source_line` may be left empty. It is copied only when the diagnostic
  /// can be shown (NextShown).
  Diagnostic& Add(Severity severity, SourcePos pos, std::string message, std::string_view source_line = {});
  Diagnostic& Error(SourcePos pos, std::string message, std::string_view source_line = {}) {
    return Add(Severity::kError, std::move(pos), std::move(message), source_line);
  }
  Diagnostic& Warning(SourcePos pos, std::string message, std::string_view source_line = {}) {
    return Add(Severity::kWarning, std::move(pos), std::move(message), source_line);
  }
  void Append(const Diagnostics& other);
  /// Appends the diagnostics of `other` that are not already here (same severity, position and
  /// message): resolving several configs from one file reports a shared problem once. Linear
  /// expected time in both lists (a hash set).
  void AppendUnique(const Diagnostics& other);

  bool has_errors() const noexcept { return errors_ > 0; }
  /// The errors among all(); constant time.
  std::size_t error_count() const noexcept { return errors_; }

  /// Whether a diagnostic of `severity` added now would be shown in full by a ConfigError of
  /// these diagnostics, or of a list they are appended to (appending puts diagnostics before
  /// them, never after): fewer than kShownErrors errors so far and, for a warning or note, fewer
  /// than kShownOthers of those. Constant time.
  bool NextShown(Severity severity = Severity::kError) const noexcept {
    return Shown(severity, errors_, items_.size() - errors_);
  }
  /// The rule of NextShown and of ConfigError's message: a diagnostic of `severity` that comes
  /// after `errors_before` errors and `others_before` warnings and notes is shown in full.
  static bool Shown(Severity severity, std::size_t errors_before, std::size_t others_before) noexcept {
    return errors_before < kShownErrors && (severity == Severity::kError || others_before < kShownOthers);
  }

  const std::vector<Diagnostic>& all() const noexcept { return items_; }
  bool empty() const noexcept { return items_.empty(); }
  /// All diagnostics rendered one after another.
  std::string Render() const;
  /// The warnings and notes (not the errors) rendered, the first kShownOthers of them, then
  /// "and N more warnings" when there are more.
  std::string RenderWarnings() const;
  /// Throws ConfigError with every diagnostic when at least one is an error; the rvalue form
  /// moves them into it instead of copying.
  void ThrowIfErrors() const&;
  void ThrowIfErrors() &&;

 private:
  std::vector<Diagnostic> items_;
  std::size_t errors_ = 0;
};

/// Returns line `line` (1-based) of `text` without its newline; empty if out of range.
std::string LineOf(const std::string& text, int line);

}  // namespace asv
