#include "parser/parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "asvcpp/base/fs.h"
#include "asvcpp/base/text.h"
#include "parser/grammar.h"

namespace asv::parser {

namespace {

namespace pegtl = tao::pegtl;
namespace g = grammar;

// ---- Parser state and semantic actions ---------------------------------------------------------

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
struct ParseState : g::SyntaxContext {
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
    throw g::SyntaxError(fmt::format("nesting deeper than {} levels", kMaxNesting), pos.line, pos.column);
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

  void Emit(Value&& v);
};

[[noreturn]] void Fail(const SourcePos& pos, const std::string& message) {
  throw g::SyntaxError(message, pos.line, pos.column);
}

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

void AppendUtf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes a string token (prefix and quotes included) with Python's escape rules. `pos` is the
// token's position; strings never span lines, so an escape's column is pos.column + its offset.
std::string DecodeString(std::string_view token, const SourcePos& pos) {
  const bool raw = token[0] == 'r' || token[0] == 'R';
  const std::size_t start = raw ? 2 : 1;
  const std::string_view body = token.substr(start, token.size() - start - 1);
  if (raw) return std::string(body);  // Backslashes stay, even before a quote (as in Python).
  if (body.find('\\') == std::string_view::npos) return std::string(body);
  std::string out;
  out.reserve(body.size());
  for (std::size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\') {
      out += body[i];
      continue;
    }
    const SourcePos at{pos.file, pos.line, pos.column + static_cast<int>(start + i)};
    const char c = body[i + 1];  // The grammar guarantees a character after a backslash.
    switch (c) {
      case '\\': out += '\\'; ++i; continue;
      case '\'': out += '\''; ++i; continue;
      case '"': out += '"'; ++i; continue;
      case 'n': out += '\n'; ++i; continue;
      case 't': out += '\t'; ++i; continue;
      case 'r': out += '\r'; ++i; continue;
      case 'a': out += '\a'; ++i; continue;
      case 'b': out += '\b'; ++i; continue;
      case 'f': out += '\f'; ++i; continue;
      case 'v': out += '\v'; ++i; continue;
      case 'N': Fail(at, "\\N{...} escapes are not supported; write the character itself or use \\u");
      default: break;
    }
    if (c >= '0' && c <= '7') {
      std::uint32_t cp = 0;
      std::size_t n = 0;
      while (n < 3 && i + 1 + n < body.size() && body[i + 1 + n] >= '0' && body[i + 1 + n] <= '7') {
        cp = cp * 8 + static_cast<std::uint32_t>(body[i + 1 + n] - '0');
        ++n;
      }
      AppendUtf8(out, cp);
      i += n;
      continue;
    }
    if (c == 'x' || c == 'u' || c == 'U') {
      const std::size_t want = c == 'x' ? 2 : c == 'u' ? 4 : 8;
      std::uint32_t cp = 0;
      for (std::size_t k = 0; k < want; ++k) {
        const std::size_t j = i + 2 + k;
        const int d = j < body.size() ? HexDigit(body[j]) : -1;
        if (d < 0) Fail(at, fmt::format("truncated \\{} escape: it needs {} hex digits", c, want));
        cp = cp * 16 + static_cast<std::uint32_t>(d);
      }
      if (cp > 0x10FFFF) Fail(at, fmt::format("\\{} escape is not a Unicode code point (above U+10FFFF)", c));
      if (cp >= 0xD800 && cp <= 0xDFFF) Fail(at, "surrogate code points cannot be stored in UTF-8 text");
      AppendUtf8(out, cp);
      i += 1 + want;
      continue;
    }
    out += '\\';  // Unknown escape: Python keeps the backslash; the character follows as is.
  }
  return out;
}

std::string WithoutSeparators(std::string_view token) {
  std::string s;
  for (char c : token) {
    if (c != '_' && c != ' ' && c != '\t') s += c;
  }
  return s;
}

Value ParseInt(std::string_view token, const SourcePos& pos) {
  std::string s = WithoutSeparators(token);
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.erase(0, 1);
  }
  int base = 10;
  if (s.size() > 1 && s[0] == '0' && std::isalpha(static_cast<unsigned char>(s[1]))) {
    const char b = static_cast<char>(std::tolower(static_cast<unsigned char>(s[1])));
    base = b == 'x' ? 16 : b == 'o' ? 8 : 2;
    s.erase(0, 2);
  }
  const std::uint64_t limit = negative ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
  std::uint64_t magnitude = 0;
  for (char c : s) {
    const auto d = static_cast<std::uint64_t>(HexDigit(c));
    if (magnitude > (limit - d) / static_cast<std::uint64_t>(base)) {
      Fail(pos, fmt::format("integer {} does not fit in 64 bits", token));
    }
    magnitude = magnitude * static_cast<std::uint64_t>(base) + d;
  }
  if (negative) return Value::Int(magnitude == (std::uint64_t{1} << 63) ? std::numeric_limits<std::int64_t>::min()
                                                                      : -static_cast<std::int64_t>(magnitude));
  return Value::Int(static_cast<std::int64_t>(magnitude));
}

