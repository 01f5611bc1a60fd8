// Internal to parser/: the state of one statement's parse (the values, types and names the
// grammar's actions have read so far) and the entry point that runs the grammar with those
// actions (actions.cc). Not a public header.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "asvcpp/base/diagnostic.h"
#include "parser/grammar.h"
#include "parser/value.h"

namespace asv::parser::detail {

namespace pegtl = tao::pegtl;

// A container (or int()/float() call) being read; closed by its closing bracket's action. Its
// elements wait on ParseState::values from index `start` on (a dict's as key, value, key, ...),
// so that every container is built with one allocation of its exact size.
struct Frame {
  enum class Kind { kList, kParen, kDict, kIntCall, kFloatCall };
  Kind kind;
  SourcePos pos;  ///< Position given to the finished value.
  std::size_t start = 0;
  bool has_key = false;  ///< Dict: a key waits for its value at the top of `values`.
  bool saw_comma = false;
  /// Dict of many entries: key hash -> index of the key in `values`, so that finding a repeated
  /// key stays O(1) (a linear search made a 50,000-entry dict take 20 s).
  std::unique_ptr<std::unordered_multimap<std::size_t, std::size_t>> key_index;
};

// State of one statement's parse. A Reader reuses one for every statement of a file (Reset), so
// its vectors keep their capacity.
struct ParseState : grammar::SyntaxContext {
  // The grammar recurses once per level of brackets in a value or a type; bounded so that no
  // input can exhaust the stack (real configs nest a few levels).
  static constexpr std::size_t kMaxNesting = 256;
  FileName file;

  std::vector<Frame> frames;
  std::vector<Value> values;  ///< Elements of the open containers, innermost last.
  std::optional<Value> result;
  Frame::Kind pending_call = Frame::Kind::kIntCall;
  SourcePos pending_call_pos;

  std::string_view key;  ///< Into the text being parsed.
  SourcePos key_pos;
  std::vector<TypeExpr> types;
  std::optional<TypeExpr> type_root;

  std::string_view header_name;  ///< Into the text being parsed.
  SourcePos header_pos;
  std::vector<std::string_view> parents;
  std::vector<SourcePos> parent_pos;

  void Reset() {
    ClearFailure();
    open_brackets.clear();
    quote_line = quote_column = 0;
    frames.clear();
    values.clear();
    result.reset();
    key = {};
    types.clear();
    type_root.reset();
    header_name = {};
    parents.clear();
    parent_pos.clear();
  }

  // From the input's iterator, not in.position(), which copies the source name every call.
  template <typename Input>
  SourcePos Pos(const Input& in) const {
    const auto& it = in.iterator();
    return SourcePos{file, static_cast<int>(it.line), static_cast<int>(it.column)};
  }

  void Push(Frame::Kind kind, char bracket, const SourcePos& open, const SourcePos& value_pos) {
    // Recursion in the grammar follows the nesting; keep it far from the stack limit.
    if (frames.size() >= kMaxNesting) TooDeep(open);
    frames.push_back(Frame{kind, value_pos, values.size(), false, false, nullptr});
    open_brackets.push_back({bracket, open.line, open.column});
  }

  [[noreturn]] static void TooDeep(const SourcePos& pos) {
    throw grammar::SyntaxError(fmt::format("nesting deeper than {} levels", kMaxNesting), pos.line, pos.column);
  }

  Frame Pop() {
    Frame f = std::move(frames.back());
    frames.pop_back();
    open_brackets.pop_back();
    return f;
  }

  // The elements of frame `f` (just popped), moved out of `values`.
  std::vector<Value> TakeItems(const Frame& f) {
    const auto first = values.begin() + static_cast<std::ptrdiff_t>(f.start);
    std::vector<Value> items(std::make_move_iterator(first), std::make_move_iterator(values.end()));
    values.erase(first, values.end());
    return items;
  }

  std::vector<std::pair<Value, Value>> TakeEntries(const Frame& f) {
    std::vector<std::pair<Value, Value>> entries;
    entries.reserve((values.size() - f.start) / 2);
    for (std::size_t k = f.start; k + 1 < values.size(); k += 2) {
      entries.emplace_back(std::move(values[k]), std::move(values[k + 1]));
    }
    values.erase(values.begin() + static_cast<std::ptrdiff_t>(f.start), values.end());
    return entries;
  }

  void Emit(Value v, const SourcePos& pos) {
    v.set_pos(pos);
    Emit(std::move(v));
  }

  // Hands a finished value to the innermost open container, or makes it the result. In a dict,
  // a key must be hashable and a repeated key keeps its first position and the last value
  // (actions.cc).
  void Emit(Value&& v);
};

/// Input over a file's text, from the first character of a statement to the end of the file; its
/// source name is not copied per statement.
using StatementInput = pegtl::memory_input<pegtl::tracking_mode::eager, pegtl::eol::lf_crlf, const char*>;

/// Parses one statement of `Rule` from `in` into `state` (which the caller has Reset, choosing
/// want_message) with the grammar's actions and error control. Returns false after an error,
/// which `state` then holds (SyntaxContext: position, where to resume, message); throws nothing
/// for any input. Defined in actions.cc for the three statements only: grammar::assignment and
/// grammar::header over a StatementInput, grammar::literal over a pegtl::memory_input<>.
template <typename Rule, typename Input>
bool ParseStatement(Input& in, ParseState& state);

extern template bool ParseStatement<grammar::assignment>(StatementInput& in, ParseState& state);
extern template bool ParseStatement<grammar::header>(StatementInput& in, ParseState& state);
extern template bool ParseStatement<grammar::literal>(pegtl::memory_input<>& in, ParseState& state);

}  // namespace asv::parser::detail
