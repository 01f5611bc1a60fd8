#include "asvcpp/report/settings_diff.h"

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/settings/dump.h"

namespace asv::report {

std::map<std::string, SettingSource> SourcesOf(const settings::SettingsTree& tree) {
  std::map<std::string, SettingSource> out;
  for (const auto& group : tree.groups()) {
    for (const auto& field : group.fields) {
      using Source = parser::Provenance::Source;
      std::string origin;
      switch (field.provenance.source) {
        case Source::kDefault: continue;
        case Source::kInitConfig: origin = "init_config"; break;
        case Source::kRecipe: origin = "recipe"; break;
        case Source::kRunConfig: origin = field.provenance.block; break;
        case Source::kCommandLine: origin = "--set"; break;
      }
      out[field.key()] = {origin, settings::ValueToJson(field.get()).dump()};
    }
  }
  return out;
}

std::string ConfigKey(const std::string& recipe, const std::string& config) { return recipe + "/" + config; }

std::string SourceOf(const ProvenanceMap& provenance, const db::RunRow& run, const std::string& key,
                     const std::optional<std::string>& value_json) {
  const auto config = provenance.find(ConfigKey(run.info.recipe, run.info.config));
  if (config == provenance.end()) return "unknown (config files not read)";
  const auto source = config->second.find(key);
  if (source == config->second.end()) return "default";
  if (!value_json || *value_json != source->second.value_json) return "changed since the run (--set or an edited config)";
  return source->second.origin;
}

nlohmann::ordered_json SettingsOf(const db::RunRow& run) {
  if (run.info.settings_json.empty()) return nlohmann::ordered_json::object();
  nlohmann::ordered_json json = nlohmann::ordered_json::parse(run.info.settings_json, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    throw DataError(fmt::format("run {}: its stored settings (runs.settings_json) are not a JSON object", run.id));
  }
  return json;
}

std::vector<SourcedDiff> DiffRunSettings(const db::RunRow& a, const db::RunRow& b, const ProvenanceMap& provenance) {
  std::vector<SourcedDiff> out;
  for (auto& d : settings::DiffJson(SettingsOf(a), SettingsOf(b))) {
    SourcedDiff diff{d.key, d.a, d.b, SourceOf(provenance, a, d.key, d.a), SourceOf(provenance, b, d.key, d.b)};
    out.push_back(std::move(diff));
  }
  return out;
}

}  // namespace asv::report
