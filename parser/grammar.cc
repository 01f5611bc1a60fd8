#include "parser/grammar.h"

#include <fmt/format.h>

#include <cctype>

namespace asv::parser::grammar {

namespace {

char Closer(char bracket) {
  switch (bracket) {
    case '[': return ']';
    case '{': return '}';
    default: return ')';
  }
}

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

// Names users write for Python's constants in other languages' spelling.
const char* PythonConstantFor(const std::string& name) {
  if (name == "true") return "True";
  if (name == "false") return "False";
  if (name == "none" || name == "null" || name == "NULL" || name == "nil") return "None";
  return nullptr;
}

}  // namespace

void RecordSyntaxError(const char* message, ErrorKind kind, int line, int column, const char* current, const char* end,
                       SyntaxContext& context) {
  if (kind == ErrorKind::kUnterminatedString) {
    context.RecordFailure(context.quote_line, context.quote_column, [&] { return std::string(message); });
    return;
  }

  // A failure at the end of a line while a bracket is open means the value ran into a blank line
  // or the end of the file (inside brackets, line breaks before other lines are skipped).
  if (!context.open_brackets.empty()) {
    const char* p = current;
    while (p != end && IsSpace(*p)) ++p;
    const bool at_eof = p == end;
    const bool at_eol = !at_eof && (*p == '\n' || (*p == '\r' && p + 1 != end && p[1] == '\n'));
    if (at_eof || at_eol) {
      const auto open = context.open_brackets.back();
      context.RecordFailure(open.line, open.column, [&] {
        bool rest_empty = true;
        for (const char* q = p; q != end; ++q) {
          if (!IsSpace(*q) && *q != '\r' && *q != '\n') {
            rest_empty = false;
            break;
          }
        }
        const std::string where =
            rest_empty ? std::string("the end of the file") : fmt::format("the blank line on line {}", line + 1);
        return fmt::format("unterminated '{}' (no closing '{}' before {})", open.bracket, Closer(open.bracket), where);
      });
      return;
    }
  }

  // A failure on a later line that reads like the next assignment: the bracket was never closed
  // (Python would have joined the lines). Parsing goes on at that assignment.
  if (!context.open_brackets.empty() && line > context.open_brackets.back().line) {
    const char* line_start = current - (column - 1);
    memory_input<> probe(line_start, end, "");
    if (parse<assignment_like>(probe)) {
      const auto open = context.open_brackets.back();
      context.RecordFailure(
          open.line, open.column,
          [&] {
            return fmt::format("unterminated '{}' (no closing '{}' before the assignment on line {})", open.bracket,
                               Closer(open.bracket), line);
          },
          line);
      return;
    }
  }

  if (kind == ErrorKind::kBareName) {
    context.RecordFailure(line, column, [&] {
      std::string name;
      for (const char* p = current; p != end && (std::isalnum(static_cast<unsigned char>(*p)) || *p == '_'); ++p) {
        name += *p;
      }
      std::string text = message;
      const auto slot = text.find("{}");
      if (slot != std::string::npos) text.replace(slot, 2, name);
      if (const char* constant = PythonConstantFor(name)) text += fmt::format(" (did you mean '{}'?)", constant);
      return text;
    });
    return;
  }

  context.RecordFailure(line, column, [&] { return std::string(message); });
}

}  // namespace asv::parser::grammar
