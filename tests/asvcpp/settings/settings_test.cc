// Defaults and field inventory of the standard groups and the voxceleb/xvector recipe group,
// against ASVtorch's asvtorch/src/settings/settings.py.
#include "asvcpp/settings/settings.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "asvcpp/settings/binding.h"
#include "settings_test_util.h"

namespace asv::settings {
namespace {

using testing::XvectorSettings;

std::string Repr(const SettingsTree& tree, const std::string& key) {
  const Field* f = tree.FindField(key);
  return f == nullptr ? "<missing " + key + ">" : f->get().Repr();
}

std::string TypeOf(const SettingsTree& tree, const std::string& key) {
  const Field* f = tree.FindField(key);
  return f == nullptr ? "<missing " + key + ">" : f->type.ToString();
}

TEST(SettingsDefaults, GroupsAndFieldCountsMatchReference) {
  XvectorSettings x;
  // Reference 1.2: paths 7 rows + 3 asvcpp fields (rirs_folder, experiment_db,
  // allow_experiment_db_on_network_fs); computing 11 rows
  // minus `device` (not a setting) + 2 asvcpp fields (allow_tf32, dist_backend); network 45 rows
  // including max_consecutive_lr_updates + 3 asvcpp fields (precision, allow_unverified_checkpoints,
  // sync_batch_norm); posterior_extraction 3; ivector 13; features 11; backend 5 + 11 asvcpp fields
  // (processing, scoring, score_norm, score_norm_method, score_norm_cohort, calibration,
  // calibration_trials, calibration_speakers, keep_degenerate_calibration, p_target,
  // other_p_targets); diarization empty; recipe 6 ASVtorch fields + 12 asvcpp fields.
  const std::vector<std::pair<std::string, std::size_t>> expected = {
      {"paths", 10},  {"computing", 12}, {"network", 48}, {"posterior_extraction", 3}, {"ivector", 13},
      {"features", 11}, {"backend", 16}, {"diarization", 0}, {"recipe", 18}};
  ASSERT_EQ(x.tree.groups().size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(x.tree.groups()[i].name, expected[i].first);
    EXPECT_EQ(x.tree.groups()[i].fields.size(), expected[i].second) << expected[i].first;
  }
  EXPECT_EQ(x.tree.Keys().size(), 131u);
  EXPECT_EQ(x.tree.Keys().front(), "paths.kaldi_recipe_folder");
  EXPECT_EQ(x.tree.Keys().back(), "recipe.seed");
}

TEST(SettingsDefaults, Paths) {
  XvectorSettings x;
  EXPECT_EQ(Repr(x.tree, "paths.kaldi_recipe_folder"), "'/path/to/your/kaldi/egs/xxx/vx/'");
  EXPECT_EQ(Repr(x.tree, "paths.kaldi_mfcc_conf_file"), "'path/to/mfcc/conf/file'");
  EXPECT_EQ(Repr(x.tree, "paths.musan_folder"), "'/path/to/musan/'");
  EXPECT_EQ(Repr(x.tree, "paths.datasets"), "{'example_dataset_name': '/example/input_dataset/folder/'}");
  EXPECT_EQ(Repr(x.tree, "paths.output_folder"), "'/all/the/system/outputs/go/here/'");
  EXPECT_EQ(Repr(x.tree, "paths.feature_and_list_folder"), "'kaldi'");
  EXPECT_EQ(Repr(x.tree, "paths.system_folder"), "'system1'");
  EXPECT_EQ(TypeOf(x.tree, "paths.datasets"), "Dict[str, str]");
}

TEST(SettingsDefaults, Computing) {
  XvectorSettings x;
  EXPECT_EQ(Repr(x.tree, "computing.ubm_training_workers"), "8");
  EXPECT_EQ(Repr(x.tree, "computing.posterior_extraction_dataloader_workers"), "5");
  EXPECT_EQ(Repr(x.tree, "computing.ivector_dataloader_workers"), "10");
  EXPECT_EQ(Repr(x.tree, "computing.network_dataloader_workers"), "10");
  EXPECT_EQ(Repr(x.tree, "computing.feature_extraction_workers"), "44");
  EXPECT_EQ(Repr(x.tree, "computing.use_gpu"), "True");
  EXPECT_EQ(Repr(x.tree, "computing.gpu_ids"), "(0,)");
  EXPECT_EQ(TypeOf(x.tree, "computing.gpu_ids"), "Tuple[int, ...]");
  EXPECT_EQ(Repr(x.tree, "computing.local_process_rank"), "0");
  EXPECT_EQ(Repr(x.tree, "computing.local_gpu_id"), "0");
  EXPECT_EQ(Repr(x.tree, "computing.world_size"), "1");
  EXPECT_EQ(Repr(x.tree, "computing.allow_tf32"), "True");
  EXPECT_EQ(x.tree.FindField("computing.device"), nullptr);
}

TEST(SettingsDefaults, Network) {
  XvectorSettings x;
  const std::map<std::string, std::string> expected = {
      {"resume_epoch", "0"},
      {"max_epochs", "1000"},
      {"eer_stop_epochs", "3"},
      {"minimum_improvement", "0.1"},
      {"epochs_per_train_call", "1"},
      {"utts_per_speaker_in_epoch", "320"},
      {"minibatch_size", "64"},
      {"min_clip_size", "200"},
      {"max_clip_size", "400"},
      {"max_test_cut_portion", "0.02"},
      {"max_val_cut_portion", "0.1"},
      {"max_batch_size_in_frames", "30000"},
      {"validation_utterances", "500"},
      {"print_interval", "500"},
      {"accuracy_print_interval", "6"},
      {"extraction_print_interval", "200"},
      {"optimizer", "'sgd'"},
      {"max_consecutive_lr_updates", "2"},
      {"initial_learning_rate", "0.1"},
      {"min_loss_change_ratio", "0.01"},
      {"min_room_for_improvement", "0.1"},
      {"target_loss", "0.1"},
      {"momentum", "0.0"},
      {"weight_decay", "0.001"},
      {"weight_decay_skiplist", "('batchnorm',)"},
      {"optimizer_step_interval", "1"},
      {"cnn_padding_mode", "'zeros'"},
      {"bn_momentum", "0.1"},
      {"bn_affine", "True"},
      {"activation", "'lrelu'"},
      {"lrelu_slope", "0.01"},
      {"network_class", "'asvtorch.src.networks.architectures.StandardNet'"},
      {"frame_layer_size", "512"},
      {"stat_size", "1500"},
      {"embedding_size", "512"},
      {"pooling_layer_type", "'default'"},
      {"cluster_assignment_mode", "'net_vlad'"},
      {"supervector_mode", "'net_vlad'"},
      {"lde_covariance_type", "'spherical'"},
      {"normalize_supervector", "True"},
      {"n_clusters", "64"},
      {"n_ghost_clusters", "2"},
      {"net_vlad_alpha", "1.0"},
      {"ser", "16"},
      {"attention_layer_size", "64"},
      {"precision", "'fp32'"},
      {"allow_unverified_checkpoints", "False"},
      {"sync_batch_norm", "False"},
  };
  const Group* network = x.tree.FindGroup("network");
  ASSERT_NE(network, nullptr);
  EXPECT_EQ(network->fields.size(), expected.size());
  for (const auto& [name, repr] : expected) EXPECT_EQ(Repr(x.tree, "network." + name), repr) << name;
  EXPECT_EQ(TypeOf(x.tree, "network.bn_momentum"), "float");
  EXPECT_EQ(TypeOf(x.tree, "network.momentum"), "float");
  EXPECT_EQ(TypeOf(x.tree, "network.net_vlad_alpha"), "float");
  EXPECT_EQ(TypeOf(x.tree, "network.max_consecutive_lr_updates"), "int");
  EXPECT_EQ(TypeOf(x.tree, "network.weight_decay_skiplist"), "Tuple[str, ...]");
  EXPECT_EQ(x.settings.network.ArchitectureName(), "StandardNet");
}

TEST(SettingsDefaults, IVectorPosteriorsFeaturesBackend) {
  XvectorSettings x;
  EXPECT_EQ(Repr(x.tree, "posterior_extraction.n_top_gaussians"), "20");
  EXPECT_EQ(Repr(x.tree, "posterior_extraction.posterior_threshold"), "0.025");
  EXPECT_EQ(Repr(x.tree, "posterior_extraction.batch_size_in_frames"), "500000");
  EXPECT_EQ(Repr(x.tree, "ivector.num_gaussians"), "2048");
  EXPECT_EQ(Repr(x.tree, "ivector.ubm_name"), "'ubm_2048'");
  EXPECT_EQ(Repr(x.tree, "ivector.ivec_dim"), "400");
  EXPECT_EQ(Repr(x.tree, "ivector.ivec_type"), "'augmented'");
  EXPECT_EQ(Repr(x.tree, "ivector.initial_prior_offset"), "100.0");
  EXPECT_EQ(Repr(x.tree, "ivector.covariance_type"), "'full'");
  EXPECT_EQ(Repr(x.tree, "ivector.n_component_batches"), "16");
  EXPECT_EQ(Repr(x.tree, "features.sampling_rate"), "16000");
  EXPECT_EQ(Repr(x.tree, "features.frame_shift"), "10");
  EXPECT_EQ(Repr(x.tree, "features.use_kaldi"), "True");
  EXPECT_EQ(Repr(x.tree, "features.cmvn"), "'m'");
  EXPECT_EQ(Repr(x.tree, "features.cmvn_window"), "300");
  EXPECT_EQ(Repr(x.tree, "features.deltas"), "'b'");
  EXPECT_EQ(Repr(x.tree, "features.delta_reach"), "3");
  EXPECT_EQ(Repr(x.tree, "features.sad_enabled"), "True");
  EXPECT_EQ(Repr(x.tree, "features.vad_mismatch_tolerance"), "0");
  EXPECT_EQ(TypeOf(x.tree, "features.vad_mismatch_tolerance"), "int");
  EXPECT_EQ(Repr(x.tree, "backend.plda_dim"), "200");
  EXPECT_EQ(Repr(x.tree, "backend.max_all_vs_all_score_count"), "100000000");
  EXPECT_EQ(Repr(x.tree, "backend.pairwise_scoring_chunk_size"), "50000");
  EXPECT_EQ(Repr(x.tree, "backend.score_norm_full_cohort_size"), "2000");
  EXPECT_EQ(Repr(x.tree, "backend.score_norm_adaptive_cohort_size"), "200");
  EXPECT_EQ(Repr(x.tree, "backend.processing"), "'cwl'");
  EXPECT_EQ(Repr(x.tree, "backend.scoring"), "'plda'");
  EXPECT_EQ(Repr(x.tree, "backend.score_norm"), "False");
  EXPECT_EQ(Repr(x.tree, "backend.p_target"), "0.05");
}

TEST(SettingsDefaults, Recipe) {
  XvectorSettings x;
  EXPECT_EQ(Repr(x.tree, "recipe.start_stage"), "0");
  EXPECT_EQ(Repr(x.tree, "recipe.end_stage"), "100");
  EXPECT_EQ(Repr(x.tree, "recipe.preparation_datasets"), "None");
  EXPECT_EQ(TypeOf(x.tree, "recipe.preparation_datasets"), "Optional[List[str]]");
  EXPECT_EQ(Repr(x.tree, "recipe.feature_extraction_datasets"), "[]");
  EXPECT_EQ(Repr(x.tree, "recipe.augmentation_datasets"), "{}");
  EXPECT_EQ(TypeOf(x.tree, "recipe.augmentation_datasets"), "Dict[str, int]");
  EXPECT_EQ(Repr(x.tree, "recipe.selected_epoch"), "None");
  EXPECT_EQ(TypeOf(x.tree, "recipe.selected_epoch"), "Optional[int]");
  EXPECT_EQ(Repr(x.tree, "recipe.training_datasets"), "['voxceleb2_cat_combined']");
  EXPECT_EQ(Repr(x.tree, "recipe.min_speech_frames"), "500");
  EXPECT_EQ(Repr(x.tree, "recipe.min_utterances_per_speaker"), "10");
  EXPECT_EQ(Repr(x.tree, "recipe.plda_datasets"), "['voxceleb2_cat_combined']");
  EXPECT_EQ(Repr(x.tree, "recipe.plda_speakers_during_training"), "500");
  EXPECT_EQ(Repr(x.tree, "recipe.trial_dataset"), "'voxceleb1'");
  EXPECT_EQ(Repr(x.tree, "recipe.trial_lists"),
            "{'vox1_original': 'veri_test.txt', 'vox1_cleaned': 'veri_test2.txt', "
            "'vox1_extended_original': 'list_test_all.txt', 'vox1_extended_cleaned': 'list_test_all2.txt', "
            "'vox1_hard_original': 'list_test_hard.txt', 'vox1_hard_cleaned': 'list_test_hard2.txt'}");
  EXPECT_EQ(Repr(x.tree, "recipe.training_trial_lists"), "['vox1_original', 'vox1_cleaned']");
  EXPECT_EQ(Repr(x.tree, "recipe.seed"), "0");
  EXPECT_TRUE(x.recipe.StageSelected(0));
  EXPECT_TRUE(x.recipe.StageSelected(100));
  EXPECT_FALSE(x.recipe.StageSelected(101));
}

TEST(SettingsDefaults, DefaultsValidateCleanlyAndAreDefault) {
  XvectorSettings x;
  Diagnostics diags;
  Validate(x.tree, diags);
  EXPECT_TRUE(diags.empty()) << diags.Render();
  for (const auto& g : x.tree.groups()) {
    for (const auto& f : g.fields) {
      EXPECT_TRUE(f.IsDefault()) << f.key();
      EXPECT_EQ(f.provenance.source, parser::Provenance::Source::kDefault);
    }
  }
}

TEST(SettingsDefaults, DefaultsComeFromAFreshStructNotTheRegisteredOne) {
  Settings s;
  s.network.max_epochs = 7;
  SettingsTree tree;
  AddStandardGroups(tree, s);
  const Field* f = tree.FindField("network.max_epochs");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->get().Repr(), "7");
  EXPECT_EQ(f->default_value.Repr(), "1000");
  EXPECT_FALSE(f->IsDefault());
}

TEST(SettingsTypes, OrderedDictKeepsFirstPositionOnReassignment) {
  OrderedDict<int> d = {{"b", 1}, {"a", 2}};
  d.Set("b", 3);
  d.Set("c", 4);
  EXPECT_EQ(d.Keys(), (std::vector<std::string>{"b", "a", "c"}));
  ASSERT_NE(d.Find("b"), nullptr);
  EXPECT_EQ(*d.Find("b"), 3);
  EXPECT_EQ(d.Find("z"), nullptr);
  EXPECT_EQ(SettingTraits<OrderedDict<int>>::ToValue(d).Repr(), "{'b': 3, 'a': 2, 'c': 4}");
}

TEST(SettingsTypes, TupleAndListPrintPythonStyle) {
  EXPECT_EQ(SettingTraits<Tuple<int>>::ToValue(Tuple<int>{0}).Repr(), "(0,)");
  EXPECT_EQ(SettingTraits<Tuple<int>>::ToValue(Tuple<int>{0, 2, 3}).Repr(), "(0, 2, 3)");
  EXPECT_EQ(SettingTraits<std::vector<std::string>>::ToValue({"a"}).Repr(), "['a']");
  EXPECT_EQ(SettingTraits<std::optional<std::vector<std::string>>>::ToValue(std::nullopt).Repr(), "None");
  EXPECT_EQ(SettingTraits<std::optional<int>>::Type().ToString(), "Optional[int]");
}

}  // namespace
}  // namespace asv::settings
