// Python-style literal values of the run_configs language.
//
// A Value is what the right-hand side of `group.field = value` denotes: None, True/False,
// integers, floats, strings, tuples, lists and dicts, nested freely. Values are data, never code.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "asvcpp/base/diagnostic.h"

namespace asv::parser {

class Value {
 public:
  enum class Kind { kNone, kBool, kInt, kFloat, kString, kTuple, kList, kDict };

  Value() = default;  ///< None.
  static Value None() { return Value(); }
  static Value Bool(bool b);
  static Value Int(std::int64_t i);
  static Value Float(double f);
  static Value String(std::string s);
  static Value Tuple(std::vector<Value> items);
  static Value List(std::vector<Value> items);
  static Value Dict(std::vector<std::pair<Value, Value>> entries);

  Kind kind() const noexcept { return kind_; }
  bool is_none() const noexcept { return kind_ == Kind::kNone; }
  bool is_sequence() const noexcept { return kind_ == Kind::kTuple || kind_ == Kind::kList; }

  // Accessors; calling one for the wrong kind is a programming error (ASV_CHECK).
  bool as_bool() const;
  std::int64_t as_int() const;
  double as_float() const;  ///< Also accepts kInt (Python promotes int to float).
  const std::string& as_string() const;
  const std::vector<Value>& items() const;                        ///< Tuple or list elements.
  const std::vector<std::pair<Value, Value>>& entries() const;  ///< Dict entries, in file order.

  /// Where the literal starts in its source (file:line:column); empty for values built in code.
  const SourcePos& pos() const noexcept { return pos_; }
  void set_pos(SourcePos pos) { pos_ = std::move(pos); }

  /// Python repr(): `None`, `True`, `3`, `0.001`, `'text'` (single quotes, escapes as Python),
  /// `(0,)`, `[1, 2]`, `{'a': 'b'}`. Floats use the shortest text that reads back to the same
  /// double and always carry a '.' or exponent ("1.0", "1e-05" as Python prints them).
  std::string Repr() const;

  /// Python kind name: "NoneType", "bool", "int", "float", "str", "tuple", "list", "dict".
  const char* KindName() const noexcept;

  /// Structural equality (positions ignored; 1 == 1.0 is false: kinds must match).
  friend bool operator==(const Value& a, const Value& b);
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }

 private:
  // Only the member of the value's kind exists (tuples and lists share the vector), so that
  // moving or destroying a scalar touches no string or vector.
  using Data = std::variant<std::monostate, bool, std::int64_t, double, std::string, std::vector<Value>,
                            std::vector<std::pair<Value, Value>>>;

  Kind kind_ = Kind::kNone;
  Data data_;
  SourcePos pos_;
};

/// A type annotation as written after the field name, e.g. `int`, `Tuple[int, ...]`,
/// `Optional[List[str]]`, `Dict[str, str]`. `name` is the bare name (`typing.` prefix removed),
/// `args` the bracketed arguments; `...` appears as an argument named "...".
struct TypeExpr {
  std::string name;
  std::vector<TypeExpr> args;
  SourcePos pos;

  /// Canonical text, e.g. "Optional[List[str]]".
  std::string ToString() const;
};

}  // namespace asv::parser
