// Internal to parser/: the Reader, which splits one config file's text into lines, classifies
// them, parses statements from them with the grammar (ParseStatement, parse_state.h) and reports
// every problem, with its file:line:column and source line, into a Diagnostics. reader.cc holds
// its longer members. Not a public header.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "asvcpp/base/diagnostic.h"
#include "asvcpp/base/text.h"
#include "parser/ast.h"
#include "parser/grammar.h"
#include "parser/parse_state.h"

namespace asv::parser::detail {

enum class LineKind { kBlank, kComment, kContent };

// Reads one file's lines and parses statements from them, reporting problems into `diags`.
// `text` must outlive the Reader.
class Reader {
 public:
  Reader(const std::string& text, const std::string& path, Diagnostics& diags);

  /// Reports invalid UTF-8 and, unless `empty_ok`, empty files (nothing but blank lines); false
  /// when the file must not be parsed further.
  bool CheckText(bool empty_ok = false);

  std::size_t size() const noexcept { return lines_.size(); }

  LineKind Kind(std::size_t i) const {
    // The first character text::Trim would keep decides (Trim itself is slower per line).
    for (const char c : View(i)) {
      if (c == ' ' || c == '\t' || c == '\r') continue;
      return c == '#' ? LineKind::kComment : LineKind::kContent;
    }
    return LineKind::kBlank;
  }

  /// A comment line's text without '#' and surrounding spaces.
  std::string CommentText(std::size_t i) const {
    std::string_view c = text::Trim(View(i));
    while (!c.empty() && c[0] == '#') c.remove_prefix(1);
    return std::string(text::Trim(c));
  }

  std::string LineText(std::size_t i) const { return std::string(View(i)); }

  /// Line i as a SourceLine sharing one copy of the file's text (made on first use).
  SourceLine SharedLine(std::size_t i) {
    if (!shared_text_) shared_text_ = std::make_shared<const std::string>(text_);
    return SourceLine(shared_text_, lines_[i].begin, lines_[i].end - lines_[i].begin);
  }

  /// Content lines from line i up to the next blank line or the end: an upper bound of the
  /// statements there.
  std::size_t ContentLinesFrom(std::size_t i) const {
    std::size_t n = 0;
    for (; i < lines_.size(); ++i) {
      const LineKind kind = Kind(i);
      if (kind == LineKind::kBlank) break;
      n += kind == LineKind::kContent ? 1 : 0;
    }
    return n;
  }

  /// Whether line i (from its start) matches a probe rule.
  template <typename Rule>
  bool Probe(std::size_t i) const {
    StatementInput in(text_.data() + lines_[i].begin, text_.data() + text_.size(), path_.c_str());
    return pegtl::parse<Rule>(in);
  }

  /// The config name at the start of line i (for messages about header-like lines).
  std::pair<std::string, int> NameAt(std::size_t i) const {
    std::size_t p = Indent(i);
    const int column = static_cast<int>(p) + 1;
    return {std::string(ConfigNameAt(View(i), p)), column};
  }

  /// Parses the assignment on line i (see Parse) and appends it to `into` (built in place: an
  /// assignment is large to move). Returns its key, a view into the text, or nullopt after an
  /// error.
  std::optional<std::string_view> ParseAssignment(std::size_t& i, std::vector<Assignment>& into);

  /// Parses the header on line i (see Parse); the state holds what was read, even after an error.
  const ParseState& ParseHeader(std::size_t& i, bool& ok);

  /// Skips the statement that starts on line i (brackets and strings balanced, never past a
  /// blank line) and at least up to line `min_next` (1-based line of an error).
  void Skip(std::size_t& i, std::size_t min_next = 0);

  Diagnostic& Error(int line, int column, const std::string& message) {
    return diags_.Error(SourcePos{file_, line, column}, message, View(static_cast<std::size_t>(line) - 1));
  }

  Diagnostic& Warning(const SourcePos& pos, std::string message, std::string_view source_line) {
    return diags_.Warning(pos, std::move(message), source_line);
  }

  /// Whether a diagnostic of `severity` reported now would be shown (Diagnostics::NextShown).
  bool Shown(Severity severity) const noexcept { return diags_.NextShown(severity); }

  const FileName& file() const noexcept { return file_; }

  /// The config a content line would define as a header: its leading name (the grammar's
  /// config_name) when the line is the first content line of a block (`first`) or reads like a
  /// header (header_like: the name is followed by the end of the line, '<' or '#'); empty
  /// otherwise. `parents` gets the names after each '<' that follows. A quick reading of the line
  /// without the grammar: the parse proper has the last word.
  std::string_view HeaderName(std::size_t i, bool first, std::vector<std::string_view>& parents) const;

 private:
  struct Line {
    std::size_t begin;
    std::size_t end;  ///< Excludes "\n" or "\r\n".
  };

  /// Parses statement Rule starting at the first non-blank character of line i; advances i past
  /// it. On a syntax error reports it, skips the bad statement and returns false.
  template <typename Rule>
  bool Parse(std::size_t& i, ParseState& state);

  // The grammar's config_name (a letter or '_', then letters, digits, '_' and '-') at v[p], or
  // empty; advances p past it.
  static std::string_view ConfigNameAt(std::string_view v, std::size_t& p);

  // Offset just past the statement that starts at `p` and its line break (see reader.cc).
  std::size_t SkipStatement(std::size_t p) const;

  // The line that holds byte `offset` of the text: the last one that begins at or before it
  // (0 when there is none).
  std::size_t LineHolding(std::size_t offset) const;

  std::string_view View(std::size_t i) const {
    if (i >= lines_.size()) return {};
    return std::string_view(text_).substr(lines_[i].begin, lines_[i].end - lines_[i].begin);
  }

  std::size_t Indent(std::size_t i) const {
    const std::string_view v = View(i);
    std::size_t n = 0;
    while (n < v.size() && (v[n] == ' ' || v[n] == '\t')) ++n;
    return n;
  }

  const std::string& text_;
  std::string path_;  // Source name of the PEGTL inputs.
  FileName file_;
  Diagnostics& diags_;
  std::vector<Line> lines_;
  std::shared_ptr<const std::string> shared_text_;  // What the SourceLines of this file point into.
  ParseState state_;                                // Reused by every statement.
};

}  // namespace asv::parser::detail
