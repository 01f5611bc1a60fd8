// `recipe.*` settings of the x-vector recipes, with voxceleb/xvector's defaults (sitw/xvector's
// recipe_settings.h derives its defaults from this struct).
//
// The first six fields are ASVtorch's RecipeSettings (asvtorch/recipes/voxceleb/xvector/run.py
// and asvtorch/recipes/sitw/xvector/run.py), with the same names and defaults. The others replace
// values ASVtorch hard-codes in run.py: training and PLDA data, excluded utterances, utterance
// filters, the trial lists and the seed of the random PLDA speaker subset. Their defaults
// reproduce ASVtorch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "asvcpp/settings/settings_tree.h"
#include "asvcpp/settings/types.h"

namespace asv::recipes::xvector {

struct RecipeSettings {
  int start_stage = 0;
  int end_stage = 100;
  std::optional<std::vector<std::string>> preparation_datasets;
  std::vector<std::string> feature_extraction_datasets;
  settings::OrderedDict<int> augmentation_datasets;
  std::optional<int> selected_epoch;

  std::vector<std::string> training_datasets = {"voxceleb2_cat_combined"};
  int min_speech_frames = 500;
  int min_utterances_per_speaker = 10;
  std::vector<std::string> plda_datasets = {"voxceleb2_cat_combined"};
  std::optional<std::vector<std::string>> evaluation_plda_datasets;
  int plda_speakers_during_training = 500;
  std::vector<std::string> excluded_utterance_prefixes;
  std::string excluded_speakers_file;
  std::string trial_dataset = "voxceleb1";
  settings::OrderedDict<std::string> trial_lists = {
      {"vox1_original", "veri_test.txt"},
      {"vox1_cleaned", "veri_test2.txt"},
      {"vox1_extended_original", "list_test_all.txt"},
      {"vox1_extended_cleaned", "list_test_all2.txt"},
      {"vox1_hard_original", "list_test_hard.txt"},
      {"vox1_hard_cleaned", "list_test_hard2.txt"},
  };
  std::vector<std::string> training_trial_lists = {"vox1_original", "vox1_cleaned"};
  int seed = 0;

  /// The PLDA data of the evaluations during training: evaluation_plda_datasets, else plda_datasets.
  const std::vector<std::string>& EvaluationPldaDatasets() const {
    return evaluation_plda_datasets ? *evaluation_plda_datasets : plda_datasets;
  }

  /// Whether stage `stage` lies in [start_stage, end_stage].
  bool StageSelected(int stage) const { return start_stage <= stage && stage <= end_stage; }

  template <class V>
  void Register(V& v) {
    v("start_stage", start_stage,
      "First stage to run (0 prepare, 1 features, 2 augmentation, 5 training, "
      "7 embeddings, 9 scoring)")
        .Range(0, 1000);
    v("end_stage", end_stage, "Last stage to run").Range(0, 1000);
    v("preparation_datasets", preparation_datasets, "Datasets prepared by stage 0 (voxceleb1, voxceleb2); None: all");
    v("feature_extraction_datasets", feature_extraction_datasets, "Datasets whose features stage 1 computes");
    v("augmentation_datasets", augmentation_datasets,
      "Stage 2: dataset -> total size factor of clean + augmented data (5: all four augmented copies); makes "
      "<dataset>_aug_subset and <dataset>_combined")
        .Range(1, 5);
    v("selected_epoch", selected_epoch,
      "Network epoch used by stage 7; None: the last of the contiguous epoch.1..N checkpoints")
        .Range(1, 1e6);
    v("training_datasets", training_datasets, "Datasets whose utterances train the network (stage 5)");
    v("min_speech_frames", min_speech_frames, "Training utterances with fewer speech frames are dropped").Range(0, 1e9);
    v("min_utterances_per_speaker", min_utterances_per_speaker,
      "Training speakers with fewer utterances (after the frame filter) are dropped")
        .Range(1, 1e6);
    v("plda_datasets", plda_datasets, "Datasets whose embeddings train the back-end and PLDA (stages 7 and 9)");
    v("evaluation_plda_datasets", evaluation_plda_datasets,
      "Datasets whose random speakers train the back end of the EER evaluations during training (stage 5); "
      "None: plda_datasets");
    v("plda_speakers_during_training", plda_speakers_during_training,
      "Random speakers of the evaluation PLDA data used for the EER evaluations during training")
        .Range(1, 1e7);
    v("excluded_utterance_prefixes", excluded_utterance_prefixes,
      "Utterances whose id starts with one of these are left out of the training and PLDA data (stages 5 and "
      "7), with their augmented copies");
    v("excluded_speakers_file", excluded_speakers_file,
      "File of speaker ids (one per line) whose utterances are left out of the training and PLDA data (stages "
      "5 and 7), e.g. the VoxCeleb1 speakers who also speak in SITW; '': none");
    v("trial_dataset", trial_dataset, "Dataset holding the trial utterances and trial lists");
    v("trial_lists", trial_lists, "Trial lists scored by stage 9: display name -> file in the trial dataset");
    v("training_trial_lists", training_trial_lists,
      "Display names (keys of trial_lists) scored after each train call to drive early stopping");
    v("seed", seed, "Seed of the random PLDA speaker subset used during training and of stage 2's draws")
        .Range(0, 2147483647);
  }

  void Validate(settings::Validator& v) const {
    v.Require(start_stage <= end_stage, {"start_stage", "end_stage"},
              fmt::format("recipe.end_stage ({}) must be >= recipe.start_stage ({})", end_stage, start_stage));
    for (const auto& name : training_trial_lists) {
      v.Require(trial_lists.Contains(name), {"training_trial_lists", "trial_lists"},
                fmt::format("recipe.training_trial_lists names '{}', which is not a key of recipe.trial_lists", name));
    }
  }
};

}  // namespace asv::recipes::xvector
