// `asvrun report`: the experiment database as one self-contained HTML page (asvcpp/report).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "asvcpp/base/diagnostic.h"
#include "asvcpp/base/error.h"
#include "asvcpp/db/database.h"
#include "asvcpp/recipe/config_loader.h"
#include "asvcpp/report/report_html.h"
#include "asvcpp/report/settings_diff.h"
#include "recipes/catalog.h"
#include "tools/asvrun/commands.h"

namespace asv::tools {
namespace stdfs = std::filesystem;

namespace {

// Where the settings of each config come from, resolved now from the recipe's config files
// (found as for `asvrun show`, with the command's --init-config, --run-configs, --config-root).
// A recipe or config that cannot be resolved (unknown now, files missing or broken) is left out:
// the page then says its sources are unknown.
report::ProvenanceMap ResolveProvenance(const ConfigSource& source,
                                        const std::vector<std::pair<std::string, std::string>>& configs) {
  std::map<std::string, std::vector<std::string>> by_recipe;
  for (const auto& [recipe, config] : configs) by_recipe[recipe].push_back(config);
  report::ProvenanceMap out;
  for (const auto& [recipe_name, names] : by_recipe) {
    try {
      const auto& recipe = recipes::FindRecipe(recipe_name);
      ConfigSource recipe_source = source;
      recipe_source.recipe = recipe_name;
      Diagnostics diags;
      const recipe::ConfigSet set(recipe, Locate(recipe_source), diags);
      for (const auto& name : names) {
        Diagnostics config_diags;
        const auto loaded = set.Resolve(name, {}, config_diags);
        if (loaded) out[report::ConfigKey(recipe_name, name)] = report::SourcesOf(loaded->settings->tree());
      }
    } catch (const std::exception& e) {
      const std::string what = e.what();
      fmt::print(stderr, "asvrun report: where the settings of {} came from is unknown: {}\n", recipe_name,
                 what.substr(0, what.find('\n')));
    }
  }
  return out;
}

}  // namespace

int Report(const ReportOptions& options) {
  const stdfs::path path = SelectDatabase(options.selection);
  if (path.empty()) throw DbError("no experiment database yet: no run has been recorded");
  fs::CheckOutputIsNotInput({"--out", options.out}, DatabaseFiles(path));
  db::DatabaseOptions db_options;
  db_options.read_only = true;
  db::Database database(path, db_options);
  report::ReportOptions report;
  if (options.selection.recipe_given) report.filter.recipe = options.selection.source.recipe;
  if (!options.config.empty()) report.filter.config = options.config;
  if (!options.trial_list.empty()) report.filter.trial_list = options.trial_list;
  if (options.stage >= 0) report.filter.stage = options.stage;
  report.title = options.title.empty() ? fmt::format("asvcpp experiments: {}", DbName(path)) : options.title;
  report.resolve_provenance = [&options](const std::vector<std::pair<std::string, std::string>>& configs) {
    return ResolveProvenance(options.selection.source, configs);
  };
  const std::size_t bytes = report::WriteReport(database, report, options.out);
  fmt::print("{}: report of {} ({:.1f} MB)\n", options.out, DbName(path), static_cast<double>(bytes) / 1e6);
  return kExitOk;
}

}  // namespace asv::tools
