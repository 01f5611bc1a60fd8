// JSON, text, diff, canonical form, hash and help output.
#include "asvcpp/settings/dump.h"

#include <gtest/gtest.h>

#include <string>

#include "asvcpp/base/error.h"
#include "asvcpp/settings/binding.h"
#include "settings_test_util.h"

namespace asv::settings {
namespace {

using testing::XvectorSettings;

void Set(SettingsTree& tree, const std::string& arg) {
  Diagnostics diags;
  ApplyOverride(tree, arg, diags);
  ASSERT_TRUE(diags.empty()) << diags.Render();
}

TEST(SettingsDump, JsonIsFlatAndTyped) {
  XvectorSettings x;
  const auto json = ToJson(x.tree);
  EXPECT_EQ(json.size(), x.tree.Keys().size());
  EXPECT_EQ(json.begin().key(), "paths.kaldi_recipe_folder");
  EXPECT_EQ(json.at("computing.gpu_ids").dump(), "[0]");
  EXPECT_EQ(json.at("paths.datasets").dump(), R"({"example_dataset_name":"/example/input_dataset/folder/"})");
  EXPECT_EQ(json.at("recipe.selected_epoch").dump(), "null");
  EXPECT_EQ(json.at("network.bn_momentum").dump(), "0.1");
  EXPECT_EQ(json.at("network.momentum").dump(), "0.0");
  EXPECT_EQ(json.at("network.max_epochs").dump(), "1000");
  EXPECT_EQ(json.at("computing.use_gpu").dump(), "true");
  EXPECT_EQ(json.at("network.weight_decay_skiplist").dump(), R"(["batchnorm"])");
  EXPECT_EQ(json.at("network.sync_batch_norm").dump(), "false");
  EXPECT_EQ(json.at("recipe.augmentation_datasets").dump(), "{}");
}

TEST(SettingsDump, JsonDictsKeepFileOrder) {
  XvectorSettings x;
  Set(x.tree, "paths.datasets={'voxceleb2': '/d/vox2', 'voxceleb1': '/d/vox1'}");
  EXPECT_EQ(ToJson(x.tree).at("paths.datasets").dump(), R"({"voxceleb2":"/d/vox2","voxceleb1":"/d/vox1"})");
}

TEST(SettingsDump, FromJsonRestoresWhatToJsonStored) {
  XvectorSettings changed;
  Set(changed.tree, "paths.datasets={'voxceleb2': '/d/vox2', 'voxceleb1': '/d/vox1'}");
  Set(changed.tree, "computing.gpu_ids=(1, 2)");
  Set(changed.tree, "recipe.selected_epoch=7");
  Set(changed.tree, "network.momentum=1.0");
  Set(changed.tree, "network.weight_decay_skiplist=[]");
  auto stored = nlohmann::ordered_json::parse(ToJson(changed.tree).dump());
  stored["network.momentum"] = 1;      // an integer where a float belongs is the float
  stored["no.such_setting"] = true;    // settings removed since the run are ignored
  stored.erase("network.max_epochs");  // settings added since keep their defaults
  XvectorSettings restored;
  Set(restored.tree, "network.max_epochs=3");
  FromJson(restored.tree, stored);
  Set(restored.tree, "network.max_epochs=1000");
  EXPECT_EQ(ToText(restored.tree), ToText(changed.tree));
  EXPECT_NE(ToText(restored.tree).find("paths.datasets = {'voxceleb2': '/d/vox2', 'voxceleb1': '/d/vox1'}"),
            std::string::npos);
  stored["recipe.selected_epoch"] = "seven";
  EXPECT_THROW(
      {
        try {
          FromJson(restored.tree, stored);
        } catch (const DataError& e) {
          EXPECT_NE(std::string(e.what()).find("recipe.selected_epoch"), std::string::npos) << e.what();
          throw;
        }
      },
      DataError);
}

TEST(SettingsDump, TextListsEverySettingGroupedByGroup) {
  XvectorSettings x;
  const std::string text = ToText(x.tree);
  EXPECT_NE(text.find("computing.gpu_ids = (0,)\n"), std::string::npos);
  EXPECT_NE(text.find("network.weight_decay_skiplist = ('batchnorm',)\n"), std::string::npos);
  EXPECT_NE(text.find("recipe.preparation_datasets = None\n"), std::string::npos);
  EXPECT_NE(
      text.find("paths.system_folder = 'system1'\npaths.experiment_db = ''\n"
                "paths.allow_experiment_db_on_network_fs = False\n\ncomputing.ubm_training_workers = 8\n"),
      std::string::npos);
  EXPECT_EQ(ToText(x.tree, {true, false}), "");
}

TEST(SettingsDump, TextOnlyNonDefault) {
  XvectorSettings x;
  Set(x.tree, "recipe.preparation_datasets=['voxceleb1']");
  Set(x.tree, "network.max_epochs=1000");  // set, but to the default: not printed
  Set(x.tree, "network.bn_momentum=0.5");
  EXPECT_EQ(ToText(x.tree, {true, false}),
            "network.bn_momentum = 0.5\n"
            "\n"
            "recipe.preparation_datasets = ['voxceleb1']\n");
}

TEST(SettingsDump, DiffListsChangedKeysWithBothValues) {
  XvectorSettings a;
  XvectorSettings b;
  Set(b.tree, "network.network_class=StandardSeNet");
  Set(b.tree, "paths.system_folder=full_system_se");
  Set(b.tree, "computing.gpu_ids=(0,)");  // same as a
  const auto diffs = Diff(a.tree, b.tree);
  ASSERT_EQ(diffs.size(), 2u);
  EXPECT_EQ(diffs[0].key, "paths.system_folder");
  EXPECT_EQ(diffs[0].a, "'system1'");
  EXPECT_EQ(diffs[0].b, "'full_system_se'");
  EXPECT_EQ(FormatDiff(diffs),
            "paths.system_folder: 'system1' -> 'full_system_se'\n"
            "network.network_class: 'asvtorch.src.networks.architectures.StandardNet' -> 'StandardSeNet'\n");
  EXPECT_TRUE(Diff(a.tree, a.tree).empty());

  const auto json_diffs = DiffJson(ToJson(a.tree), ToJson(b.tree));
  ASSERT_EQ(json_diffs.size(), 2u);
  EXPECT_EQ(json_diffs[1].b, "\"StandardSeNet\"");
}

TEST(SettingsDump, DiffAcrossDifferentGroupSets) {
  XvectorSettings a;
  Settings plain;
  SettingsTree b;
  AddStandardGroups(b, plain);
  const auto diffs = Diff(a.tree, b);
  ASSERT_EQ(diffs.size(), 18u);
  EXPECT_EQ(diffs[0].key, "recipe.start_stage");
  EXPECT_EQ(diffs[0].a, "0");
  EXPECT_FALSE(diffs[0].b.has_value());
}

TEST(SettingsDump, CanonicalJsonIsSortedAndHashIsStableAndSensitive) {
  XvectorSettings a;
  XvectorSettings b;
  const std::string canonical = CanonicalJson(a.tree);
  EXPECT_EQ(canonical.rfind(R"({"backend.calibration":"none","backend.calibration_speakers":0.1,)", 0), 0u)
      << canonical.substr(0, 80);
  EXPECT_EQ(canonical, CanonicalJson(b.tree));
  EXPECT_EQ(SettingsHash(a.tree), SettingsHash(b.tree));
  EXPECT_EQ(SettingsHash(a.tree), Fnv1a64Hex(canonical));
  EXPECT_EQ(SettingsHash(a.tree).size(), 16u);
  Set(b.tree, "network.lrelu_slope=0.02");
  EXPECT_NE(SettingsHash(a.tree), SettingsHash(b.tree));
  // Provenance is not part of the settings: the same values from another layer hash the same.
  Set(a.tree, "network.lrelu_slope=0.02");
  EXPECT_EQ(SettingsHash(a.tree), SettingsHash(b.tree));
}

TEST(SettingsDump, Fnv1aReferenceVectors) {
  // Published FNV-1a 64-bit test vectors (Fowler/Noll/Vo).
  EXPECT_EQ(Fnv1a64Hex(""), "cbf29ce484222325");
  EXPECT_EQ(Fnv1a64Hex("a"), "af63dc4c8601ec8c");
  EXPECT_EQ(Fnv1a64Hex("foobar"), "85944171f73967e8");
}

TEST(SettingsDump, HelpListsTypeDefaultConstraintsAndReasons) {
  XvectorSettings x;
  const std::string help = HelpText(x.tree);
  EXPECT_NE(help.find("[network]\n"), std::string::npos);
  EXPECT_NE(help.find("  network.frame_layer_size: int = 512\n"
                      "      Channels of the TDNN frame layers\n"
                      "      Allowed: in [1, 16384]\n"),
            std::string::npos);
  EXPECT_NE(help.find("  network.activation: str = 'lrelu'\n"
                      "      Activation function\n"
                      "      Allowed: one of 'relu', 'lrelu', 'selu'\n"),
            std::string::npos);
  EXPECT_NE(help.find("  features.log_feats: bool = True\n"
                      "      Unused (ASVtorch defines but never reads it)\n"
                      "      No effect in asvcpp: no code reads it (ASVtorch does not either)\n"),
            std::string::npos);
  EXPECT_EQ(help.find("[diarization]"), std::string::npos);
  for (const auto& key : x.tree.Keys()) EXPECT_NE(help.find("  " + key + ": "), std::string::npos) << key;
}

}  // namespace
}  // namespace asv::settings
