// Both real ASVtorch files of voxceleb/xvector and of sitw/xvector resolve, through
// --init-config/--run-configs, to exactly the values ASVtorch computes, for every config in the
// file.
//
// Golden: tests/tools/asvtorch_golden/{voxceleb_xvector,sitw_xvector}.json, made by running
// ASVtorch's own settings code (commit 9c656dd of the SoftwareX release) with
//   ASVTORCH_COMMIT=9c656dd python3 tools/golden/asvtorch_resolve.py <asvtorch checkout>
//     tests/tools/asvtorch_configs/voxceleb_xvector/init_config.py
//     tests/tools/asvtorch_configs/voxceleb_xvector/run_configs.py (one command line)
// and
//   ASVTORCH_COMMIT=9c656dd python3 tools/golden/asvtorch_resolve.py --recipe sitw/xvector <asvtorch checkout>
//     tests/tools/asvtorch_configs/sitw_xvector/init_config.py
//     tests/tools/asvtorch_configs/sitw_xvector/run_configs.py (one command line)
// (see that script's docstring). The config files are verbatim copies of ASVtorch's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "asvcpp/recipe/config_loader.h"
#include "asvcpp/settings/dump.h"
#include "recipes/catalog.h"
#include "tests/build_paths.h"
#include "tests/tools/test_util.h"

namespace asv {
namespace {

namespace fs = std::filesystem;

// One ASVtorch recipe whose files asvcpp reads.
struct AsvtorchRecipe {
  std::string recipe;        // asvcpp's recipe of the same name
  fs::path config_dir;       // ASVtorch's init_config.py, run_configs.py and mfcc.conf
  fs::path golden;           // what ASVtorch's loader resolves every config of run_configs.py to
  std::size_t config_count;  // configs in run_configs.py
};

void PrintTo(const AsvtorchRecipe& r, std::ostream* os) { *os << r.recipe; }

AsvtorchRecipe Recipe(const std::string& recipe, const std::string& folder, std::size_t config_count) {
  const fs::path source(ASV_SOURCE_DIR);
  return {recipe, source / "tests/tools/asvtorch_configs" / folder,
          source / "tests/tools/asvtorch_golden" / (folder + ".json"), config_count};
}

class AsvtorchConfigsTest : public ::testing::TestWithParam<AsvtorchRecipe> {
 protected:
  const fs::path& ConfigDir() const { return GetParam().config_dir; }

  nlohmann::json Golden() const {
    std::ifstream in(GetParam().golden);
    return nlohmann::json::parse(in);
  }

