// The Reader's longer members (reader.h): splitting a file into lines, the UTF-8 and empty-file
// checks, parsing one statement and recovering after a syntax error (skipping the rest of the
// statement without the grammar), and the quick reading of header lines that
// ParseRunConfigsFor's scan uses.
#include "parser/reader.h"

#include <fmt/format.h>

#include <algorithm>

namespace asv::parser::detail {

namespace g = grammar;

namespace {

// The line (0-based) at which a statement's parse stopped: where the next statement starts.
std::size_t NextLine(const StatementInput& in, std::size_t line_count) {
  if (in.empty()) return line_count;
  return in.iterator().line - 1;
}

}  // namespace

Reader::Reader(const std::string& text, const std::string& path, Diagnostics& diags)
    : text_(text), path_(path), file_(path), diags_(diags) {
  lines_.reserve(text_.size() / 32 + 1);  // A guess (lines of config files are short); saves regrowth.
  std::size_t start = 0;
  if (text_.compare(0, 3, "\xEF\xBB\xBF") == 0) start = 3;  // A UTF-8 byte order mark is skipped.
  while (start < text_.size()) {
    const std::size_t nl = text_.find('\n', start);
    std::size_t end = nl == std::string::npos ? text_.size() : nl;
    if (end > start && text_[end - 1] == '\r') --end;
    lines_.push_back({start, end});
    start = nl == std::string::npos ? text_.size() : nl + 1;
  }
}

bool Reader::CheckText(bool empty_ok) {
  if (const auto bad = text::FindInvalidUtf8(text_)) {
    const std::size_t i = LineHolding(*bad);
    const std::size_t begin = lines_.empty() ? 0 : lines_[i].begin;
    std::string line = LineText(i);
    // Show the line with its bad bytes replaced so the report itself is valid UTF-8.
    for (std::size_t from = 0; from < line.size();) {
      const auto rel = text::FindInvalidUtf8(std::string_view(line).substr(from));
      if (!rel) break;
      line[from + *rel] = '?';
      from += *rel + 1;
    }
    diags_.Error(SourcePos{file_, static_cast<int>(i) + 1, static_cast<int>(*bad - begin) + 1},
                 fmt::format("invalid UTF-8 byte 0x{:02X}; config files must be UTF-8 text",
                             static_cast<unsigned char>(text_[*bad])),
                 line);
    return false;
  }
  if (empty_ok) return true;
  const bool empty = std::all_of(lines_.begin(), lines_.end(), [&](const Line& l) {
    return text::Trim(std::string_view(text_).substr(l.begin, l.end - l.begin)).empty();
  });
  if (empty) {
    diags_.Error(SourcePos{file_, 0, 0}, "file is empty");
    return false;
  }
  return true;
}

template <typename Rule>
bool Reader::Parse(std::size_t& i, ParseState& state) {
  state.Reset();
  state.file = file_;
  // Past the errors a ConfigError shows, an error only needs counting and its statement skipping.
  const bool shown = diags_.NextShown();
  state.want_message = shown;
  const std::size_t offset = lines_[i].begin + Indent(i);
  StatementInput in(text_.data() + offset, text_.data() + text_.size(), path_.c_str(), offset, i + 1, Indent(i) + 1);
  if (ParseStatement<Rule>(in, state)) {
    i = NextLine(in, lines_.size());
    return true;
  }
  // Unshown: no message was built (and the diagnostics keep no source line).
  Error(state.line, state.column, shown ? state.message : std::string("syntax error"));
  if (state.resume_line > 0) {
    i = static_cast<std::size_t>(state.resume_line) - 1;
  } else {
    Skip(i, static_cast<std::size_t>(state.line));
  }
  return false;
}

std::optional<std::string_view> Reader::ParseAssignment(std::size_t& i, std::vector<Assignment>& into) {
  const std::size_t first = i;
  if (!Parse<g::assignment>(i, state_)) return std::nullopt;
  into.push_back(Assignment{std::string(state_.key), std::move(state_.type_root), std::move(*state_.result),
                            state_.key_pos, SharedLine(first)});
  return state_.key;
}

const ParseState& Reader::ParseHeader(std::size_t& i, bool& ok) {
  ok = Parse<g::header>(i, state_);
  return state_;
}

void Reader::Skip(std::size_t& i, std::size_t min_next) {
  const std::size_t end = SkipStatement(lines_[i].begin);
  // The line that holds `end` (the file's end is past the last line).
  const std::size_t next = end >= text_.size() ? lines_.size() : LineHolding(end);
  i = std::min(std::max({next, i + 1, min_next}), lines_.size());
}

std::string_view Reader::HeaderName(std::size_t i, bool first, std::vector<std::string_view>& parents) const {
  const std::string_view v = View(i);
  std::size_t p = Indent(i);
  const auto skip_spaces = [&] {
    while (p < v.size() && (v[p] == ' ' || v[p] == '\t')) ++p;
  };
  const std::string_view name = ConfigNameAt(v, p);
  if (name.empty()) return {};
  skip_spaces();
  if (!first && p < v.size() && v[p] != '<' && v[p] != '#') return {};
  parents.clear();
  while (p < v.size() && v[p] == '<') {
    ++p;
    skip_spaces();
    const std::string_view parent = ConfigNameAt(v, p);
    if (parent.empty()) break;
    parents.push_back(parent);
    skip_spaces();
  }
  return name;
}

std::string_view Reader::ConfigNameAt(std::string_view v, std::size_t& p) {
  const auto ident = [](char c, bool leading) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!leading && ((c >= '0' && c <= '9') || c == '-'));
  };
  if (p >= v.size() || !ident(v[p], true)) return {};
  const std::size_t begin = p++;
  while (p < v.size() && ident(v[p], false)) ++p;
  return v.substr(begin, p - begin);
}

