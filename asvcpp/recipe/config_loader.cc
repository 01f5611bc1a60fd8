#include "asvcpp/recipe/config_loader.h"

#include <fmt/format.h>

#include <cstdlib>

#include "asvcpp/base/error.h"
#include "asvcpp/settings/binding.h"
#include "asvcpp/settings/mfcc_conf.h"
#include "parser/parse.h"
#include "parser/resolve.h"

#ifndef ASV_SOURCE_RUN_CONFIGS
#define ASV_SOURCE_RUN_CONFIGS ""
#endif

namespace asv::recipe {
namespace stdfs = std::filesystem;

namespace {

stdfs::path FirstExisting(const stdfs::path& folder, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (stdfs::is_regular_file(folder / name)) return folder / name;
  }
  return {};
}

// A value set by the recipe itself between two layers, shown as "recipe (<file>)".
parser::ResolvedConfig RecipeLayer(const std::string& key, parser::Value value, const stdfs::path& from) {
  parser::ResolvedConfig layer;
  parser::ResolvedValue resolved;
  resolved.value = std::move(value);
  resolved.provenance.source = parser::Provenance::Source::kRecipe;
  resolved.provenance.pos = SourcePos{from.string(), 0, 0};
  layer.Set(key, std::move(resolved));
  return layer;
}

// Paths inside the current folder are shown relative to it in provenance and messages.
stdfs::path Display(const stdfs::path& path) {
  if (path.empty()) return path;
  std::error_code ec;
  const stdfs::path rel = stdfs::relative(path, stdfs::current_path(), ec);
  if (ec || rel.empty() || *rel.begin() == "..") return path;
  return rel;
}

}  // namespace

std::vector<stdfs::path> RunConfigsRoots() {
  std::vector<stdfs::path> roots;
  if (const char* env = std::getenv("ASV_RUN_CONFIGS"); env != nullptr && *env != '\0') roots.emplace_back(env);
  roots.emplace_back(stdfs::current_path() / "run_configs");
  if (std::string(ASV_SOURCE_RUN_CONFIGS) != "") roots.emplace_back(ASV_SOURCE_RUN_CONFIGS);
  return roots;
}

RecipeFiles LocateRecipeFiles(const std::string& recipe, const LocateOptions& options) {
  RecipeFiles files;
  if (options.run_configs) {
    files.run_configs = *options.run_configs;
    if (options.init_config) {
      files.init_config = *options.init_config;
    } else {
      files.init_config = FirstExisting(files.run_configs.parent_path().empty() ? "." : files.run_configs.parent_path(),
                                        {"init_config", "init_config.py"});
    }
  } else {
    std::vector<stdfs::path> roots;
    if (options.config_root) {
      roots.push_back(*options.config_root);
    } else {
      roots = RunConfigsRoots();
    }
    std::string searched;
    for (const auto& root : roots) {
      const stdfs::path folder = root / recipe;
      const stdfs::path run = FirstExisting(folder, {"run_configs", "run_configs.py"});
      if (!run.empty()) {
        files.run_configs = run;
        files.init_config = options.init_config ? *options.init_config
                                                : FirstExisting(folder, {"init_config", "init_config.py"});
        break;
      }
      searched += fmt::format("\n  {}", folder.string());
    }
    if (files.run_configs.empty()) {
      throw ConfigError(fmt::format(
          "no run configs for recipe '{}': looked for run_configs in{}\n"
          "(give the files with --run-configs FILE [--init-config FILE], or a folder with --config-root)",
          recipe, searched));
    }
  }
  const stdfs::path beside =
      !files.init_config.empty() ? files.init_config.parent_path() : files.run_configs.parent_path();
  files.mfcc_conf = FirstExisting(beside.empty() ? "." : beside, {"mfcc.conf"});
  files.init_config = Display(files.init_config);
  files.run_configs = Display(files.run_configs);
  files.mfcc_conf = Display(files.mfcc_conf);
  return files;
}

ConfigSet::ConfigSet(const Recipe& recipe, RecipeFiles files, Diagnostics& diags)
    : ConfigSet(recipe, std::move(files), nullptr, diags) {}

ConfigSet::ConfigSet(const Recipe& recipe, RecipeFiles files, const std::vector<std::string>& names,
                     Diagnostics& diags)
    : ConfigSet(recipe, std::move(files), &names, diags) {}

