#include "recipes/shared/xvector/stage_inputs.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "asvcpp/data/data_dir.h"
#include "asvcpp/prep/dataset_features.h"
#include "asvcpp/recipe/run_context.h"
#include "asvcpp/train/checkpoint.h"
#include "recipes/shared/recipe_stages.h"
#include "recipes/shared/xvector/xvector_settings.h"

namespace asv::recipes::xvector {
namespace {

namespace stdfs = std::filesystem;

bool Exists(const stdfs::path& path) {
  std::error_code ec;
  return stdfs::exists(path, ec);
}

// What the stages running before the checked one produce.
struct Produced {
  std::set<std::string> lists;     // datasets whose lists stage 0 writes
  std::set<std::string> features;  // datasets whose features stages 1 and 2 write
  bool checkpoints = false;        // stage 5
  bool embeddings = false;         // stage 7
};

Produced ProducedBy(const XvectorSettings& s, const std::vector<int>& earlier, const std::vector<std::string>& known) {
  const auto& r = s.recipe();
  const auto runs = [&](int stage) { return std::find(earlier.begin(), earlier.end(), stage) != earlier.end(); };
  Produced p;
  if (runs(0)) {
    try {
      for (const auto& job : shared::ResolvePreparationJobs(r.preparation_datasets, s.common().paths.datasets, known)) {
        for (const auto& dataset : shared::PreparedDatasetsOf(job)) p.lists.insert(dataset);
      }
    } catch (const std::exception&) {
      // Reported as stage 0's own problem.
    }
  }
  if (runs(1)) p.features.insert(r.feature_extraction_datasets.begin(), r.feature_extraction_datasets.end());
  if (runs(2)) {
    for (const auto& [dataset, factor] : r.augmentation_datasets) {
      p.features.insert(dataset + "_aug_subset");
      p.features.insert(dataset + "_combined");
    }
  }
  p.checkpoints = runs(5);
  p.embeddings = runs(7);
  return p;
}

class Checker {
 public:
  Checker(const XvectorSettings& s, recipe::RunContext& context, const Produced& produced)
      : s_(s), root_(context.feature_and_list_folder()), system_(context.system_folder()), produced_(produced) {}

  void Folder(const stdfs::path& folder, const std::string& setting) {
    std::error_code ec;
    if (!stdfs::is_directory(folder, ec)) Add(fmt::format("{}: no such folder ({})", folder.string(), setting));
  }
  void Lists(const std::string& dataset, const std::string& setting) {
    if (produced_.lists.count(dataset) > 0) return;
    const stdfs::path wav_scp = data::ListFolder(root_, dataset) / data::kWavScp;
    if (!Exists(wav_scp)) {
      Add(fmt::format("{}: missing: dataset '{}' of {} is not prepared (stage 0 writes it)", wav_scp.string(), dataset,
                      setting));
    }
  }
  void Features(const std::string& dataset, const std::string& setting) {
    if (produced_.features.count(dataset) > 0) return;
    const stdfs::path feats_scp = data::ListFolder(root_, dataset) / data::kFeatsScp;
    if (!Exists(feats_scp)) {
      Add(fmt::format("{}: missing: dataset '{}' of {} has no features (stage 1, or stage 2 for _combined, writes "
                      "them)",
                      feats_scp.string(), dataset, setting));
    }
  }
  void Features(const std::vector<std::string>& datasets, const std::string& setting) {
    for (const auto& d : datasets) Features(d, setting);
  }
  void MfccConf() {
    try {
      prep::FeatureOptionsFromSettings(s_.common());
    } catch (const std::exception& e) {
      Add(fmt::format("{} (paths.kaldi_mfcc_conf_file)", e.what()));
    }
  }
  // At least one of the trial lists `names` (keys of recipe.trial_lists) must exist.
  void TrialLists(const std::vector<std::string>& names, const std::string& setting) {
    if (names.empty() || AnyTrialList(names)) return;
    Add(fmt::format("{}: no trial list of {} exists (stage 0 writes them)",
                    data::ListFolder(root_, s_.recipe().trial_dataset).string(), setting));
  }
  // Checkpoint of `epoch`, which `why` needs (stage 5 of this run writes new ones).
  void Checkpoint(int epoch, const std::string& why) {
    if (produced_.checkpoints) return;
    const stdfs::path checkpoint = train::CheckpointPath(system_ / "networks", epoch);
    if (!Exists(checkpoint)) {
      Add(fmt::format("{}: missing: {} (stage 5 writes the checkpoints)", checkpoint.string(), why));
    }
  }
  // Whether any of the trial lists `names` exists or stage 0 of this run writes them.
  bool AnyTrialList(const std::vector<std::string>& names) const {
    const auto& r = s_.recipe();
    if (produced_.lists.count(r.trial_dataset) > 0) return !names.empty();
    for (const auto& name : names) {
      const std::string* file = r.trial_lists.Find(name);
      if (file != nullptr && Exists(data::ListFolder(root_, r.trial_dataset) / *file)) return true;
    }
    return false;
  }
  void Embeddings() {
    if (produced_.embeddings) return;
    for (const char* name : {"plda.scp", "trial.scp", "plda.utt2spk"}) {
      const stdfs::path path = system_ / "embeddings" / name;
      if (!Exists(path)) Add(fmt::format("{}: missing (stage 7 writes the embeddings)", path.string()));
    }
  }

