// The type-erased view of all settings groups a recipe uses.
//
// Every settings group is a plain struct with in-class defaults and one
//
//   template <class V> void Register(V& v) {
//     v("frame_layer_size", frame_layer_size, "Channels of the TDNN frame layers").Min(1);
//     ...
//   }
//
// listing each field once, with its help text and constraints. A group may also have
//
//   void Validate(asv::settings::Validator& v) const;
//
// for checks that involve several fields. SettingsTree::AddGroup runs Register with a Registrar
// and keeps, per field, its type, default, constraints, accessors into the struct and where its
// current value came from. Binding (binding.h) and the dumps (dump.h) work on the tree only, so
// a new field needs exactly one line in its group's Register.
//
// The tree holds pointers into the registered structs: they must outlive it and stay in place.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "asvcpp/base/check.h"
#include "asvcpp/base/diagnostic.h"
#include "asvcpp/settings/types.h"
#include "parser/resolve.h"
#include "parser/value.h"

namespace asv::settings {

class Validator;

/// One registered setting. Constraint setters are chainable and used inside Register.
struct Field {
  /// Returns an error message for a value that passed the type check, or nullopt.
  using CheckFn = std::function<std::optional<std::string>(const parser::Value&)>;

  std::string group;
  std::string name;
  std::string help;
  TypeDesc type;
  parser::Value default_value;  ///< From a default-constructed struct.
  std::function<parser::Value()> get;
  std::function<void(const parser::Value&)> set;  ///< Precondition: the value passed CheckValue.

  // Constraints. Numeric bounds and choices apply to every number/string inside the value (list
  // and tuple elements, dict values, a present optional).
  std::optional<double> min, max;
  bool min_exclusive = false;
  bool max_exclusive = false;
  std::vector<std::string> choices;
  std::vector<std::string> unsupported;
  std::string unsupported_reason;
  std::vector<CheckFn> checks;
  std::string no_effect;  ///< Why asvcpp does not read this setting; empty if it does.

  // Provenance of the current value (default until bound).
  parser::Provenance provenance;
  SourcePos site;         ///< Where to point diagnostics about the current value.
  std::string site_line;  ///< The source line at `site`.
  std::uint64_t set_seq = 0;  ///< Order in which fields were set (0 = default).

  Field& Min(double lo) { min = lo; min_exclusive = false; return *this; }
  Field& Max(double hi) { max = hi; max_exclusive = false; return *this; }
  /// Strictly below `hi` (angles below pi/2 and the like).
  Field& Below(double hi) { max = hi; max_exclusive = true; return *this; }
  /// Strictly between `lo` and `hi` (probabilities and fractions that may be neither 0 nor 1).
  Field& Open(double lo, double hi) {
    min = lo;
    min_exclusive = true;
    return Below(hi);
  }
  /// Strictly greater than zero (learning rates and the like).
  Field& Positive() { min = 0.0; min_exclusive = true; return *this; }
  Field& Range(double lo, double hi) { return Min(lo).Max(hi); }
  /// Allowed values of a str field. An enum field (types.h) gets its table's names without this.
  Field& Choices(std::vector<std::string> values) { choices = std::move(values); return *this; }
  /// Values that ASVtorch names but does not implement either: rejected with `reason`.
  Field& Unsupported(std::vector<std::string> values, std::string reason) {
    unsupported = std::move(values);
    unsupported_reason = std::move(reason);
    return *this;
  }
  Field& Check(CheckFn fn) { checks.push_back(std::move(fn)); return *this; }
  /// asvcpp does not read this setting: a config that sets a non-default value gets a warning.
  Field& NoEffect(std::string reason) { no_effect = std::move(reason); return *this; }

  std::string key() const { return group + "." + name; }
  bool IsDefault() const { return get() == default_value; }
  /// The numeric range, e.g. "in [1, 8192]", "in (0, 100]", "in (0, 1)", ">= 0"; empty without bounds.
  std::string RangeText() const;
  /// Human-readable constraints, e.g. ">= 1", "one of 'relu', 'lrelu', 'selu'"; empty if none.
  std::string ConstraintText() const;
};

/// One settings group: its fields in Register order and an optional cross-field check.
struct Group {
  std::string name;
  std::vector<Field> fields;
  std::function<void(Validator&)> validate;

