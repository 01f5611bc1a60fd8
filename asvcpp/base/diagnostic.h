// Source positions and diagnostics with compiler-style rendering:
//
//   run_configs:12:17: error: unknown field 'network.frame_layer_sise' (did you mean 'frame_layer_size'?)
//      12 | network.frame_layer_sise = 512
//         |         ^
#pragma once

#include <string>
#include <vector>

namespace asv {

/// A position in a text file. line and column are 1-based; column counts bytes. line == 0 means
/// "no position" (the whole file, or the command line).
struct SourcePos {
  std::string file;
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
  /// then the notes, each the same way. Ends with a newline.
  std::string Render() const;
};

/// Collects diagnostics in order of discovery; errors and warnings alike.
class Diagnostics {
 public:
  /// Adds a diagnostic; `source_line` may be left empty.
  Diagnostic& Add(Severity severity, SourcePos pos, std::string message, std::string source_line = {});
  Diagnostic& Error(SourcePos pos, std::string message, std::string source_line = {}) {
    return Add(Severity::kError, std::move(pos), std::move(message), std::move(source_line));
  }
  Diagnostic& Warning(SourcePos pos, std::string message, std::string source_line = {}) {
    return Add(Severity::kWarning, std::move(pos), std::move(message), std::move(source_line));
  }
  void Append(const Diagnostics& other);
  /// Appends the diagnostics of `other` that are not already here (same severity, position and
  /// message): resolving several configs from one file reports a shared problem once.
  void AppendUnique(const Diagnostics& other);

  bool has_errors() const noexcept;
  std::size_t error_count() const noexcept;
  const std::vector<Diagnostic>& all() const noexcept { return items_; }
  bool empty() const noexcept { return items_.empty(); }
  /// All diagnostics rendered one after another.
  std::string Render() const;
  /// Throws ConfigError with every diagnostic when at least one is an error.
  void ThrowIfErrors() const;

 private:
  std::vector<Diagnostic> items_;
};

/// Returns line `line` (1-based) of `text` without its newline; empty if out of range.
std::string LineOf(const std::string& text, int line);

}  // namespace asv