  std::vector<std::string> problems;

 private:
  void Add(std::string problem) { problems.push_back(std::move(problem)); }

  const XvectorSettings& s_;
  stdfs::path root_;
  stdfs::path system_;
  const Produced& produced_;
};

}  // namespace

std::vector<std::string> MissingStageInputs(const recipe::StageInfo& stage, recipe::RunContext& context,
                                            const std::vector<int>& earlier, const std::vector<std::string>& known) {
  const auto& s = dynamic_cast<const XvectorSettings&>(context.settings());
  const auto& r = s.recipe();
  const auto& paths = s.common().paths;
  const Produced produced = ProducedBy(s, earlier, known);
  Checker check(s, context, produced);
  std::vector<std::string> trial_names;
  for (const auto& [name, file] : r.trial_lists) trial_names.push_back(name);

  if (stage.name == "prepare") {
    try {
      for (const auto& job : shared::ResolvePreparationJobs(r.preparation_datasets, paths.datasets, known)) {
        for (auto& problem : shared::MissingCorpusParts(job, fmt::format("paths.datasets['{}']", job.name))) {
          check.problems.push_back(std::move(problem));
        }
      }
    } catch (const std::exception& e) {
      check.problems.push_back(e.what());
    }
  } else if (stage.name == "features") {
    check.MfccConf();
    for (const auto& d : r.feature_extraction_datasets) check.Lists(d, "recipe.feature_extraction_datasets");
  } else if (stage.name == "augmentation") {
    if (!r.augmentation_datasets.empty()) {
      check.Folder(paths.musan_folder, "paths.musan_folder");
      check.Folder(paths.rirs_folder.empty() ? stdfs::path(paths.kaldi_recipe_folder) / "RIRS_NOISES"
                                             : stdfs::path(paths.rirs_folder),
                   paths.rirs_folder.empty() ? "paths.kaldi_recipe_folder/RIRS_NOISES" : "paths.rirs_folder");
      check.MfccConf();
      for (const auto& [d, factor] : r.augmentation_datasets) check.Features(d, "recipe.augmentation_datasets");
    }
  } else if (stage.name == "train") {
    check.Features(r.training_datasets, "recipe.training_datasets");
    // Without any training trial list, training runs without EER evaluations (a warning).
    if (check.AnyTrialList(r.training_trial_lists)) {
      check.Features(r.plda_datasets, "recipe.plda_datasets");
      check.Features(r.trial_dataset, "recipe.trial_dataset");
    }
    const int resume = s.common().network.resume_epoch;
    if (resume > 0) check.Checkpoint(resume, fmt::format("network.resume_epoch = {}", resume));
  } else if (stage.name == "embeddings") {
    if (r.selected_epoch) {
      check.Checkpoint(*r.selected_epoch, fmt::format("recipe.selected_epoch = {}", *r.selected_epoch));
    } else {
      check.Checkpoint(1, "no trained network");
    }
    check.Features(r.plda_datasets, "recipe.plda_datasets");
    check.Features(r.trial_dataset, "recipe.trial_dataset");
    check.TrialLists(trial_names, "recipe.trial_lists");
  } else if (stage.name == "scoring") {
    check.Embeddings();
    check.TrialLists(trial_names, "recipe.trial_lists");
  }
  return check.problems;
}

}  // namespace asv::recipes::xvector