ConfigSet::ConfigSet(const Recipe& recipe, RecipeFiles files, const std::vector<std::string>* names,
                     Diagnostics& diags)
    : recipe_(recipe), files_(std::move(files)) {
  if (!files_.init_config.empty()) init_config_ = parser::ParseInitConfigFile(files_.init_config.string(), diags);
  const std::string path = files_.run_configs.string();
  run_configs_ = names != nullptr ? parser::ParseRunConfigsFileFor(path, *names, diags)
                                  : parser::ParseRunConfigsFile(path, diags);
  parser::CheckRunConfigs(run_configs_, diags);
  const auto probe = recipe_.NewSettings();
  settings::ValidateAssignments(probe->tree(), init_config_.assignments, diags);
  settings::ValidateRunConfigs(probe->tree(), run_configs_, diags);
}

void ConfigSet::ApplyBaseLayers(RecipeSettings& settings, Diagnostics& diags) const {
  // The init config's problems were reported when it was read (the constructor).
  settings::Bind(settings.tree(), parser::ResolveInit(init_config_), diags, settings::BindProblems::kSkip);
  if (!files_.mfcc_conf.empty()) {
    // ASVtorch's run.py points paths.kaldi_mfcc_conf_file at the recipe's mfcc.conf after the
    // init config and before the run configs.
    settings::Bind(settings.tree(),
                   RecipeLayer("paths.kaldi_mfcc_conf_file", parser::Value::String(files_.mfcc_conf.string()),
                               files_.mfcc_conf),
                   diags);
  }
}

std::unique_ptr<RecipeSettings> ConfigSet::InitSettings(Diagnostics& diags) const {
  auto settings = recipe_.NewSettings();
  ApplyBaseLayers(*settings, diags);
  return settings;
}

std::unique_ptr<LoadedConfig> ConfigSet::Resolve(const std::string& name, const std::vector<std::string>& overrides,
                                                 Diagnostics& diags) const {
  parser::Resolver resolver(run_configs_);  // Not parser::Resolve: no copy of the result.
  const parser::ResolvedConfig* resolved = resolver.Resolve(name, diags);
  if (resolved == nullptr) return nullptr;
  auto loaded = std::make_unique<LoadedConfig>();
  loaded->name = name;
  loaded->parents.assign(resolved->chain.begin(), resolved->chain.end());
  if (!loaded->parents.empty() && loaded->parents.back() == name) loaded->parents.pop_back();
  loaded->settings = recipe_.NewSettings();
  auto& tree = loaded->settings->tree();
  ApplyBaseLayers(*loaded->settings, diags);
  // Every value comes from a block the constructor validated, which reported its problems.
  settings::Bind(tree, *resolved, diags, settings::BindProblems::kSkip);
  for (const auto& arg : overrides) settings::ApplyOverride(tree, arg, diags);
  settings::Validate(tree, diags);

  // ASVtorch's post_update_call: the sample rate comes from the MFCC options file.
  const std::string& mfcc = loaded->settings->common().paths.kaldi_mfcc_conf_file;
  if (stdfs::is_regular_file(mfcc)) {
    try {
      if (const auto rate = settings::ReadSampleFrequency(mfcc)) {
        settings::Bind(tree, RecipeLayer("features.sampling_rate", parser::Value::Int(*rate), mfcc), diags);
      }
    } catch (const ConfigError& e) {
      for (const auto& d : e.diagnostics()) diags.Add(d.severity, d.pos, d.message, d.source_line);
    } catch (const DataError& e) {
      diags.Error(SourcePos{mfcc, 0, 0}, e.what());
    }
  }
  return loaded;
}

std::vector<LoadedConfig> LoadConfigs(const Recipe& recipe, const RecipeFiles& files,
                                      const std::vector<std::string>& names,
                                      const std::vector<std::string>& overrides, std::string* warnings) {
  Diagnostics diags;
  ConfigSet set(recipe, files, names, diags);
  std::vector<LoadedConfig> loaded;
  if (names.empty()) diags.Error(SourcePos{}, "give one or more run configs to run");
  for (const auto& name : names) {
    Diagnostics config_diags;
    auto config = set.Resolve(name, overrides, config_diags);
    diags.AppendUnique(config_diags);
    if (config) loaded.push_back(std::move(*config));
  }
  // With errors the warnings are part of the ConfigError's message (which shows the first 50
  // errors and counts the rest): rendering all of them here too cost as much as the errors.
  if (warnings != nullptr && !diags.has_errors()) *warnings += diags.RenderWarnings();
  std::move(diags).ThrowIfErrors();
  return loaded;
}

}  // namespace asv::recipe
