// Settings bound from real config text through the parser: ASVtorch-style init and run configs,
// positions of diagnostics as the parser reports them, and the recipe's shipped files.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "asvcpp/settings/binding.h"
#include "asvcpp/settings/dump.h"
#include "parser/parse.h"
#include "parser/resolve.h"
#include "settings_test_util.h"
#include "tests/build_paths.h"

namespace asv::settings {
namespace {

using testing::XvectorSettings;

// ASVtorch's voxceleb/xvector init_config.py as described in reference section 1.3 (the
// author's machine paths shortened).
constexpr const char* kInit =
    "computing.network_dataloader_workers = 10\n"
    "computing.feature_extraction_workers = 44\n"
    "computing.use_gpu = True\n"
    "computing.gpu_ids = (0,)\n"
    "\n"
    "paths.output_folder = '/media/ssd3/voxceleb_outputs'\n"
    "paths.feature_and_list_folder = 'datasets'\n"
    "paths.kaldi_recipe_folder = '/media/hdd2/kaldi/egs/voxceleb/v2'\n"
    "paths.musan_folder = '/media/hdd3/musan'\n"
    "paths.datasets = {'voxceleb1': '/media/hdd3/voxceleb1', 'voxceleb2': '/media/hdd3/voxceleb2'}\n"
    "\n"
    "features.vad_mismatch_tolerance = 0\n";

// A part of ASVtorch's voxceleb/xvector run_configs.py (reference section 3.2), unchanged.
constexpr const char* kRunConfigs =
    "# Trains the default network architecture\n"  // 1
    "net\n"                                         // 2
    "paths.system_folder = 'full_system_default'\n"
    "recipe.start_stage = 5\n"
    "recipe.end_stage = 5\n"
    "network.min_clip_size = 200\n"
    "network.max_clip_size = 200\n"
    "network.print_interval = 500\n"
    "network.weight_decay = 0.001\n"
    "network.utts_per_speaker_in_epoch = 300\n"  // 10
    "network.eer_stop_epochs = 5\n"
    "network.max_epochs = 1000\n"
    "network.initial_learning_rate = 0.2\n"
    "network.min_loss_change_ratio = 0.01\n"
    "network.target_loss = 0.1\n"
    "network.epochs_per_train_call = 5\n"
    "network.max_batch_size_in_frames = 15000\n"
    "network.max_consecutive_lr_updates = 2\n"
    "\n"
    "# To train network with LDE layer:\n"  // 20
    "net_lde_isotropic < net\n"
    "paths.system_folder = 'full_system_lde_isotropic'\n"
    "network.pooling_layer_type = 'clustering'\n"
    "network.cluster_assignment_mode = 'lde'\n"
    "network.supervector_mode = 'lde'\n"
    "network.normalize_supervector = False\n"
    "network.n_clusters = 64\n"
    "network.n_ghost_clusters = 0\n"
    "network.stat_size = 128\n"
    "\n"  // 30
    "emb\n"
    "recipe.start_stage = 7\n"
    "recipe.end_stage = 7\n"
    "recipe.selected_epoch = None  # None = select the last epoch automatically\n"
    "network.max_batch_size_in_frames = 30000\n"
    "\n"
    "emb_net_lde_isotropic < emb < net_lde_isotropic\n"
    "\n"
    "score\n"
    "recipe.start_stage = 9\n"  // 40
    "recipe.end_stage = 9\n"
    "backend.plda_dim = 200\n"
    "backend.score_norm_full_cohort_size = 2000\n"
    "backend.score_norm_adaptive_cohort_size = 200\n"
    "\n"
    "score_net_lde_isotropic < score < emb_net_lde_isotropic\n"
    "\n"
    "# The annotated example of ASVtorch's multigpu_readme.md (which ASVtorch itself rejects).\n"
    "net_multigpu < net\n"
    "network.frame_layer_size: int = 512\n"  // 50
    "computing.gpu_ids: Tuple[int, ...] = (0, 1)\n"
    "network.minibatch_size: int = 128\n";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SettingsConfigFiles, AsvtorchConfigsValidateAndBind) {
  XvectorSettings x;
  Diagnostics diags;
  const auto init = parser::ParseInitConfig(kInit, "init_config", diags);
  const auto run = parser::ParseRunConfigs(kRunConfigs, "run_configs", diags);
  ASSERT_TRUE(diags.empty()) << diags.Render();
  ValidateAssignments(x.tree, init.assignments, diags);
  ValidateRunConfigs(x.tree, run, diags);
  ASSERT_TRUE(diags.empty()) << diags.Render();

  const auto resolved = parser::Resolve(run, "score_net_lde_isotropic", diags);
  ASSERT_TRUE(resolved.has_value()) << diags.Render();
  BindConfig(x.tree, parser::ResolveInit(init), *resolved, diags);
  Validate(x.tree, diags);
  // No warning: the Kaldi folder the init config sets is where stage 2 finds RIRS_NOISES.
  ASSERT_TRUE(diags.empty()) << diags.Render();

  EXPECT_EQ(x.recipe.start_stage, 9);
  EXPECT_EQ(x.recipe.end_stage, 9);
  EXPECT_EQ(x.recipe.selected_epoch, std::nullopt);
  EXPECT_EQ(x.settings.paths.system_folder, "full_system_lde_isotropic");
  EXPECT_EQ(x.settings.network.stat_size, 128);
  EXPECT_EQ(x.settings.network.max_batch_size_in_frames, 30000);
  EXPECT_FALSE(x.settings.network.normalize_supervector);
  EXPECT_EQ(x.settings.network.lde_covariance_type, nnet::LdeCovariance::kSpherical);
  EXPECT_DOUBLE_EQ(x.settings.network.initial_learning_rate, 0.2);
  EXPECT_EQ(x.settings.paths.datasets.Keys(), (std::vector<std::string>{"voxceleb1", "voxceleb2"}));
  EXPECT_EQ(x.tree.FindField("network.stat_size")->provenance.ToString(),
            "run config 'net_lde_isotropic' (run_configs:29)");
  EXPECT_EQ(x.tree.FindField("recipe.start_stage")->provenance.ToString(), "run config 'score' (run_configs:40)");
  EXPECT_EQ(x.tree.FindField("paths.musan_folder")->provenance.ToString(), "init config init_config:9");

  const auto json = ToJson(x.tree);
  EXPECT_EQ(json.at("paths.datasets").dump(),
            R"({"voxceleb1":"/media/hdd3/voxceleb1","voxceleb2":"/media/hdd3/voxceleb2"})");
  EXPECT_EQ(json.at("recipe.selected_epoch").dump(), "null");
}

TEST(SettingsConfigFiles, AnnotatedMultiGpuExampleBinds) {
  XvectorSettings x;
  Diagnostics diags;
  const auto run = parser::ParseRunConfigs(kRunConfigs, "run_configs", diags);
  const auto resolved = parser::Resolve(run, "net_multigpu", diags);
  ASSERT_TRUE(resolved.has_value()) << diags.Render();
  Bind(x.tree, *resolved, diags);
  ASSERT_TRUE(diags.empty()) << diags.Render();
  EXPECT_EQ(x.settings.computing.gpu_ids, (Tuple<int>{0, 1}));
  EXPECT_EQ(x.settings.network.minibatch_size, 128);
}

TEST(SettingsConfigFiles, EveryProblemInEveryBlockIsReportedWithItsPosition) {
  const std::string text =
      "net\n"
      "network.frame_layer_sise = 512\n"
      "network.max_epochs = True\n"
      "\n"
      "emb < net\n"
      "recipe.feature_extraction_datasets = ['voxceleb1', 2]\n"
      "network.bn_momentum: int = 0.1\n"
      "network.activation = 'rleu'\n";
  XvectorSettings x;
  Diagnostics diags;
  const auto run = parser::ParseRunConfigs(text, "run_configs", diags);
  ASSERT_TRUE(diags.empty()) << diags.Render();
  ValidateRunConfigs(x.tree, run, diags);
  EXPECT_EQ(diags.Render(),
            "run_configs:2:9: error: unknown field 'network.frame_layer_sise' (did you mean 'frame_layer_size'?)\n"
            " 2 | network.frame_layer_sise = 512\n"
            "   |         ^\n"
            "run_configs:3:22: error: network.max_epochs must be int, got bool True\n"
            " 3 | network.max_epochs = True\n"
            "   |                      ^\n"
            "run_configs:6:52: error: recipe.feature_extraction_datasets[1] must be str, got int 2\n"
            " 6 | recipe.feature_extraction_datasets = ['voxceleb1', 2]\n"
            "   |                                                    ^\n"
            "run_configs:7:22: error: annotation 'int' contradicts the type of network.bn_momentum (float)\n"
            " 7 | network.bn_momentum: int = 0.1\n"
            "   |                      ^\n"
            "run_configs:8:22: error: network.activation must be one of 'relu', 'lrelu', 'selu', got 'rleu' (did "
            "you mean 'relu'?)\n"
            " 8 | network.activation = 'rleu'\n"
            "   |                      ^\n");
}

// The recipe's shipped files (run_configs/voxceleb/xvector): every block binds without errors.
TEST(SettingsConfigFiles, ShippedXvectorConfigsBind) {
  const std::string folder = std::string(ASV_SOURCE_DIR) + "/run_configs/voxceleb/xvector/";
  if (!std::ifstream(folder + "run_configs")) GTEST_SKIP() << "no " << folder << "run_configs";
  Diagnostics diags;
  const auto init = parser::ParseInitConfig(ReadFile(folder + "init_config"), "init_config", diags);
  const auto run = parser::ParseRunConfigs(ReadFile(folder + "run_configs"), "run_configs", diags);
  ASSERT_TRUE(diags.empty()) << diags.Render();
  {
    XvectorSettings x;
    ValidateAssignments(x.tree, init.assignments, diags);
    ValidateRunConfigs(x.tree, run, diags);
    ASSERT_TRUE(diags.empty()) << diags.Render();
  }
  for (const auto& block : run.blocks) {
    XvectorSettings x;
    const auto resolved = parser::Resolve(run, block.name, diags);
    ASSERT_TRUE(resolved.has_value()) << block.name << "\n" << diags.Render();
    Bind(x.tree, parser::ResolveInit(init), diags);
    Bind(x.tree, *resolved, diags);
    Validate(x.tree, diags);
    EXPECT_FALSE(diags.has_errors()) << block.name << "\n" << diags.Render();
  }
}

}  // namespace
}  // namespace asv::settings
