// Names of enumerations, declared once in a table beside each enum:
//
//   enum class Activation { kRelu, kLeakyRelu, kSelu };
//   inline constexpr EnumName<Activation> kActivationNames[] = {
//       {Activation::kRelu, "relu"}, {Activation::kLeakyRelu, "lrelu"}, {Activation::kSelu, "selu"}};
//   constexpr const auto& EnumNames(Activation) { return kActivationNames; }  // found by ADL
//
// The table is the only place the names are written: a settings field of such an enum type
// (asvcpp/settings/types.h) takes from it its choices (checked when a config is read, listed in
// `asvrun help-settings` and in the "must be one of ..., did you mean ..." errors), the parsing of
// config values and --set, and the string it is written as in dumps and the database. The table
// order is the order choices are listed in. Tables are constexpr and need no library: headers
// that hold them (the `*_types.h` of nnet, train, features, backend) include nothing else.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace asv {

/// One entry of an enum's name table.
template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

namespace detail {
template <class E, class = void>
struct HasEnumNames : std::false_type {};
template <class E>
struct HasEnumNames<E, std::void_t<decltype(EnumNames(E{}))>> : std::true_type {};
}  // namespace detail

/// Whether E is an enum with a name table (an `EnumNames(E)` function found by ADL).
template <class E>
inline constexpr bool kHasEnumNames = std::is_enum_v<E> && detail::HasEnumNames<E>::value;

/// The name of `value` in E's table; "?" for a value the table lacks (a cast integer).
template <class E>
constexpr std::string_view EnumToName(E value) {
  static_assert(kHasEnumNames<E>, "E needs a name table (EnumNames(E))");
  for (const auto& entry : EnumNames(E{})) {
    if (entry.value == value) return entry.name;
  }
  return "?";
}

/// The value named `name` (exact, case-sensitive match), or nullopt.
template <class E>
constexpr std::optional<E> EnumFromName(std::string_view name) {
  static_assert(kHasEnumNames<E>, "E needs a name table (EnumNames(E))");
  for (const auto& entry : EnumNames(E{})) {
    if (entry.name == name) return entry.value;
  }
  return std::nullopt;
}

/// Every name of E's table, in table order.
template <class E>
std::vector<std::string> EnumChoices() {
  static_assert(kHasEnumNames<E>, "E needs a name table (EnumNames(E))");
  std::vector<std::string> names;
  for (const auto& entry : EnumNames(E{})) names.emplace_back(entry.name);
  return names;
}

}  // namespace asv
