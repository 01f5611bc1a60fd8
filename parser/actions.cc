// The grammar's semantic actions: they build the Values, type annotations, keys and header names
// of one statement in a ParseState as the PEGTL grammar (grammar.h) matches them, and
// ParseStatement, the one place that runs the grammar with them (parse_state.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "parser/grammar.h"
#include "parser/parse_state.h"
#include "parser/tokens.h"

namespace asv::parser::detail {

namespace g = grammar;

namespace {

// A hash consistent with Value's ==, for the hashable kinds (dict keys).
std::size_t HashKey(const Value& v) {
  std::size_t h = (static_cast<std::size_t>(v.kind()) + 1) * 0x9e3779b97f4a7c15ULL;
  switch (v.kind()) {
    case Value::Kind::kBool: return h ^ std::hash<bool>()(v.as_bool());
    case Value::Kind::kInt: return h ^ std::hash<std::int64_t>()(v.as_int());
    case Value::Kind::kFloat: {
      const double d = v.as_float();
      return h ^ std::hash<double>()(d == 0.0 ? 0.0 : d);  // 0.0 == -0.0
    }
    case Value::Kind::kString: return h ^ std::hash<std::string>()(v.as_string());
    case Value::Kind::kTuple:
      for (const Value& x : v.items()) h = h * 31 + HashKey(x);  // Depth bounded by kMaxNesting.
      return h;
    default: return h;
  }
}

bool IsHashable(const Value& v) {
  if (v.kind() == Value::Kind::kList || v.kind() == Value::Kind::kDict) return false;
  if (v.kind() == Value::Kind::kTuple) {
    return std::all_of(v.items().begin(), v.items().end(), IsHashable);
  }
  return true;
}

}  // namespace

void ParseState::Emit(Value&& v) {
  if (frames.empty()) {
    result = std::move(v);
    return;
  }
  Frame& f = frames.back();
  if (f.kind != Frame::Kind::kDict) {
    values.push_back(std::move(v));
    return;
  }
  if (!f.has_key) {
    if (!IsHashable(v)) Fail(v.pos(), fmt::format("a {} cannot be a dict key (keys must be hashable)", v.KindName()));
    values.push_back(std::move(v));
    f.has_key = true;
    return;
  }
  f.has_key = false;
  // Python keeps the first key's position and the last value of a repeated key. Small dicts are
  // searched linearly; past kIndexFrom entries through a hash index.
  constexpr std::size_t kIndexFrom = 16;
  const std::size_t at = values.size() - 1;  // The new key.
  const Value& key = values[at];
  const auto repeat = [&](std::size_t k) {
    values[k + 1] = std::move(v);
    values.pop_back();
  };
  if (!f.key_index && (at - f.start) / 2 >= kIndexFrom) {
    f.key_index = std::make_unique<std::unordered_multimap<std::size_t, std::size_t>>();
    for (std::size_t k = f.start; k < at; k += 2) f.key_index->emplace(HashKey(values[k]), k);
  }
  if (f.key_index) {
    const std::size_t hash = HashKey(key);
    for (auto [it, end] = f.key_index->equal_range(hash); it != end; ++it) {
      if (values[it->second] == key) return repeat(it->second);
    }
    f.key_index->emplace(hash, at);
  } else {
    for (std::size_t k = f.start; k < at; k += 2) {
      if (values[k] == key) return repeat(k);
    }
  }
  values.push_back(std::move(v));
}

namespace {

// `items` holds the call's argument.
Value Convert(const Frame& call, const std::vector<Value>& items) {
  const Value& x = items.at(0);
  if (call.kind == Frame::Kind::kFloatCall) return Value::Float(x.as_float());
  if (x.kind() == Value::Kind::kInt) return x;
  const double t = std::trunc(x.as_float());
  // 2^63 is exact in double; int64 covers [-2^63, 2^63).
  if (!std::isfinite(t) || t < -9223372036854775808.0 || t >= 9223372036854775808.0) {
    Fail(call.pos, fmt::format("int({}) does not fit in a 64-bit integer", x.Repr()));
  }
  return Value::Int(static_cast<std::int64_t>(t));
}

template <typename Rule>
struct action : pegtl::nothing<Rule> {};

template <>
struct action<g::none_lit> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) { s.Emit(Value::None(), s.Pos(in)); }
};

template <>
struct action<g::true_lit> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) { s.Emit(Value::Bool(true), s.Pos(in)); }
};

template <>
struct action<g::false_lit> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) { s.Emit(Value::Bool(false), s.Pos(in)); }
};

template <>
struct action<g::int_lit> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) {
    const SourcePos pos = s.Pos(in);
    s.Emit(ParseInt(in.string_view(), pos), pos);
  }
};

template <>
struct action<g::float_lit> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) { s.Emit(ParseFloat(in.string_view()), s.Pos(in)); }
};