// Offset just past the statement that starts at `p` and its line break: the rest of the line,
// and while brackets are open the lines that follow, up to a blank line. Brackets (any closer
// closes the innermost), strings and comments are skipped whole, as the grammar reads them. A
// loop with a depth counter, not a recursive rule: the nesting of broken input is unbounded.
std::size_t Reader::SkipStatement(std::size_t p) const {
  const std::string_view t(text_);
  const auto eol_at = [&](std::size_t q) -> std::size_t {  // Length of the line break at q, or 0.
    if (q < t.size() && t[q] == '\n') return 1;
    if (q + 1 < t.size() && t[q] == '\r' && t[q + 1] == '\n') return 2;
    return 0;
  };
  std::size_t depth = 0;
  while (p < t.size()) {
    const char c = t[p];
    if (const std::size_t eol = eol_at(p)) {
      if (depth == 0) break;
      std::size_t q = p + eol;
      while (q < t.size() && (t[q] == ' ' || t[q] == '\t')) ++q;
      if (q == t.size() || eol_at(q) != 0) break;  // A blank line ends every open bracket.
      p += eol;
    } else if (c == '#') {
      while (p < t.size() && eol_at(p) == 0) ++p;
    } else if (c == '\'' || c == '"') {
      for (++p; p < t.size();) {
        const char d = t[p];
        if (d == '\\' && p + 1 < t.size() && t[p + 1] != '\r' && t[p + 1] != '\n') {
          p += 2;
        } else if (d == c) {
          ++p;
          break;
        } else if (d == '\\' || d == '\r' || d == '\n') {
          break;
        } else {
          ++p;
        }
      }
    } else {
      if (c == '(' || c == '[' || c == '{') ++depth;
      if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
      ++p;
    }
  }
  return p + eol_at(p);
}

std::size_t Reader::LineHolding(std::size_t offset) const {
  const auto after =
      std::upper_bound(lines_.begin(), lines_.end(), offset, [](std::size_t p, const Line& l) { return p < l.begin; });
  return after == lines_.begin() ? 0 : static_cast<std::size_t>(after - lines_.begin()) - 1;
}

}  // namespace asv::parser::detail
