#include "asvcpp/settings/settings_tree.h"

#include <fmt/format.h>

namespace asv::settings {

std::string Field::RangeText() const {
  if (min && max) {
    return fmt::format("in {}{}, {}{}", min_exclusive ? "(" : "[", *min, *max, max_exclusive ? ")" : "]");
  }
  if (min) return fmt::format("{} {}", min_exclusive ? ">" : ">=", *min);
  if (max) return fmt::format("{} {}", max_exclusive ? "<" : "<=", *max);
  return "";
}

std::string Field::ConstraintText() const {
  std::vector<std::string> parts;
  if (min || max) parts.push_back(RangeText());
  if (!choices.empty()) {
    std::vector<std::string> quoted;
    for (const auto& c : choices) quoted.push_back(parser::Value::String(c).Repr());
    parts.push_back(fmt::format("one of {}", fmt::join(quoted, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

const Field* Group::Find(std::string_view field) const {
  for (const auto& f : fields) {
    if (f.name == field) return &f;
  }
  return nullptr;
}

Field* Group::Find(std::string_view field) {
  return const_cast<Field*>(static_cast<const Group&>(*this).Find(field));
}

std::vector<std::string> Group::FieldNames() const {
  std::vector<std::string> names;
  for (const auto& f : fields) names.push_back(f.name);
  return names;
}

void Validator::Require(bool ok, std::initializer_list<std::string_view> fields, const std::string& message) {
  if (ok) return;
  const Field* last = nullptr;
  for (auto name : fields) {
    const Field* f = group_.Find(name);
    ASV_CHECK(f != nullptr, "Validate names an unknown field: " + group_.name + "." + std::string(name));
    if (last == nullptr || f->set_seq > last->set_seq) last = f;
  }
  if (last == nullptr) {
    diags_.Error({}, message);
  } else {
    diags_.Error(last->site, message, last->site_line);
  }
}

const Group* SettingsTree::FindGroup(std::string_view name) const {
  for (const auto& g : groups_) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

Group* SettingsTree::FindGroup(std::string_view name) {
  return const_cast<Group*>(static_cast<const SettingsTree&>(*this).FindGroup(name));
}

const Field* SettingsTree::FindField(std::string_view key) const {
  const auto dot = key.find('.');
  if (dot == std::string_view::npos) return nullptr;
  const Group* g = FindGroup(key.substr(0, dot));
  return g == nullptr ? nullptr : g->Find(key.substr(dot + 1));
}

Field* SettingsTree::FindField(std::string_view key) {
  return const_cast<Field*>(static_cast<const SettingsTree&>(*this).FindField(key));
}

std::vector<std::string> SettingsTree::GroupNames() const {
  std::vector<std::string> names;
  for (const auto& g : groups_) names.push_back(g.name);
  return names;
}

std::vector<std::string> SettingsTree::Keys() const {
  std::vector<std::string> keys;
  for (const auto& g : groups_) {
    for (const auto& f : g.fields) keys.push_back(f.key());
  }
  return keys;
}

}  // namespace asv::settings
