// `recipe.*` settings of sitw/xvector: the x-vector recipes' fields (recipes/shared/xvector/
// recipe_settings.h) with the data of ASVtorch's asvtorch/recipes/sitw/xvector/run.py as
// defaults:
//   training data  voxceleb1_cat_combined without the video id11111-G2QZRjUB_VM, and
//                  voxceleb2_cat_combined; utterances of >= 500 speech frames, speakers with
//                  >= 10 of them
//   PLDA data      during training: 500 random speakers of voxceleb1_cat_combined (without the
//                  excluded video); stage 7: voxceleb1_cat_combined and voxceleb2_cat_combined
//   trial lists    SITW eval core-core and core-multi (dataset `sitw`), both driving the EER
//                  stopper
#pragma once

#include "recipes/shared/xvector/recipe_settings.h"

namespace asv::recipes::sitw_xvector {

struct RecipeSettings : xvector::RecipeSettings {
  RecipeSettings() {
    training_datasets = {"voxceleb1_cat_combined", "voxceleb2_cat_combined"};
    plda_datasets = {"voxceleb1_cat_combined", "voxceleb2_cat_combined"};
    evaluation_plda_datasets = std::vector<std::string>{"voxceleb1_cat_combined"};
    excluded_utterance_prefixes = {"id11111-G2QZRjUB_VM"};
    trial_dataset = "sitw";
    trial_lists = {{"sitw_core_core", "sitw_trials_core_core.txt"}, {"sitw_core_multi", "sitw_trials_core_multi.txt"}};
    training_trial_lists = {"sitw_core_core", "sitw_core_multi"};
  }
};

}  // namespace asv::recipes::sitw_xvector
