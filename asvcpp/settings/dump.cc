#include "asvcpp/settings/dump.h"

#include <fmt/format.h>

#include <cstdint>
#include <set>
#include <stdexcept>

#include "asvcpp/base/error.h"

namespace asv::settings {

using parser::Value;

nlohmann::ordered_json ValueToJson(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kNone: return nullptr;
    case Value::Kind::kBool: return value.as_bool();
    case Value::Kind::kInt: return value.as_int();
    case Value::Kind::kFloat: return value.as_float();
    case Value::Kind::kString: return value.as_string();
    case Value::Kind::kTuple:
    case Value::Kind::kList: {
      auto array = nlohmann::ordered_json::array();
      for (const auto& item : value.items()) array.push_back(ValueToJson(item));
      return array;
    }
    case Value::Kind::kDict: {
      auto object = nlohmann::ordered_json::object();
      for (const auto& [k, v] : value.entries()) {
        object[k.kind() == Value::Kind::kString ? k.as_string() : k.Repr()] = ValueToJson(v);
      }
      return object;
    }
  }
  return nullptr;
}

namespace {

// `j` as a value of `type`; throws std::invalid_argument when it is not one.
Value ValueFromJson(const TypeDesc& type, const nlohmann::ordered_json& j) {
  const auto wrong = [&] { return std::invalid_argument(fmt::format("{} is not {}", j.dump(), type.ToString())); };
  switch (type.kind) {
    case TypeDesc::Kind::kBool:
      if (!j.is_boolean()) throw wrong();
      return Value::Bool(j.get<bool>());
    case TypeDesc::Kind::kInt:
      if (!j.is_number_integer()) throw wrong();
      return Value::Int(j.get<std::int64_t>());
    case TypeDesc::Kind::kFloat:
      if (!j.is_number()) throw wrong();
      return Value::Float(j.get<double>());
    case TypeDesc::Kind::kString:
      if (!j.is_string()) throw wrong();
      return Value::String(j.get<std::string>());
    case TypeDesc::Kind::kOptional:
      return j.is_null() ? Value::None() : ValueFromJson(type.element(), j);
    case TypeDesc::Kind::kList:
    case TypeDesc::Kind::kTuple: {
      if (!j.is_array()) throw wrong();
      std::vector<Value> items;
      for (const auto& item : j) items.push_back(ValueFromJson(type.element(), item));
      return type.kind == TypeDesc::Kind::kList ? Value::List(std::move(items)) : Value::Tuple(std::move(items));
    }
    case TypeDesc::Kind::kDict: {
      if (!j.is_object()) throw wrong();
      std::vector<std::pair<Value, Value>> entries;
      for (const auto& [k, v] : j.items()) entries.emplace_back(Value::String(k), ValueFromJson(type.element(), v));
      return Value::Dict(std::move(entries));
    }
  }
  throw wrong();
}

}  // namespace

void FromJson(SettingsTree& tree, const nlohmann::ordered_json& flat) {
  if (!flat.is_object()) throw DataError("stored settings are not a JSON object");
  for (auto& group : tree.groups()) {
    for (auto& field : group.fields) {
      const auto it = flat.find(field.key());
      if (it == flat.end()) continue;
      Value value;
      try {
        value = ValueFromJson(field.type, *it);
      } catch (const std::exception& e) {
        throw DataError(fmt::format("stored setting {}: {}", field.key(), e.what()));
      }
      field.set(value);
    }
  }
}

nlohmann::ordered_json ToJson(const SettingsTree& tree) {
  auto out = nlohmann::ordered_json::object();
  for (const auto& group : tree.groups()) {
    for (const auto& field : group.fields) out[field.key()] = ValueToJson(field.get());
  }
  return out;
}

std::string ToText(const SettingsTree& tree, const TextOptions& options) {
  std::string out;
  for (const auto& group : tree.groups()) {
    std::string block;
    for (const auto& field : group.fields) {
      if (options.only_non_default && field.IsDefault()) continue;
      block += fmt::format("{} = {}", field.key(), field.get().Repr());
      if (options.explain) block += "  # " + field.provenance.ToString();
      block += '\n';
    }
    if (block.empty()) continue;
    if (!out.empty()) out += '\n';
    out += block;
  }
  return out;
}

namespace {

template <class Json, class Render>
std::vector<SettingDiff> DiffObjects(const Json& a, const Json& b, Render render) {
  std::vector<SettingDiff> out;
  for (auto it = a.begin(); it != a.end(); ++it) {
    auto other = b.find(it.key());
    if (other == b.end()) {
      out.push_back({it.key(), render(it.value()), std::nullopt});
    } else if (it.value() != other.value()) {
      out.push_back({it.key(), render(it.value()), render(other.value())});
    }
  }
  for (auto it = b.begin(); it != b.end(); ++it) {
    if (a.find(it.key()) == a.end()) out.push_back({it.key(), std::nullopt, render(it.value())});
  }
  return out;
}

}  // namespace

std::vector<SettingDiff> Diff(const SettingsTree& a, const SettingsTree& b) {
  std::vector<SettingDiff> out;
  for (const auto& group : a.groups()) {
    for (const auto& field : group.fields) {
      const Field* other = b.FindField(field.key());
      if (other == nullptr) {
        out.push_back({field.key(), field.get().Repr(), std::nullopt});
      } else if (field.get() != other->get()) {
        out.push_back({field.key(), field.get().Repr(), other->get().Repr()});
      }
    }
  }
  for (const auto& group : b.groups()) {
    for (const auto& field : group.fields) {
      if (a.FindField(field.key()) == nullptr) out.push_back({field.key(), std::nullopt, field.get().Repr()});
    }
  }
  return out;
}

std::vector<SettingDiff> DiffJson(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b) {
  return DiffObjects(a, b, [](const nlohmann::ordered_json& v) { return std::optional<std::string>(v.dump()); });
}

std::string FormatDiff(const std::vector<SettingDiff>& diffs) {
  std::string out;
  for (const auto& d : diffs) {
    out += fmt::format("{}: {} -> {}\n", d.key, d.a.value_or("<absent>"), d.b.value_or("<absent>"));
  }
  return out;
}

std::string CanonicalJson(const SettingsTree& tree) {
  // nlohmann::json keeps object keys in a std::map: sorted at every level.
  const nlohmann::json sorted = nlohmann::json::parse(ToJson(tree).dump());
  return sorted.dump();
}

std::string Fnv1a64Hex(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", hash);
}

std::string SettingsHash(const SettingsTree& tree) { return Fnv1a64Hex(CanonicalJson(tree)); }

std::string HelpText(const SettingsTree& tree) {
  std::string out;
  for (const auto& group : tree.groups()) {
    if (group.fields.empty()) continue;
    if (!out.empty()) out += '\n';
    out += fmt::format("[{}]\n", group.name);
    for (const auto& field : group.fields) {
      out += fmt::format("  {}: {} = {}\n", field.key(), field.type.ToString(), field.default_value.Repr());
      out += fmt::format("      {}\n", field.help);
      const std::string constraints = field.ConstraintText();
      if (!constraints.empty()) out += fmt::format("      Allowed: {}\n", constraints);
      if (!field.no_effect.empty()) out += fmt::format("      No effect in asvcpp: {}\n", field.no_effect);
    }
  }
  return out;
}

}  // namespace asv::settings
