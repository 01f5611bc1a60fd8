// C++ types of settings fields and their mapping to config-language values.
//
// A settings field may be bool, an integer type (int, std::int64_t), double, std::string,
// std::optional<T>, std::vector<T> (a Python list), Tuple<T> (a Python tuple) or OrderedDict<T>
// (a Python dict with str keys, kept in file order), nested freely, or an enum with a name table
// (asvcpp/base/enum_names.h; a field of its own, not nested: a str whose choices are the table's
// names, bound from and dumped as those names). SettingTraits<T> gives each
// its runtime TypeDesc (used for checking and messages) and the conversions to and from
// parser::Value. The tuple/list distinction only matters for printing (`(0,)` vs `['a']`): when
// binding, a list field accepts a tuple literal and vice versa.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "asvcpp/base/check.h"
#include "asvcpp/base/enum_names.h"
#include "parser/value.h"

namespace asv::settings {

/// A Python tuple of T: a std::vector<T> that prints as `(a, b)` / `(a,)`.
template <class T>
class Tuple : public std::vector<T> {
 public:
  using std::vector<T>::vector;
  Tuple() = default;
};

/// A dict with str keys that keeps insertion order (Python 3.7 dict semantics: assigning an
/// existing key replaces its value in place).
template <class V>
class OrderedDict {
 public:
  using value_type = std::pair<std::string, V>;
  using const_iterator = typename std::vector<value_type>::const_iterator;

  OrderedDict() = default;
  OrderedDict(std::initializer_list<value_type> init) {
    for (const auto& e : init) Set(e.first, e.second);
  }

  /// The value for `key`, or nullptr.
  const V* Find(const std::string& key) const {
    for (const auto& e : entries_) {
      if (e.first == key) return &e.second;
    }
    return nullptr;
  }
  bool Contains(const std::string& key) const { return Find(key) != nullptr; }
  /// Replaces the value of an existing key in place or appends a new entry.
  void Set(const std::string& key, V value) {
    for (auto& e : entries_) {
      if (e.first == key) {
        e.second = std::move(value);
        return;
      }
    }
    entries_.emplace_back(key, std::move(value));
  }
  std::vector<std::string> Keys() const {
    std::vector<std::string> keys;
    for (const auto& e : entries_) keys.push_back(e.first);
    return keys;
  }
  std::size_t size() const noexcept { return entries_.size(); }
  bool empty() const noexcept { return entries_.empty(); }
  const_iterator begin() const noexcept { return entries_.begin(); }
  const_iterator end() const noexcept { return entries_.end(); }

  friend bool operator==(const OrderedDict& a, const OrderedDict& b) { return a.entries_ == b.entries_; }
  friend bool operator!=(const OrderedDict& a, const OrderedDict& b) { return !(a == b); }

 private:
  std::vector<value_type> entries_;
};

/// Runtime description of a field's type, printed Python-style: "int", "Optional[List[str]]",
/// "Tuple[int, ...]", "Dict[str, int]".
struct TypeDesc {
  enum class Kind { kBool, kInt, kFloat, kString, kOptional, kList, kTuple, kDict };
  Kind kind = Kind::kBool;
  /// Element type of Optional/List/Tuple, value type of Dict (keys are always str).
  std::vector<TypeDesc> args;
  /// Range of the C++ integer type behind an int field.
  std::int64_t int_min = std::numeric_limits<std::int64_t>::min();
  std::int64_t int_max = std::numeric_limits<std::int64_t>::max();

  static TypeDesc Bool() { return TypeDesc{Kind::kBool, {}}; }
  static TypeDesc Int(std::int64_t lo, std::int64_t hi) {
    TypeDesc t{Kind::kInt, {}};
    t.int_min = lo;
    t.int_max = hi;
    return t;
  }
  static TypeDesc Float() { return TypeDesc{Kind::kFloat, {}}; }
  static TypeDesc String() { return TypeDesc{Kind::kString, {}}; }
  static TypeDesc Optional(TypeDesc inner) { return TypeDesc{Kind::kOptional, {std::move(inner)}}; }
  static TypeDesc List(TypeDesc elem) { return TypeDesc{Kind::kList, {std::move(elem)}}; }
  static TypeDesc Tuple(TypeDesc elem) { return TypeDesc{Kind::kTuple, {std::move(elem)}}; }
  static TypeDesc Dict(TypeDesc value) { return TypeDesc{Kind::kDict, {std::move(value)}}; }

