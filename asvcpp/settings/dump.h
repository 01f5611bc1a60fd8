// Printable forms of a settings tree: JSON (database, tools), Python-style text (`asvrun show`,
// optionally with provenance), diffs, a canonical form and its hash, and --help text.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "asvcpp/settings/settings_tree.h"

namespace asv::settings {

/// One flat object of every setting in registration order: keys "group.field"; tuples and lists
/// as arrays, None as null, dicts as objects (file order), floats as JSON numbers.
/// Example: {"paths.datasets": {"voxceleb1": "/data/vox1"}, "computing.gpu_ids": [0], ...}
nlohmann::ordered_json ToJson(const SettingsTree& tree);

/// The inverse of ToJson: sets every field of `tree` whose key `flat` holds (a run's stored
/// settings) to that value, converted by the field's type (JSON integers into float fields,
/// arrays into tuples or lists). Fields that `flat` lacks keep their values (settings added since
/// the run), and keys of `flat` that the tree lacks are ignored (settings removed since). Values
/// are type-checked but not range-checked or cross-validated: they were when the run started.
/// Parse the stored text with nlohmann::ordered_json: dicts keep their order (trial lists, datasets).
/// Throws DataError naming the key for a value of the wrong type.
void FromJson(SettingsTree& tree, const nlohmann::ordered_json& flat);

/// A config value as JSON (the mapping ToJson uses).
nlohmann::ordered_json ValueToJson(const parser::Value& value);

struct TextOptions {
  bool only_non_default = false;  ///< Print only fields whose value differs from the default.
  bool explain = false;           ///< Append "  # <provenance>" to every line.
};

/// `group.field = <Python repr>` lines, one block per group, groups separated by a blank line,
/// e.g. `computing.gpu_ids = (0,)`, `recipe.preparation_datasets = ['voxceleb1']`. With
/// `explain`: `network.max_epochs = 5  # run config 'net' (run_configs.py:12)`.
std::string ToText(const SettingsTree& tree, const TextOptions& options = {});

/// One setting that differs between two runs; a side is nullopt when the key is absent there.
struct SettingDiff {
  std::string key;
  std::optional<std::string> a;  ///< Python repr (Diff) or JSON text (DiffJson).
  std::optional<std::string> b;
};

/// Keys whose values differ, in a's order followed by keys only in b.
std::vector<SettingDiff> Diff(const SettingsTree& a, const SettingsTree& b);
/// The same on stored JSON dumps (ToJson output), values rendered as compact JSON.
std::vector<SettingDiff> DiffJson(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b);
/// "key: a -> b" lines ("<absent>" for a missing side).
std::string FormatDiff(const std::vector<SettingDiff>& diffs);

/// ToJson with keys sorted at every level, compact: the stable form stored in the database.
std::string CanonicalJson(const SettingsTree& tree);
/// 64-bit FNV-1a of `text`, as 16 lowercase hex digits.
std::string Fnv1a64Hex(std::string_view text);
/// Fnv1a64Hex(CanonicalJson(tree)).
std::string SettingsHash(const SettingsTree& tree);

/// Every field with its type, default, constraints, help text and, for settings asvcpp does not
/// read, why.
std::string HelpText(const SettingsTree& tree);

}  // namespace asv::settings