// `int` or `float` before '(': the call that conv_open opens.
template <Frame::Kind Call>
struct call_keyword {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) {
    s.pending_call = Call;
    s.pending_call_pos = s.Pos(in);
  }
};
template <>
struct action<g::int_kw> : call_keyword<Frame::Kind::kIntCall> {};
template <>
struct action<g::float_kw> : call_keyword<Frame::Kind::kFloatCall> {};

template <>
struct action<g::conv_open> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) { s.Push(s.pending_call, '(', s.Pos(in), s.pending_call_pos); }
};

template <>
struct action<g::conv_close> {
  static void apply0(ParseState& s) {
    const Frame f = s.Pop();
    s.Emit(Convert(f, s.TakeItems(f)), f.pos);
  }
};

template <>
struct action<g::sq_open> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) {
    s.quote_line = static_cast<int>(in.iterator().line);
    s.quote_column = static_cast<int>(in.iterator().column);
  }
};
template <>
struct action<g::dq_open> : action<g::sq_open> {};

template <>
struct action<g::sq_string> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) {
    const SourcePos pos = s.Pos(in);
    s.Emit(Value::String(DecodeString(in.string_view(), pos)), pos);
  }
};
template <>
struct action<g::dq_string> : action<g::sq_string> {};

// An opening bracket of a list, tuple or dict: the container's value is at the bracket.
template <Frame::Kind Kind, char Bracket>
struct open_container {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) { s.Push(Kind, Bracket, s.Pos(in), s.Pos(in)); }
};

template <>
struct action<g::list_open> : open_container<Frame::Kind::kList, '['> {};

template <>
struct action<g::list_close> {
  static void apply0(ParseState& s) {
    const Frame f = s.Pop();
    s.Emit(Value::List(s.TakeItems(f)), f.pos);
  }
};

template <>
struct action<g::paren_open> : open_container<Frame::Kind::kParen, '('> {};

template <>
struct action<g::paren_comma> {
  static void apply0(ParseState& s) { s.frames.back().saw_comma = true; }
};

template <>
struct action<g::paren_close> {
  static void apply0(ParseState& s) {
    const Frame f = s.Pop();
    if (s.values.size() == f.start + 1 && !f.saw_comma) {
      Value x = std::move(s.values.back());
      s.values.pop_back();
      s.Emit(std::move(x));  // `(x)` is x, with x's own position.
    } else {
      s.Emit(Value::Tuple(s.TakeItems(f)), f.pos);
    }
  }
};

template <>
struct action<g::dict_open> : open_container<Frame::Kind::kDict, '{'> {};

template <>
struct action<g::dict_close> {
  static void apply0(ParseState& s) {
    const Frame f = s.Pop();
    s.Emit(Value::Dict(s.TakeEntries(f)), f.pos);
  }
};

template <>
struct action<g::type_name> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) {
    // One level of type_expr recursion per open '['.
    if (s.types.size() >= ParseState::kMaxNesting) ParseState::TooDeep(s.Pos(in));
    std::string name = in.string();
    const auto dot = name.rfind('.');
    if (dot != std::string::npos) name.erase(0, dot + 1);  // typing.List -> List
    s.types.push_back(TypeExpr{std::move(name), {}, s.Pos(in)});
  }
};

template <>
struct action<g::type_ellipsis> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) { s.types.back().args.push_back(TypeExpr{"...", {}, s.Pos(in)}); }
};

template <>
struct action<g::type_expr> {
  static void apply0(ParseState& s) {
    TypeExpr t = std::move(s.types.back());
    s.types.pop_back();
    if (s.types.empty()) {
      s.type_root = std::move(t);
    } else {
      s.types.back().args.push_back(std::move(t));
    }
  }
};

template <>
struct action<g::key> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) {
    s.key = in.string_view();
    s.key_pos = s.Pos(in);
  }
};

template <>
struct action<g::header_name> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) {
    s.header_name = in.string_view();
    s.header_pos = s.Pos(in);
  }
};

template <>
struct action<g::parent_name> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) {
    s.parents.push_back(in.string_view());
    s.parent_pos.push_back(s.Pos(in));
  }
};

}  // namespace

template <typename Rule, typename Input>
bool ParseStatement(Input& in, ParseState& state) {
  const bool matched = pegtl::parse<Rule, action, g::control>(in, state);
  if (!matched && !state.failed) {  // Each statement starts with a must<>: not expected.
    const auto& it = in.iterator();
    state.RecordFailure(static_cast<int>(it.line), static_cast<int>(it.column),
                        [] { return std::string("syntax error"); });
  }
  return !state.failed;
}

template bool ParseStatement<g::assignment>(StatementInput& in, ParseState& state);
template bool ParseStatement<g::header>(StatementInput& in, ParseState& state);
template bool ParseStatement<g::literal>(pegtl::memory_input<>& in, ParseState& state);

}  // namespace asv::parser::detail