Value ParseFloat(std::string_view token) {
  std::string s = WithoutSeparators(token);
  if (s[0] == '+') s.erase(0, 1);
  double d = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  (void)end;
  if (ec == std::errc::result_out_of_range) {
    // Python gives inf on overflow and 0.0 on underflow; tell them apart by the decimal exponent.
    const bool negative = s[0] == '-';
    const auto e_pos = s.find_first_of("eE");
    const std::string mantissa = s.substr(negative ? 1 : 0, e_pos == std::string::npos ? std::string::npos
                                                                                      : e_pos - (negative ? 1 : 0));
    long exponent = e_pos == std::string::npos ? 0 : std::strtol(s.c_str() + e_pos + 1, nullptr, 10);
    const auto dot = mantissa.find('.');
    const std::string int_part = mantissa.substr(0, dot);
    const auto first_nonzero = int_part.find_first_not_of('0');
    if (first_nonzero != std::string::npos) exponent += static_cast<long>(int_part.size() - first_nonzero);
    d = exponent > 0 ? std::numeric_limits<double>::infinity() : 0.0;
    if (negative) d = -d;
  }
  return Value::Float(d);
}

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

template <>
struct action<g::int_kw> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) {
    s.pending_call = Frame::Kind::kIntCall;
    s.pending_call_pos = s.Pos(in);
  }
};

template <>
struct action<g::float_kw> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) {
    s.pending_call = Frame::Kind::kFloatCall;
    s.pending_call_pos = s.Pos(in);
  }
};

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

template <>
struct action<g::list_open> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) { s.Push(Frame::Kind::kList, '[', s.Pos(in), s.Pos(in)); }
};

template <>
struct action<g::list_close> {
  static void apply0(ParseState& s) {
    const Frame f = s.Pop();
    s.Emit(Value::List(s.TakeItems(f)), f.pos);
  }
};

template <>
struct action<g::paren_open> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) { s.Push(Frame::Kind::kParen, '(', s.Pos(in), s.Pos(in)); }
};

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
struct action<g::dict_open> {
  template <typename Input>
  static void apply(const Input& in, ParseState& s) { s.Push(Frame::Kind::kDict, '{', s.Pos(in), s.Pos(in)); }
};

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

// ---- Line-oriented driver ----------------------------------------------------------------------

enum class LineKind { kBlank, kComment, kContent };

// Input over a file's text; its source name is not copied per statement.
using Input = pegtl::memory_input<pegtl::tracking_mode::eager, pegtl::eol::lf_crlf, const char*>;

// Reads one file's lines and parses statements from them, reporting problems into `diags`.
class Reader {
 public:
  Reader(const std::string& text, const std::string& path, Diagnostics& diags)
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