  recipe::RecipeFiles AsvtorchFiles() const {
    recipe::LocateOptions options;
    options.init_config = ConfigDir() / "init_config.py";
    options.run_configs = ConfigDir() / "run_configs.py";
    return recipe::LocateRecipeFiles(GetParam().recipe, options);
  }
};

// Settings asvcpp adds to ASVtorch's groups (everything else must match key for key).
const std::set<std::string> kAsvcppOnlyKeys = {
    "recipe.training_datasets", "recipe.min_speech_frames", "recipe.min_utterances_per_speaker",
    "recipe.plda_datasets",     "recipe.plda_speakers_during_training", "recipe.trial_dataset",
    "recipe.evaluation_plda_datasets", "recipe.excluded_utterance_prefixes", "recipe.excluded_speakers_file",
    "recipe.trial_lists",       "recipe.training_trial_lists",          "recipe.seed",
    "backend.processing",       "backend.scoring",                      "backend.score_norm",
    "backend.p_target",         "backend.other_p_targets",              "backend.score_norm_method",
    "backend.score_norm_cohort", "backend.calibration",                  "backend.calibration_trials",
    "backend.calibration_speakers", "backend.keep_degenerate_calibration", "computing.allow_tf32",
    "computing.dist_backend",
    "network.allow_unverified_checkpoints", "network.precision",        "network.sync_batch_norm",
    "paths.rirs_folder", "paths.experiment_db", "paths.allow_experiment_db_on_network_fs"};

// Equality as ASVtorch's values compare: numbers by value (ASVtorch keeps `momentum = 0` as a
// Python int where asvcpp has the float 0.0), everything else structurally.
bool SameValue(const nlohmann::json& ours, const nlohmann::json& theirs) {
  if (ours.is_number() && theirs.is_number()) return ours.get<double>() == theirs.get<double>();
  if (ours.is_array() && theirs.is_array()) {
    if (ours.size() != theirs.size()) return false;
    for (std::size_t i = 0; i < ours.size(); ++i) {
      if (!SameValue(ours[i], theirs[i])) return false;
    }
    return true;
  }
  if (ours.is_object() && theirs.is_object()) {
    if (ours.size() != theirs.size()) return false;
    for (auto it = theirs.begin(); it != theirs.end(); ++it) {
      if (!ours.contains(it.key()) || !SameValue(ours[it.key()], it.value())) return false;
    }
    return true;
  }
  return ours == theirs;
}

TEST_P(AsvtorchConfigsTest, EveryConfigResolvesToAsvtorchValues) {
  const auto golden = Golden();
  ASSERT_EQ(golden["asvtorch_checkout_commit"], "9c656dd");
  const auto& recipe = recipes::FindRecipe(GetParam().recipe);
  const auto files = AsvtorchFiles();
  std::vector<std::string> names;
  for (auto it = golden["configs"].begin(); it != golden["configs"].end(); ++it) names.push_back(it.key());
  ASSERT_EQ(names.size(), GetParam().config_count);

  std::string warnings;
  const auto loaded = recipe::LoadConfigs(recipe, files, names, {}, &warnings);
  ASSERT_EQ(loaded.size(), names.size());
  for (const auto& config : loaded) {
    SCOPED_TRACE(config.name);
    const auto ours = nlohmann::json::parse(settings::ToJson(config.settings->tree()).dump());
    const auto& theirs = golden["configs"][config.name];
    for (auto it = theirs.begin(); it != theirs.end(); ++it) {
      ASSERT_TRUE(ours.contains(it.key())) << it.key();
      if (it.key() == "paths.kaldi_mfcc_conf_file") {
        EXPECT_EQ(fs::weakly_canonical(fs::absolute(ours[it.key()].get<std::string>())),
                  fs::weakly_canonical(ConfigDir() / "mfcc.conf"));
        continue;
      }
      EXPECT_TRUE(SameValue(ours[it.key()], it.value()))
          << it.key() << ": asvcpp " << ours[it.key()].dump() << ", ASVtorch " << it.value().dump();
    }
    std::set<std::string> extra;
    for (auto it = ours.begin(); it != ours.end(); ++it) {
      if (!theirs.contains(it.key())) extra.insert(it.key());
    }
    EXPECT_EQ(extra, kAsvcppOnlyKeys);
  }
}

TEST_P(AsvtorchConfigsTest, ResolvingNeedsNoneOfTheInitConfigPaths) {
  // The init config names /media/... folders that do not exist here.
  const auto datasets = Golden()["configs"]["score_net_netvlad"]["paths.datasets"];
  ASSERT_GE(datasets.size(), 2u);
  for (auto it = datasets.begin(); it != datasets.end(); ++it) {
    ASSERT_EQ(it.value().get<std::string>().rfind("/media/", 0), 0u) << it.value();
    ASSERT_FALSE(fs::exists(it.value().get<std::string>())) << it.value();
  }
  const auto& recipe = recipes::FindRecipe(GetParam().recipe);
  std::string warnings;
  EXPECT_NO_THROW(recipe::LoadConfigs(recipe, AsvtorchFiles(), {"score_net_netvlad"}, {}, &warnings));
}

TEST_P(AsvtorchConfigsTest, ShowJsonThroughTheCommandLine) {
  testing::ScratchDir dir("asvtorch_show");
  const auto result = testing::RunCommand({ASV_ASVRUN, "show", GetParam().recipe, "emb_net_lde_tied_diagonal",
                                           "--json", "--init-config", (ConfigDir() / "init_config.py").string(),
                                           "--run-configs", (ConfigDir() / "run_configs.py").string()},
                                          dir.path());
  ASSERT_EQ(result.status, 0) << result.err;
  const auto ours = nlohmann::json::parse(result.out);
  const auto theirs = Golden()["configs"]["emb_net_lde_tied_diagonal"];
  for (const char* key : {"recipe.start_stage", "network.max_batch_size_in_frames", "paths.system_folder",
                          "network.lde_covariance_type", "network.stat_size", "paths.datasets", "computing.gpu_ids",
                          "recipe.selected_epoch", "network.bn_momentum"}) {
    EXPECT_TRUE(SameValue(ours[key], theirs[key])) << key;
  }
  EXPECT_TRUE(ours["recipe.selected_epoch"].is_null());
  EXPECT_TRUE(ours["computing.gpu_ids"].is_array());
  EXPECT_TRUE(ours["paths.datasets"].is_object());
  // Nothing was written: show runs nothing and creates no database.
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

INSTANTIATE_TEST_SUITE_P(Recipes, AsvtorchConfigsTest,
                         ::testing::Values(Recipe("voxceleb/xvector", "voxceleb_xvector", 27),
                                           Recipe("sitw/xvector", "sitw_xvector", 28)),
                         [](const ::testing::TestParamInfo<AsvtorchRecipe>& param_info) {
                           return param_info.param.config_dir.filename().string();
                         });

}  // namespace
}  // namespace asv