  const Field* Find(std::string_view field) const;
  Field* Find(std::string_view field);
  std::vector<std::string> FieldNames() const;
};

/// The visitor that Register methods are called with.
class Registrar {
 public:
  explicit Registrar(Group& group) : group_(group) {}

  template <class T>
  Field& operator()(const char* name, T& value, const char* help) {
    ASV_CHECK(group_.Find(name) == nullptr, "field registered twice: " + group_.name + "." + name);
    Field f;
    f.group = group_.name;
    f.name = name;
    f.help = help;
    f.type = SettingTraits<T>::Type();
    T* target = &value;
    f.get = [target] { return SettingTraits<T>::ToValue(*target); };
    f.set = [target](const parser::Value& v) { *target = SettingTraits<T>::FromValue(v); };
    f.default_value = f.get();
    if constexpr (kHasEnumNames<T>) f.choices = SettingTraits<T>::Choices();
    group_.fields.push_back(std::move(f));
    return group_.fields.back();
  }

 private:
  Group& group_;
};

/// Passed to a group's Validate: reports cross-field problems.
class Validator {
 public:
  Validator(const Group& group, Diagnostics& diags) : group_(group), diags_(diags) {}

  /// Unless `ok`, reports `message` as an error at the position of whichever of `fields` (names
  /// within this group) was set last, i.e. by the highest layer (command line > run config > init
  /// config > default) and, within a layer, latest.
  void Require(bool ok, std::initializer_list<std::string_view> fields, const std::string& message);

 private:
  const Group& group_;
  Diagnostics& diags_;
};

namespace detail {
template <class G, class = void>
struct HasValidate : std::false_type {};
template <class G>
struct HasValidate<G, std::void_t<decltype(std::declval<const G&>().Validate(std::declval<Validator&>()))>>
    : std::true_type {};
}  // namespace detail

/// All groups of one recipe run, in the order they were added.
class SettingsTree {
 public:
  SettingsTree() = default;
  SettingsTree(const SettingsTree&) = delete;
  SettingsTree& operator=(const SettingsTree&) = delete;
  SettingsTree(SettingsTree&&) = default;
  SettingsTree& operator=(SettingsTree&&) = default;

  /// Registers `group` (which must outlive the tree) under `name`. Defaults are taken from a
  /// default-constructed G, so `group` may already hold other values.
  template <class G>
  void AddGroup(const std::string& name, G& group) {
    ASV_CHECK(FindGroup(name) == nullptr, "settings group added twice: " + name);
    Group g;
    g.name = name;
    Registrar registrar(g);
    group.Register(registrar);
    G fresh{};
    Group defaults;
    defaults.name = name;
    Registrar default_registrar(defaults);
    fresh.Register(default_registrar);
    ASV_CHECK(defaults.fields.size() == g.fields.size(), "Register must not depend on values: " + name);
    for (std::size_t i = 0; i < g.fields.size(); ++i) g.fields[i].default_value = defaults.fields[i].get();
    if constexpr (detail::HasValidate<G>::value) {
      const G* target = &group;
      g.validate = [target](Validator& v) { target->Validate(v); };
    }
    groups_.push_back(std::move(g));
  }

  const std::vector<Group>& groups() const noexcept { return groups_; }
  std::vector<Group>& groups() noexcept { return groups_; }
  const Group* FindGroup(std::string_view name) const;
  Group* FindGroup(std::string_view name);
  /// Field by "group.field" key, or nullptr.
  const Field* FindField(std::string_view key) const;
  Field* FindField(std::string_view key);
  std::vector<std::string> GroupNames() const;
  /// Every "group.field" key in registration order (for "did you mean" and completion).
  std::vector<std::string> Keys() const;

  /// Next value for Field::set_seq.
  std::uint64_t NextSeq() noexcept { return ++seq_; }

 private:
  std::vector<Group> groups_;
  std::uint64_t seq_ = 0;
};

}  // namespace asv::settings
