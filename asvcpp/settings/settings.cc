#include "asvcpp/settings/settings.h"

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/text.h"
#include "asvcpp/settings/name_checks.h"

namespace asv::settings {

namespace {

std::string StripArchitecturePrefix(const std::string& s) {
  const std::string prefix = kAsvtorchArchitecturePrefix;
  return s.compare(0, prefix.size(), prefix) == 0 ? s.substr(prefix.size()) : s;
}

}  // namespace

std::optional<std::string> NetworkSettings::CheckNetworkClass(const parser::Value& value) {
  const std::string& written = value.as_string();
  const std::string name = StripArchitecturePrefix(written);
  if (EnumFromName<nnet::Architecture>(name)) return std::nullopt;
  const std::vector<std::string> known = EnumChoices<nnet::Architecture>();
  const std::string list = fmt::format("{}", fmt::join(known, ", "));
  if (name.find('.') != std::string::npos) {
    return fmt::format(
        "network.network_class '{}' names a custom Python class; asvcpp implements {} (plain or as {}<Name>)",
        written, list, kAsvtorchArchitecturePrefix);
  }
  std::string message = fmt::format("network.network_class '{}' is not a known architecture", written);
  if (auto close = text::ClosestMatch(name, known)) message += fmt::format(" (did you mean '{}'?)", *close);
  return message + fmt::format("; known: {}", list);
}

std::string NetworkSettings::ArchitectureName() const { return StripArchitecturePrefix(network_class); }

nnet::Architecture NetworkSettings::Architecture() const {
  if (auto architecture = EnumFromName<nnet::Architecture>(ArchitectureName())) return *architecture;
  throw ConfigError(*CheckNetworkClass(parser::Value::String(network_class)));
}

void NetworkSettings::Validate(Validator& v) const {
  v.Require(max_clip_size >= min_clip_size, {"min_clip_size", "max_clip_size"},
            fmt::format("network.max_clip_size ({}) must be >= network.min_clip_size ({})", max_clip_size,
                        min_clip_size));
}

void IVectorSettings::Validate(Validator& v) const {
  v.Require(n_component_batches > 0 && num_gaussians % n_component_batches == 0,
            {"num_gaussians", "n_component_batches"},
            fmt::format("ivector.n_component_batches ({}) must divide ivector.num_gaussians ({})", n_component_batches,
                        num_gaussians));
}

void AddStandardGroups(SettingsTree& tree, Settings& settings) {
  tree.AddGroup("paths", settings.paths);
  tree.AddGroup("computing", settings.computing);
  tree.AddGroup("network", settings.network);
  tree.AddGroup("posterior_extraction", settings.posterior_extraction);
  tree.AddGroup("ivector", settings.ivector);
  tree.AddGroup("features", settings.features);
  tree.AddGroup("backend", settings.backend);
  tree.AddGroup("diarization", settings.diarization);
  AddPathChecks(tree);
}

}  // namespace asv::settings
