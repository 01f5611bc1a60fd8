#include "asvcpp/settings/binding.h"

#include <fmt/format.h>

#include "asvcpp/base/text.h"
#include "asvcpp/settings/check.h"
#include "parser/parse.h"

namespace asv::settings {

namespace {

// A name as quoted in a message: whole when of a plausible length, else its start and end (the
// source line under the message shows where it is).
std::string Quoted(const std::string& name) {
  constexpr std::size_t kMax = 80;
  if (name.size() <= kMax) return name;
  std::size_t head = kMax / 2, tail = name.size() - kMax / 4;
  while (head > 0 && (static_cast<unsigned char>(name[head]) & 0xC0) == 0x80) --head;
  while (tail < name.size() && (static_cast<unsigned char>(name[tail]) & 0xC0) == 0x80) ++tail;
  return fmt::format("{}...{} ({} characters)", name.substr(0, head), name.substr(tail), name.size());
}

// The position of the field name of a key at `pos` whose dot is at `dot`.
SourcePos FieldPos(SourcePos pos, std::size_t dot) {
  if (pos.has_line() && pos.column > 0) pos.column += static_cast<int>(dot + 1);
  return pos;
}

// Looks up `key` ("group.field"), reporting an unknown group or field, with a suggestion when
// `suggest`.
const Field* Lookup(const SettingsTree& tree, const std::string& key, const Site& site, Diagnostics& diags,
                    bool suggest = true) {
  const auto dot = key.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == key.size()) {
    std::string message = fmt::format("'{}' is not a setting name; expected group.field", Quoted(key));
    if (auto close = suggest ? text::ClosestMatch(key, tree.Keys()) : std::nullopt) {
      message += fmt::format(" (did you mean '{}'?)", *close);
    }
    diags.Error(site.pos, message, site.source_line);
    return nullptr;
  }
  const std::string group_name = key.substr(0, dot);
  const std::string field_name = key.substr(dot + 1);
  const Group* group = tree.FindGroup(group_name);
  if (group == nullptr) {
    std::string message = fmt::format("unknown settings group '{}'", Quoted(group_name));
    if (auto close = suggest ? text::ClosestMatch(group_name, tree.GroupNames()) : std::nullopt) {
      message += fmt::format(" (did you mean '{}'?)", *close);
    }
    diags.Error(site.pos, message, site.source_line);
    return nullptr;
  }
  if (const Field* field = group->Find(field_name)) return field;
  std::string message = fmt::format("unknown field '{}'", Quoted(key));
  if (!suggest) {
    diags.Error(FieldPos(site.pos, dot), message, site.source_line);
    return nullptr;
  }
  std::vector<std::string_view> field_names;  // Views: an error per line must not copy every name.
  field_names.reserve(group->fields.size());
  for (const auto& f : group->fields) field_names.push_back(f.name);
  if (auto close = text::ClosestMatch(field_name, field_names)) {
    message += fmt::format(" (did you mean '{}'?)", *close);
  } else {
    for (const auto& other : tree.groups()) {
      if (other.Find(field_name) != nullptr) {
        message += fmt::format(" (did you mean '{}.{}'?)", other.name, field_name);
        break;
      }
    }
  }
  diags.Error(FieldPos(site.pos, dot), message, site.source_line);
  return nullptr;
}

void Assign(SettingsTree& tree, Field& field, const parser::Value& value, parser::Provenance provenance,
            const Site& site) {
  field.set(value);
  field.provenance = std::move(provenance);
  field.site = site.pos;
  field.site_line = site.source_line;
  field.set_seq = tree.NextSeq();
}

bool AcceptsRawString(const TypeDesc& type) {
  return type.kind == TypeDesc::Kind::kString ||
         (type.kind == TypeDesc::Kind::kOptional && type.element().kind == TypeDesc::Kind::kString);
}

// Only the errors a ConfigError shows get a "did you mean" (Diagnostics::NextShown), the costly part
// of an error: a file of 100,000 unknown names computed 100,000 suggestions to show 50.
void Validate(const SettingsTree& tree, const std::vector<parser::Assignment>& assignments, Diagnostics& diags) {
  for (const auto& a : assignments) {
    const Site site{a.pos, a.source_line.view(), true};
    const Field* field = Lookup(tree, a.key, site, diags, diags.NextShown());
    if (field == nullptr) continue;
    CheckAssignment(*field, a.annotation ? &*a.annotation : nullptr, a.value, site, diags);
  }
}

}  // namespace