  /// Reports invalid UTF-8 and, unless `empty_ok`, empty files (nothing but blank lines); false
  /// when the file must not be parsed further.
  bool CheckText(bool empty_ok = false) {
    if (const auto bad = text::FindInvalidUtf8(text_)) {
      std::size_t i = 0;
      while (i + 1 < lines_.size() && lines_[i + 1].begin <= *bad) ++i;
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
    Input in(text_.data() + lines_[i].begin, text_.data() + text_.size(), path_.c_str());
    return pegtl::parse<Rule>(in);
  }

  /// The config name at the start of line i (for messages about header-like lines).
  std::pair<std::string, int> NameAt(std::size_t i) const {
    std::size_t p = Indent(i);
    const int column = static_cast<int>(p) + 1;
    return {std::string(ConfigNameAt(View(i), p)), column};
  }

  /// Parses statement Rule starting at the first non-blank character of line i; advances i past
  /// it. On a syntax error reports it, skips the bad statement and returns false.
  template <typename Rule>
  bool Parse(std::size_t& i, ParseState& state) {
    state.Reset();
    state.file = file_;
    const std::size_t offset = lines_[i].begin + Indent(i);
    Input in(text_.data() + offset, text_.data() + text_.size(), path_.c_str(), offset, i + 1,
                             Indent(i) + 1);
    try {
      pegtl::parse<Rule, action, g::control>(in, state);
      i = NextLine(in);
      return true;
    } catch (const g::SyntaxError& e) {
      Error(e.line(), e.column(), e.what());
      if (e.resume_line() > 0) {
        i = static_cast<std::size_t>(e.resume_line()) - 1;
      } else {
        Skip(i, static_cast<std::size_t>(e.line()));
      }
      return false;
    }
  }

  /// Parses the assignment on line i (see Parse) and appends it to `into` (built in place: an
  /// assignment is large to move). Returns its key, a view into the text, or nullopt after an
  /// error.
  std::optional<std::string_view> ParseAssignment(std::size_t& i, std::vector<Assignment>& into) {
    const std::size_t first = i;
    if (!Parse<g::assignment>(i, state_)) return std::nullopt;
    into.push_back(Assignment{std::string(state_.key), std::move(state_.type_root), std::move(*state_.result),
                              state_.key_pos, SharedLine(first)});
    return state_.key;
  }

  /// Parses the header on line i (see Parse); the state holds what was read, even after an error.
  const ParseState& ParseHeader(std::size_t& i, bool& ok) {
    ok = Parse<g::header>(i, state_);
    return state_;
  }

  /// Skips the statement that starts on line i (brackets and strings balanced, never past a
  /// blank line) and at least up to line `min_next` (1-based line of an error).
  void Skip(std::size_t& i, std::size_t min_next = 0) {
    const std::size_t end = SkipStatement(lines_[i].begin);
    // The line that holds `end` (the file's end is past the last line).
    const auto next = end >= text_.size() ? lines_.size()
                                          : static_cast<std::size_t>(
                                                std::upper_bound(lines_.begin(), lines_.end(), end,
                                                                 [](std::size_t p, const Line& l) { return p < l.begin; }) -
                                                lines_.begin()) - 1;
    i = std::min(std::max({next, i + 1, min_next}), lines_.size());
  }

  Diagnostic& Error(int line, int column, const std::string& message) {
    return diags_.Error(SourcePos{file_, line, column}, message, LineText(static_cast<std::size_t>(line) - 1));
  }

  Diagnostic& Warning(const SourcePos& pos, const std::string& message, const std::string& source_line) {
    return diags_.Warning(pos, message, source_line);
  }

  const FileName& file() const noexcept { return file_; }

  /// The config a content line would define as a header: its leading name (the grammar's
  /// config_name) when the line is the first content line of a block (`first`) or reads like a
  /// header (header_like: the name is followed by the end of the line, '<' or '#'); empty
  /// otherwise. `parents` gets the names after each '<' that follows. A quick reading of the line
  /// without the grammar: the parse proper has the last word.
  std::string_view HeaderName(std::size_t i, bool first, std::vector<std::string_view>& parents) const {
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

 private:
  // The grammar's config_name (a letter or '_', then letters, digits, '_' and '-') at v[p], or
  // empty; advances p past it.
  static std::string_view ConfigNameAt(std::string_view v, std::size_t& p) {
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
  std::size_t SkipStatement(std::size_t p) const {
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

  struct Line {
    std::size_t begin;
    std::size_t end;  ///< Excludes "\n" or "\r\n".
  };

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

  template <typename Input>
  std::size_t NextLine(const Input& in) const {
    if (in.empty()) return lines_.size();
    return in.iterator().line - 1;
  }

  const std::string& text_;
  std::string path_;  // Source name of the PEGTL inputs.
  FileName file_;
  Diagnostics& diags_;
  std::vector<Line> lines_;
  std::shared_ptr<const std::string> shared_text_;  // What the SourceLines of this file point into.
  ParseState state_;                                // Reused by every statement.
};

// Assignments of one block (or of the init config) by key, to warn about a key set twice. Keys
// are views into the file text. Blocks are usually small and searched linearly; past kSmall keys
// a hash index takes over, so a huge block stays linear in its size.
class KeyIndex {
 public:
  void Clear() {
    small_.clear();
    large_.clear();
  }

  /// Records assignment `index` as the latest of `key`; returns the index of the one it
  /// replaces, or npos.
  std::size_t Set(std::string_view key, std::size_t index) {
    if (large_.empty()) {
      for (auto& [k, v] : small_) {
        if (k == key) return std::exchange(v, index);
      }
      if (small_.size() < kSmall) {
        small_.emplace_back(key, index);
        return std::string::npos;
      }
      large_.insert(small_.begin(), small_.end());
      small_.clear();
    }
    const auto [it, added] = large_.emplace(key, index);
    return added ? std::string::npos : std::exchange(it->second, index);
  }

 private:
  static constexpr std::size_t kSmall = 32;
  std::vector<std::pair<std::string_view, std::size_t>> small_;
  std::unordered_map<std::string_view, std::size_t> large_;
};

// Warns about a key set twice in one block (or in the init config); the later value wins.
void WarnRepeatedKey(Reader& reader, const Assignment& earlier, const Assignment& later, const std::string& where) {
  auto& w = reader.Warning(later.pos,
                           fmt::format("'{}' is set twice {}; this value replaces the one on line {}", later.key,
                                       where, earlier.pos.line),
                           later.source_line.str());
  w.notes.push_back(Diagnostic{Severity::kNote, earlier.pos, "previous value set here", earlier.source_line.str(), {}});
}

std::string JoinComments(const std::vector<std::string>& comments) {
  std::string out;
  for (const auto& c : comments) {
    if (c.empty()) continue;
    if (!out.empty()) out += ' ';
    out += c;
  }
  return out;
}

}  // namespace

namespace {

// Parses lines [begin, end) of a run-configs file into blocks appended to `file`. `begin` must be
// the first line of the file or follow a blank line, and `end` be a blank line or the end of the
// file: statements never cross a blank line, so the lines in between parse the same whether the
// rest of the file is read or not. Returns whether a content line was seen.
bool ParseBlocks(Reader& reader, RunConfigsFile& file, std::size_t begin, std::size_t end) {
  enum class State { kBetween, kInBlock, kHeaderless } state = State::kBetween;
  std::vector<std::string> comments;  // Comment lines since the last other line.
  KeyIndex keys;                      // Current block.
  std::vector<Assignment> outside;    // An assignment that belongs to no config.
  bool saw_content = false;

  auto start_block = [&](std::size_t& i) {
    const std::size_t first = i;
    bool ok = false;
    const ParseState& st = reader.ParseHeader(i, ok);
    if (st.header_name.empty()) {
      state = State::kHeaderless;
      return;
    }
    // After a header error the name is still defined, so its children do not report it missing.
    (void)ok;
    Block& block = file.blocks.emplace_back();
    block.name = std::string(st.header_name);
    block.parents.assign(st.parents.begin(), st.parents.end());
    block.parent_pos = st.parent_pos;
    block.assignments.reserve(reader.ContentLinesFrom(i));
    block.comment = JoinComments(comments);
    block.pos = st.header_pos;
    block.source_line = reader.SharedLine(first);
    keys.Clear();
    state = State::kInBlock;
  };

  std::size_t i = begin;
  while (i < end) {
    switch (reader.Kind(i)) {
      case LineKind::kBlank:
        state = State::kBetween;
        comments.clear();
        ++i;
        continue;
      case LineKind::kComment:
        comments.push_back(reader.CommentText(i));
        ++i;
        continue;
      case LineKind::kContent:
        break;
    }
    saw_content = true;
    if (state == State::kBetween) {
      if (reader.Probe<g::assignment_like>(i)) {
        const auto [name, column] = reader.NameAt(i);
        reader.Error(static_cast<int>(i) + 1, column,
                     file.blocks.empty()
                         ? "expected a config header ('name' or 'name < parent < ...') before the first assignment"
                         : "expected a config header ('name' or 'name < parent < ...'), found an assignment; "
                           "a blank line ends a config, so this line belongs to none");
        reader.Skip(i);
        state = State::kHeaderless;
      } else {
        start_block(i);
      }
    } else if (reader.Probe<g::header_like>(i)) {
      const auto [name, column] = reader.NameAt(i);
      reader.Error(static_cast<int>(i) + 1, column,
                   fmt::format("expected an assignment 'group.field = value', found what looks like the header "
                               "of config '{}'; is a blank line missing before it?",
                               name));
      start_block(i);
    } else if (state == State::kInBlock) {
      Block& block = file.blocks.back();
      if (const auto key = reader.ParseAssignment(i, block.assignments)) {
        const std::size_t earlier = keys.Set(*key, block.assignments.size() - 1);
        if (earlier != std::string::npos) {
          WarnRepeatedKey(reader, block.assignments[earlier], block.assignments.back(),
                          fmt::format("in config '{}'", block.name));
        }
      }
    } else {
      reader.ParseAssignment(i, outside);  // Outside any config: only its errors are of use.
      outside.clear();
    }
    comments.clear();
  }
  return saw_content;
}

}  // namespace

RunConfigsFile ParseRunConfigs(const std::string& text, const std::string& path, Diagnostics& diags) {
  RunConfigsFile file{path, text, {}};
  Reader reader(text, path, diags);
  if (!reader.CheckText()) return file;
  if (!ParseBlocks(reader, file, 0, reader.size())) {
    diags.Error(SourcePos{reader.file(), 0, 0}, "file defines no configs");
  }
  return file;
}

RunConfigsFile ParseRunConfigsFor(const std::string& text, const std::string& path,
                                  const std::vector<std::string>& names, Diagnostics& diags) {
  Diagnostics found;  // Dropped when the whole file has to be parsed after all.
  RunConfigsFile file{path, text, {}};
  Reader reader(text, path, found);
  if (!reader.CheckText()) {
    diags.Append(found);
    return file;
  }

  // The blocks (runs of lines between blank lines) and the configs each may define: one
  // candidate per header-like line, chained per name (first_of -> next) without a container per
  // name, so that the scan allocates little more than the candidates themselves.
  struct Group {
    std::size_t begin;
    std::size_t end;
  };
  struct Candidate {
    std::size_t group;
    std::size_t parents_begin;  ///< Range of `all_parents`.
    std::size_t parents_end;
    std::size_t next;  ///< Next candidate of the same name, or kNone.
  };
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<Group> groups;
  std::vector<Candidate> candidates;
  std::vector<std::string_view> all_parents;
  std::unordered_map<std::string_view, std::size_t> first_of;  // name -> its latest candidate
  first_of.reserve(reader.size() / 4 + 1);
  std::vector<std::string_view> parents;
  for (std::size_t i = 0; i < reader.size();) {
    if (reader.Kind(i) == LineKind::kBlank) {
      ++i;
      continue;
    }
    const std::size_t group = groups.size();
    groups.push_back({i, i});
    bool first = true;
    for (; i < reader.size(); ++i) {
      const LineKind kind = reader.Kind(i);
      if (kind == LineKind::kBlank) break;
      if (kind == LineKind::kComment) continue;
      const std::string_view name = reader.HeaderName(i, first, parents);
      first = false;
      if (name.empty()) continue;
      const auto [it, added] = first_of.emplace(name, candidates.size());
      const std::size_t previous = added ? kNone : it->second;
      candidates.push_back({group, all_parents.size(), all_parents.size() + parents.size(), previous});
      it->second = candidates.size() - 1;
      all_parents.insert(all_parents.end(), parents.begin(), parents.end());
    }
    groups.back().end = i;
  }

  // The configs asked for and, transitively, their parents; a name defined nowhere has the
  // whole file parsed (below), so that its error names every config ("did you mean").
  std::vector<char> wanted(groups.size(), 0);
  std::unordered_set<std::string_view> seen;
  std::vector<std::string_view> queue(names.begin(), names.end());
  bool complete = true;
  while (complete && !queue.empty()) {
    const std::string_view name = queue.back();
    queue.pop_back();
    if (!seen.insert(name).second) continue;
    const auto it = first_of.find(name);
    if (it == first_of.end()) {
      complete = false;
      break;
    }
    for (std::size_t c = it->second; c != kNone; c = candidates[c].next) {
      wanted[candidates[c].group] = 1;
      queue.insert(queue.end(), all_parents.begin() + static_cast<std::ptrdiff_t>(candidates[c].parents_begin),
                   all_parents.begin() + static_cast<std::ptrdiff_t>(candidates[c].parents_end));
    }
  }
  if (complete) {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (wanted[g]) ParseBlocks(reader, file, groups[g].begin, groups[g].end);
    }
    // The quick reading of the headers must agree with the parse: every config asked for and
    // every parent of a block read is defined by a block read.
    std::unordered_set<std::string_view> parsed;
    for (const Block& b : file.blocks) parsed.insert(b.name);
    const auto has = [&](std::string_view name) { return parsed.count(name) != 0; };
    complete = std::all_of(names.begin(), names.end(), has) &&
               std::all_of(file.blocks.begin(), file.blocks.end(), [&](const Block& b) {
                 return std::all_of(b.parents.begin(), b.parents.end(), has);
               });
  }
  if (!complete) return ParseRunConfigs(text, path, diags);
  diags.Append(found);
  return file;
}

InitConfigFile ParseInitConfig(const std::string& text, const std::string& path, Diagnostics& diags) {
  InitConfigFile file{path, text, {}};
  Reader reader(text, path, diags);
  // An empty init config leaves every setting at its default, as in ASVtorch.
  if (!reader.CheckText(/*empty_ok=*/true)) return file;
  KeyIndex keys;
  std::size_t i = 0;
  while (i < reader.size()) {
    if (reader.Kind(i) != LineKind::kContent) {
      ++i;
      continue;
    }
    if (reader.Probe<g::header_like>(i)) {
      const auto [name, column] = reader.NameAt(i);
      reader.Error(static_cast<int>(i) + 1, column,
                   fmt::format("expected an assignment 'group.field = value', found what looks like the header "
                               "of config '{}'; an init config holds assignments only",
                               name));
      reader.Skip(i);
      continue;
    }
    const auto key = reader.ParseAssignment(i, file.assignments);
    if (!key) continue;
    const std::size_t earlier = keys.Set(*key, file.assignments.size() - 1);
    if (earlier != std::string::npos) {
      WarnRepeatedKey(reader, file.assignments[earlier], file.assignments.back(), "in the init config");
    }
  }
  return file;
}

namespace {

// Reads a config file; a missing or unreadable file is reported at the path.
std::optional<std::string> ReadConfigFile(const std::string& path, const char* kind, Diagnostics& diags) {
  try {
    return fs::ReadFile(path);
  } catch (const std::exception& e) {
    std::string reason = e.what();
    if (reason.compare(0, path.size() + 2, path + ": ") == 0) reason.erase(0, path.size() + 2);
    diags.Error(SourcePos{path, 0, 0}, fmt::format("cannot read {} file: {}", kind, reason));
    return std::nullopt;
  }
}

}  // namespace

RunConfigsFile ParseRunConfigsFile(const std::string& path, Diagnostics& diags) {
  const auto text = ReadConfigFile(path, "run-configs", diags);
  if (!text) return RunConfigsFile{path, {}, {}};
  return ParseRunConfigs(*text, path, diags);
}

RunConfigsFile ParseRunConfigsFileFor(const std::string& path, const std::vector<std::string>& names,
                                      Diagnostics& diags) {
  const auto text = ReadConfigFile(path, "run-configs", diags);
  if (!text) return RunConfigsFile{path, {}, {}};
  return ParseRunConfigsFor(*text, path, names, diags);
}

InitConfigFile ParseInitConfigFile(const std::string& path, Diagnostics& diags) {
  const auto text = ReadConfigFile(path, "init config", diags);
  if (!text) return InitConfigFile{path, {}, {}};
  return ParseInitConfig(*text, path, diags);
}

std::optional<Value> ParseLiteral(const std::string& text, const std::string& origin, Diagnostics& diags) {
  if (const auto bad = text::FindInvalidUtf8(text)) {
    diags.Error(SourcePos{origin, 0, 0}, fmt::format("invalid UTF-8 byte 0x{:02X} at byte {} of the value",
                                                     static_cast<unsigned char>(text[*bad]), *bad + 1));
    return std::nullopt;
  }
  ParseState state;
  state.file = origin;
  pegtl::memory_input<> in(text, origin);
  try {
    pegtl::parse<g::literal, action, g::control>(in, state);
    return std::move(state.result);
  } catch (const g::SyntaxError& e) {
    diags.Error(SourcePos{origin, e.line(), e.column()}, e.what(), LineOf(text, e.line()));
    return std::nullopt;
  }
}

}  // namespace asv::parser
