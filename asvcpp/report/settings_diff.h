// Which settings differ between runs and which config of each run's chain set them: the
// computation behind `asvrun diff` and the comparison of asvrun report's page.
//
// The database stores each run's resolved settings (runs.settings_json) but not where each value
// came from; that is known only from the config files. The caller (asvrun, which can read them)
// resolves the configs of the runs and passes what it found as a ProvenanceMap; a value whose
// stored form differs from the one resolved now is reported as changed since the run (an
// override with --set, or a config file edited since).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "asvcpp/db/database.h"
#include "asvcpp/settings/settings_tree.h"

namespace asv::report {

/// Where the value of one setting of a config comes from, as resolved from its config files now.
struct SettingSource {
  std::string origin;      ///< e.g. "net" (a run-config block), "init_config", "recipe", "default".
  std::string value_json;  ///< The value resolved now, as compact JSON (settings::ToJson's form).
};

/// "<recipe>/<config>" (ConfigKey) -> setting key ("group.field") -> where it came from. Settings
/// a config leaves at their defaults may be left out: they count as "default".
using ProvenanceMap = std::map<std::string, std::map<std::string, SettingSource>>;

/// Where every setting of `tree` (a resolved config) that is not at its compiled default came from
/// (Field::provenance): the run-config block's name, "init_config", "recipe" or "--set", with
/// the value as compact JSON.
std::map<std::string, SettingSource> SourcesOf(const settings::SettingsTree& tree);

/// The key of a config in a ProvenanceMap: "<recipe>/<config>", e.g. "voxceleb/xvector/net".
std::string ConfigKey(const std::string& recipe, const std::string& config);

/// Where `run`'s value `value_json` of setting `key` came from: the origin recorded in
/// `provenance` for the run's config when the value there is the same; "changed since the run
/// (--set or an edited config)" when it differs; "default" when the config's entry does not name
/// the key; "unknown (config files not read)" when the map has no entry for the config.
std::string SourceOf(const ProvenanceMap& provenance, const db::RunRow& run, const std::string& key,
                     const std::optional<std::string>& value_json);

/// One setting that differs between two runs, with where each run's value came from.
struct SourcedDiff {
  std::string key;
  std::optional<std::string> a;  ///< Compact JSON; nullopt when the setting is absent in run a.
  std::optional<std::string> b;
  std::string from_a;            ///< SourceOf for run a.
  std::string from_b;
};

/// The settings that differ between runs `a` and `b` (settings::DiffJson of their stored
/// settings), each with its sources. Throws DataError when a run's settings_json is not JSON.
std::vector<SourcedDiff> DiffRunSettings(const db::RunRow& a, const db::RunRow& b, const ProvenanceMap& provenance);

/// The stored settings of `run` as a JSON object ({} for a run recorded without settings).
/// Throws DataError naming the run when settings_json is not a JSON object.
nlohmann::ordered_json SettingsOf(const db::RunRow& run);

}  // namespace asv::report
