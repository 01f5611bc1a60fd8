#include "recipes/voxceleb/xvector/stage_prepare.h"

#include <algorithm>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/voxceleb.h"
#include "asvcpp/recipe/run_context.h"
#include "recipes/voxceleb/xvector/xvector_recipe.h"

namespace asv::recipes::voxceleb_xvector {
namespace {

namespace stdfs = std::filesystem;

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none)" : out;
}

}  // namespace

std::vector<std::string> PreparableDatasets() {
  return {"voxceleb1", "voxceleb2"};
}

std::vector<PreparationJob> ResolvePreparationJobs(const std::optional<std::vector<std::string>>& requested,
                                                   const settings::OrderedDict<std::string>& datasets) {
  const std::vector<std::string> known = PreparableDatasets();
  const auto is_known = [&](const std::string& n) { return std::find(known.begin(), known.end(), n) != known.end(); };
  std::vector<std::string> names;
  if (requested) {
    for (const auto& name : *requested) {
      if (name == "voxceleb2_cat") {
        throw DataError(
            "recipe.preparation_datasets: 'voxceleb2_cat' is prepared together with 'voxceleb2'; ask for 'voxceleb2'");
      }
      if (!is_known(name)) {
        throw DataError(fmt::format(
            "recipe.preparation_datasets: the voxceleb/xvector recipe cannot prepare dataset '{}' (it knows: {})", name,
            JoinNames(known)));
      }
      if (!datasets.Contains(name)) {
        throw DataError(fmt::format(
            "recipe.preparation_datasets names '{}', which paths.datasets does not give a corpus folder for "
            "(paths.datasets has: {})",
            name, JoinNames(datasets.Keys())));
      }
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  } else {
    for (const auto& [name, folder] : datasets) {
      if (is_known(name)) names.push_back(name);
    }
  }
  if (names.empty()) {
    throw DataError(fmt::format(
        requested ? "recipe.preparation_datasets is empty: nothing to prepare"
                  : "recipe.preparation_datasets is None (all) but paths.datasets names none of the datasets this "
                    "recipe can prepare ({}); paths.datasets has: {}",
        JoinNames(known), JoinNames(datasets.Keys())));
  }
  std::vector<PreparationJob> jobs;
  for (const auto& name : names) {
    const std::string& folder = *datasets.Find(name);
    std::error_code ec;
    stdfs::path corpus = stdfs::absolute(folder, ec);
    jobs.push_back({name, (ec ? stdfs::path(folder) : corpus).lexically_normal()});
  }
  return jobs;
}

void RunPrepareStage(recipe::RunContext& context) {
  const XvectorSettings& settings = SettingsOf(context);
  const auto& paths = settings.common().paths;
  // Everything is checked before the first file is written.
  const std::vector<PreparationJob> jobs =
      ResolvePreparationJobs(settings.recipe().preparation_datasets, paths.datasets);
  const stdfs::path dataset_root = context.feature_and_list_folder();

  for (const auto& job : jobs) {
    ASV_LOG(Info, "preparing {} from {}", job.name, job.corpus.string());
    std::vector<data::PreparedDataset> result;
    if (job.name == "voxceleb1") {
      data::VoxCelebOptions options;
      // Every trial list the settings name is prepared, not only VoxCeleb's own files.
      if (settings.recipe().trial_dataset == job.name) {
        for (const auto& [name, file] : settings.recipe().trial_lists) options.trial_list_files.push_back(file);
      }
      result.push_back(data::PrepareVoxCeleb1(job.corpus, dataset_root, options));
    } else {
      result = data::PrepareVoxCeleb2(job.corpus, dataset_root);
    }
    // PrepareVoxCeleb1/2 log the one-line summary of each list folder (utterances, speakers,
    // trial lists, trials).
    for (const auto& ds : result) context.RecordFolderArtifacts(ds.list_folder, "list");
  }
}

}  // namespace asv::recipes::voxceleb_xvector