void ValidateAssignments(const SettingsTree& tree, const std::vector<parser::Assignment>& assignments,
                         Diagnostics& diags) {
  Validate(tree, assignments, diags);
}

void ValidateRunConfigs(const SettingsTree& tree, const parser::RunConfigsFile& file, Diagnostics& diags) {
  for (const auto& block : file.blocks) Validate(tree, block.assignments, diags);
}

void Bind(SettingsTree& tree, const parser::ResolvedConfig& config, Diagnostics& diags, BindProblems problems) {
  const bool report = problems == BindProblems::kReport;
  Diagnostics dropped;  // Problems already reported (BindProblems::kSkip).
  for (const auto& key : config.keys) {
    const parser::ResolvedValue* rv = config.Find(key);
    if (rv == nullptr) continue;
    Field* field = nullptr;
    const Site site{rv->provenance.pos, rv->source_line.view(), true};
    if (report) {
      if (Lookup(tree, key, site, diags, diags.NextShown()) == nullptr) continue;
      field = tree.FindField(key);
    } else {
      field = tree.FindField(key);  // An unknown name is skipped without a word.
      if (field == nullptr) continue;
    }
    if (!CheckAssignment(*field, rv->annotation ? &*rv->annotation : nullptr, rv->value, site,
                         report ? diags : dropped)) {
      dropped = Diagnostics();
      continue;
    }
    Assign(tree, *field, rv->value, rv->provenance, site);
  }
}

void BindConfig(SettingsTree& tree, const parser::ResolvedConfig& init, const parser::ResolvedConfig& run,
                Diagnostics& diags) {
  Bind(tree, init, diags);
  Bind(tree, run, diags);
}

void ApplyOverride(SettingsTree& tree, const std::string& arg, Diagnostics& diags) {
  const Site site{SourcePos{"--set " + arg, 0, 0}, {}, false};
  const auto eq = arg.find('=');
  if (eq == std::string::npos) {
    diags.Error(site.pos, "expected --set group.field=value");
    return;
  }
  const std::string key(text::Trim(std::string_view(arg).substr(0, eq)));
  const std::string raw(text::Trim(std::string_view(arg).substr(eq + 1)));
  const Field* found = Lookup(tree, key, site, diags, diags.NextShown());
  if (found == nullptr) return;
  Diagnostics parse_diags;
  std::optional<parser::Value> value = parser::ParseLiteral(raw, "--set " + key, parse_diags);
  if (!value) {
    if (!AcceptsRawString(found->type)) {
      std::string reason;
      for (const auto& d : parse_diags.all()) {
        if (d.severity == Severity::kError) {
          reason = ": " + d.message;
          break;
        }
      }
      diags.Error(site.pos, fmt::format("cannot read '{}' as {}{}", raw, found->type.ToString(), reason));
      return;
    }
    value = parser::Value::String(raw);
  }
  if (!CheckAssignment(*found, nullptr, *value, site, diags)) return;
  parser::Provenance provenance;
  provenance.source = parser::Provenance::Source::kCommandLine;
  Assign(tree, *tree.FindField(key), *value, provenance, site);
}

void Validate(const SettingsTree& tree, Diagnostics& diags) {
  for (const auto& group : tree.groups()) {
    if (group.validate) {
      Validator v(group, diags);
      group.validate(v);
    }
    for (const auto& field : group.fields) {
      if (field.no_effect.empty() || field.provenance.source == parser::Provenance::Source::kDefault) continue;
      if (field.IsDefault()) continue;
      diags.Warning(field.site, fmt::format("{} has no effect in asvcpp: {}", field.key(), field.no_effect),
                    field.site_line);
    }
  }
}

void ResetToDefaults(SettingsTree& tree) {
  for (auto& group : tree.groups()) {
    for (auto& field : group.fields) {
      field.set(field.default_value);
      field.provenance = parser::Provenance{};
      field.site = SourcePos{};
      field.site_line.clear();
      field.set_seq = 0;
    }
  }
}

}  // namespace asv::settings
