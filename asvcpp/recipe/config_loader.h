// Loading a recipe's configs: locate its files, parse and check all of them, and resolve named
// configs into typed settings through the layers
//
//   compiled defaults < init config < recipe (mfcc.conf path) < run config chain < --set
//
// and finally features.sampling_rate from mfcc.conf, as ASVtorch's post_update_call does.
// Every problem in the files (in the run-configs file: in the configs asked for and their
// parents) is collected; nothing is thrown for bad input until the caller asks (LoadConfigs
// throws one ConfigError carrying all diagnostics).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/base/diagnostic.h"
#include "asvcpp/recipe/recipe.h"
#include "parser/ast.h"

namespace asv::recipe {

/// The files of one recipe. `init_config` and `mfcc_conf` may be empty (none).
struct RecipeFiles {
  std::filesystem::path init_config;
  std::filesystem::path run_configs;
  std::filesystem::path mfcc_conf;  ///< mfcc.conf beside the init config (or run configs), if any.
};

struct LocateOptions {
  std::optional<std::filesystem::path> init_config;  ///< --init-config FILE
  std::optional<std::filesystem::path> run_configs;  ///< --run-configs FILE
  std::optional<std::filesystem::path> config_root;  ///< --config-root DIR (holds RECIPE/ folders)
};

/// Folders searched for `RECIPE/run_configs`, in order: $ASV_RUN_CONFIGS, ./run_configs, the
/// run_configs folder of the asvcpp source tree this binary was built from.
std::vector<std::filesystem::path> RunConfigsRoots();

/// Finds the recipe's files: `run_configs` (or `run_configs.py`) and `init_config` (or
/// `init_config.py`) in the first root holding RECIPE/, unless given explicitly. An explicit
/// --run-configs without --init-config uses no init config unless one lies beside it.
/// Throws ConfigError listing the folders searched when nothing is found.
RecipeFiles LocateRecipeFiles(const std::string& recipe, const LocateOptions& options);

/// One resolved config, ready to run.
struct LoadedConfig {
  std::string name;
  std::vector<std::string> parents;  ///< Ancestors in the order they were applied (no self).
  std::unique_ptr<RecipeSettings> settings;
};

/// The parsed and checked files of a recipe; resolves any number of configs from them.
class ConfigSet {
 public:
  /// Parses both files and checks every assignment of every block against the recipe's
  /// settings (what `asvrun list` reports). Problems (errors and warnings) go to `diags`.
  ConfigSet(const Recipe& recipe, RecipeFiles files, Diagnostics& diags);
  /// As above, but reads and checks only the blocks configs `names` need (their chains; see
  /// parser::ParseRunConfigsFor): problems in other configs of the file are not reported, and
  /// Resolve knows only these configs. What `asvrun RECIPE CONFIG...` and `asvrun show` use; no
  /// names: the init config only.
  ConfigSet(const Recipe& recipe, RecipeFiles files, const std::vector<std::string>& names, Diagnostics& diags);

  const RecipeFiles& files() const noexcept { return files_; }
  const parser::RunConfigsFile& run_configs() const noexcept { return run_configs_; }
  const parser::InitConfigFile& init_config() const noexcept { return init_config_; }

  /// Resolves config `name` from scratch with the given `--set` overrides. Returns nullptr
  /// after reporting into `diags` when the name is unknown or its chain is broken. Problems of
  /// the files' values are not reported again (the constructor did; such values are left
  /// unset); those of the overrides and of the settings together (settings::Validate) are.
  std::unique_ptr<LoadedConfig> Resolve(const std::string& name, const std::vector<std::string>& overrides,
                                        Diagnostics& diags) const;

  /// Settings with the init config (and recipe layer) applied but no run config: what
  /// `asvrun runs` needs to find the output folder.
  std::unique_ptr<RecipeSettings> InitSettings(Diagnostics& diags) const;

 private:
  // Both public constructors: the whole run-configs file when `names` is null.
  ConfigSet(const Recipe& recipe, RecipeFiles files, const std::vector<std::string>* names, Diagnostics& diags);
  void ApplyBaseLayers(RecipeSettings& settings, Diagnostics& diags) const;

  const Recipe& recipe_;
  RecipeFiles files_;
  parser::InitConfigFile init_config_;
  parser::RunConfigsFile run_configs_;
};

/// Loads and resolves `names` (each from scratch), reading only their chains of the run-configs
/// file. Warnings are rendered into `*warnings` when given and nothing is wrong (the first 50,
/// then their count). Throws ConfigError with every diagnostic when anything is wrong in the init
/// config or in these configs' chains, so that nothing runs; problems in other configs of the file
/// do not stop them.
std::vector<LoadedConfig> LoadConfigs(const Recipe& recipe, const RecipeFiles& files,
                                      const std::vector<std::string>& names,
                                      const std::vector<std::string>& overrides, std::string* warnings);

}  // namespace asv::recipe