  const TypeDesc& element() const { return args.front(); }
  std::string ToString() const;
};

/// SettingTraits<T>: Type(), ToValue(const T&) and FromValue(const parser::Value&). FromValue's
/// precondition is that CheckType(Type(), value) succeeded (see check.h); it never fails.
template <class T, class Enable = void>
struct SettingTraits;  // Unsupported field type: no definition.

template <>
struct SettingTraits<bool> {
  static TypeDesc Type() { return TypeDesc::Bool(); }
  static parser::Value ToValue(bool b) { return parser::Value::Bool(b); }
  static bool FromValue(const parser::Value& v) { return v.as_bool(); }
};

template <class T>
struct SettingTraits<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static_assert(sizeof(T) <= sizeof(std::int64_t) && std::is_signed_v<T>, "signed integers only");
  static TypeDesc Type() {
    return TypeDesc::Int(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  }
  static parser::Value ToValue(T i) { return parser::Value::Int(static_cast<std::int64_t>(i)); }
  static T FromValue(const parser::Value& v) { return static_cast<T>(v.as_int()); }
};

template <>
struct SettingTraits<double> {
  static TypeDesc Type() { return TypeDesc::Float(); }
  static parser::Value ToValue(double d) { return parser::Value::Float(d); }
  static double FromValue(const parser::Value& v) { return v.as_float(); }
};

template <>
struct SettingTraits<std::string> {
  static TypeDesc Type() { return TypeDesc::String(); }
  static parser::Value ToValue(const std::string& s) { return parser::Value::String(s); }
  static std::string FromValue(const parser::Value& v) { return v.as_string(); }
};

/// An enum with a name table: a str in configs and dumps, whose value must be one of the names
/// (the Registrar makes them the field's choices).
template <class E>
struct SettingTraits<E, std::enable_if_t<kHasEnumNames<E>>> {
  static TypeDesc Type() { return TypeDesc::String(); }
  static std::vector<std::string> Choices() { return EnumChoices<E>(); }
  static parser::Value ToValue(E e) { return parser::Value::String(std::string(EnumToName(e))); }
  static E FromValue(const parser::Value& v) {
    const std::optional<E> e = EnumFromName<E>(v.as_string());
    ASV_CHECK(e.has_value(), "enum value not checked against its choices: '" + v.as_string() + "'");
    return *e;
  }
};

template <class T>
struct SettingTraits<std::optional<T>> {
  static TypeDesc Type() { return TypeDesc::Optional(SettingTraits<T>::Type()); }
  static parser::Value ToValue(const std::optional<T>& o) {
    return o ? SettingTraits<T>::ToValue(*o) : parser::Value::None();
  }
  static std::optional<T> FromValue(const parser::Value& v) {
    if (v.is_none()) return std::nullopt;
    return SettingTraits<T>::FromValue(v);
  }
};

template <class T>
struct SettingTraits<std::vector<T>> {
  static TypeDesc Type() { return TypeDesc::List(SettingTraits<T>::Type()); }
  static parser::Value ToValue(const std::vector<T>& list) {
    std::vector<parser::Value> items;
    for (const auto& x : list) items.push_back(SettingTraits<T>::ToValue(x));
    return parser::Value::List(std::move(items));
  }
  static std::vector<T> FromValue(const parser::Value& v) {
    std::vector<T> out;
    for (const auto& x : v.items()) out.push_back(SettingTraits<T>::FromValue(x));
    return out;
  }
};

template <class T>
struct SettingTraits<Tuple<T>> {
  static TypeDesc Type() { return TypeDesc::Tuple(SettingTraits<T>::Type()); }
  static parser::Value ToValue(const Tuple<T>& tuple) {
    std::vector<parser::Value> items;
    for (const auto& x : tuple) items.push_back(SettingTraits<T>::ToValue(x));
    return parser::Value::Tuple(std::move(items));
  }
  static Tuple<T> FromValue(const parser::Value& v) {
    Tuple<T> out;
    for (const auto& x : v.items()) out.push_back(SettingTraits<T>::FromValue(x));
    return out;
  }
};

template <class V>
struct SettingTraits<OrderedDict<V>> {
  static TypeDesc Type() { return TypeDesc::Dict(SettingTraits<V>::Type()); }
  static parser::Value ToValue(const OrderedDict<V>& dict) {
    std::vector<std::pair<parser::Value, parser::Value>> entries;
    for (const auto& [k, x] : dict) entries.emplace_back(parser::Value::String(k), SettingTraits<V>::ToValue(x));
    return parser::Value::Dict(std::move(entries));
  }
  static OrderedDict<V> FromValue(const parser::Value& v) {
    OrderedDict<V> out;
    for (const auto& [k, x] : v.entries()) out.Set(k.as_string(), SettingTraits<V>::FromValue(x));
    return out;
  }
};

}  // namespace asv::settings
