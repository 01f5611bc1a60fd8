// Binding rules, annotations, layers, --set and cross-field validation.
#include "asvcpp/settings/binding.h"

#include <gtest/gtest.h>

#include <string>

#include "asvcpp/settings/dump.h"
#include "settings_test_util.h"

namespace asv::settings {
namespace {

using parser::Provenance;
using parser::Value;
using testing::At;
using testing::MakeAssignment;
using testing::OnlyError;
using testing::Type;
using testing::XvectorSettings;

constexpr const char* kRun = "run_configs";

// Validates one assignment line of run_configs (line 3) and returns its single diagnostic, or
// "" when there is none.
std::string Check(const std::string& text, Value value, std::optional<parser::TypeExpr> annotation = std::nullopt) {
  XvectorSettings x;
  Diagnostics diags;
  ValidateAssignments(x.tree, {MakeAssignment(kRun, 3, text, std::move(value), std::move(annotation))}, diags);
  return diags.empty() ? "" : OnlyError(diags);
}

// --- Binding rules -------------------------------------------------------------------------

TEST(SettingsBinding, IntAcceptsIntOnly) {
  EXPECT_EQ(Check("network.max_epochs = 5", Value::Int(5)), "");
  EXPECT_EQ(Check("network.max_epochs = True", Value::Bool(true)),
            "run_configs:3:22: error: network.max_epochs must be int, got bool True");
  EXPECT_EQ(Check("network.max_epochs = 1.5", Value::Float(1.5)),
            "run_configs:3:22: error: network.max_epochs must be int, got float 1.5");
  EXPECT_EQ(Check("network.max_epochs = '5'", Value::String("5")),
            "run_configs:3:22: error: network.max_epochs must be int, got str '5'");
  EXPECT_EQ(Check("network.max_epochs = 3000000000", Value::Int(3000000000LL)),
            "run_configs:3:22: error: network.max_epochs = 3000000000 is out of range [-2147483648, 2147483647]");
}

TEST(SettingsBinding, FloatAcceptsIntAndFloat) {
  EXPECT_EQ(Check("network.bn_momentum = 0", Value::Int(0)), "");
  EXPECT_EQ(Check("network.bn_momentum = 0.5", Value::Float(0.5)), "");
  EXPECT_EQ(Check("network.bn_momentum = False", Value::Bool(false)),
            "run_configs:3:23: error: network.bn_momentum must be float, got bool False");
  EXPECT_EQ(Check("network.bn_momentum = None", Value::None()),
            "run_configs:3:23: error: network.bn_momentum must be float, got NoneType None");
}

TEST(SettingsBinding, StrAndBoolAreStrict) {
  EXPECT_EQ(Check("paths.system_folder = 3", Value::Int(3)),
            "run_configs:3:23: error: paths.system_folder must be str, got int 3");
  EXPECT_EQ(Check("computing.use_gpu = 1", Value::Int(1)),
            "run_configs:3:21: error: computing.use_gpu must be bool, got int 1");
  EXPECT_EQ(Check("computing.use_gpu = False", Value::Bool(false)), "");
}

TEST(SettingsBinding, OptionalAcceptsNoneOrInner) {
  EXPECT_EQ(Check("recipe.selected_epoch = None", Value::None()), "");
  EXPECT_EQ(Check("recipe.selected_epoch = 23", Value::Int(23)), "");
  EXPECT_EQ(Check("recipe.selected_epoch = '23'", Value::String("23")),
            "run_configs:3:25: error: recipe.selected_epoch must be int or None, got str '23'");
  EXPECT_EQ(Check("recipe.preparation_datasets = 'voxceleb1'", Value::String("voxceleb1")),
            "run_configs:3:31: error: recipe.preparation_datasets must be List[str] or None, got str 'voxceleb1'");
}

TEST(SettingsBinding, ListAndTupleLiteralsAreInterchangeableButPrintAsTheFieldType) {
  XvectorSettings x;
  parser::ResolvedConfig rc;
  testing::AddResolved(rc,
                       MakeAssignment(kRun, 2, "computing.gpu_ids = [0, 1]",
                                      Value::List({Value::Int(0), Value::Int(1)})),
                       Provenance::Source::kRunConfig, "net");
  testing::AddResolved(rc,
                       MakeAssignment(kRun, 3, "recipe.feature_extraction_datasets = ('voxceleb1',)",
                                      Value::Tuple({Value::String("voxceleb1")})),
                       Provenance::Source::kRunConfig, "net");
  Diagnostics diags;
  Bind(x.tree, rc, diags);
  EXPECT_TRUE(diags.empty()) << diags.Render();
  EXPECT_EQ(x.settings.computing.gpu_ids, (Tuple<int>{0, 1}));
  EXPECT_EQ(x.tree.FindField("computing.gpu_ids")->get().Repr(), "(0, 1)");
  EXPECT_EQ(x.recipe.feature_extraction_datasets, (std::vector<std::string>{"voxceleb1"}));
  EXPECT_EQ(x.tree.FindField("recipe.feature_extraction_datasets")->get().Repr(), "['voxceleb1']");
}

TEST(SettingsBinding, ElementErrorsPointAtTheElement) {
  // recipe.training_datasets = ['voxceleb1', 3]
  //                            ^28          ^41
  const std::string text = "recipe.training_datasets = ['voxceleb1', 3]";
  Value list = At(Value::List({At(Value::String("voxceleb1"), kRun, 3, 29), At(Value::Int(3), kRun, 3, 42)}), kRun,
                  3, 28);
  EXPECT_EQ(Check(text, list), "run_configs:3:42: error: recipe.training_datasets[1] must be str, got int 3");
}

TEST(SettingsBinding, DictKeysMustBeStrAndValuesAreChecked) {
  const std::string text = "recipe.augmentation_datasets = {1: 5}";
  Value bad_key = At(Value::Dict({{At(Value::Int(1), kRun, 3, 33), At(Value::Int(5), kRun, 3, 36)}}), kRun, 3, 32);
  EXPECT_EQ(Check(text, bad_key), "run_configs:3:33: error: keys of recipe.augmentation_datasets must be str, got int 1");
  const std::string text2 = "recipe.augmentation_datasets = {'voxceleb2_cat': '5'}";
  Value bad_value = At(Value::Dict({{At(Value::String("voxceleb2_cat"), kRun, 3, 33),
                                     At(Value::String("5"), kRun, 3, 50)}}),
                       kRun, 3, 32);
  EXPECT_EQ(Check(text2, bad_value),
            "run_configs:3:50: error: recipe.augmentation_datasets['voxceleb2_cat'] must be int, got str '5'");
  EXPECT_EQ(Check("recipe.augmentation_datasets = {'voxceleb2_cat': 5}",
                  Value::Dict({{Value::String("voxceleb2_cat"), Value::Int(5)}})),
            "");
}

TEST(SettingsBinding, UnknownGroupsAndFieldsSuggestTheClosestName) {
  EXPECT_EQ(Check("netwrk.max_epochs = 5", Value::Int(5)),
            "run_configs:3:1: error: unknown settings group 'netwrk' (did you mean 'network'?)");
  EXPECT_EQ(Check("network.frame_layer_sise = 512", Value::Int(512)),
            "run_configs:3:9: error: unknown field 'network.frame_layer_sise' (did you mean 'frame_layer_size'?)");
  EXPECT_EQ(Check("network.gpu_ids = (0,)", Value::Tuple({Value::Int(0)})),
            "run_configs:3:9: error: unknown field 'network.gpu_ids' (did you mean 'computing.gpu_ids'?)");
  EXPECT_EQ(Check("network.completely_unrelated = 1", Value::Int(1)),
            "run_configs:3:9: error: unknown field 'network.completely_unrelated'");
}

// A name far longer than any setting is quoted by its ends (the source line below the message
// shows it) and gets no suggestion.
TEST(SettingsBinding, HugeNamesAreQuotedShortened) {
  const std::string field(1000000, 'a');
  EXPECT_EQ(Check("network." + field + " = 1", Value::Int(1)),
            "run_configs:3:9: error: unknown field 'network." + std::string(32, 'a') + "..." + std::string(20, 'a') +
                " (1000008 characters)'");
  EXPECT_EQ(Check(field + ".x = 1", Value::Int(1)),
            "run_configs:3:1: error: unknown settings group '" + std::string(40, 'a') + "..." + std::string(20, 'a') +
                " (1000000 characters)'");
  EXPECT_EQ(Check(field + " = 1", Value::Int(1)),
            "run_configs:3:1: error: '" + std::string(40, 'a') + "..." + std::string(20, 'a') +
                " (1000000 characters)' is not a setting name; expected group.field");
}

TEST(SettingsBinding, AllProblemsAreCollected) {
  XvectorSettings x;
  Diagnostics diags;
  ValidateAssignments(x.tree,
                      {MakeAssignment(kRun, 1, "network.max_epochs = 'x'", Value::String("x")),
                       MakeAssignment(kRun, 2, "network.max_epoch = 5", Value::Int(5)),
                       MakeAssignment(kRun, 3, "network.activation = 'rleu'", Value::String("rleu")),
                       MakeAssignment(kRun, 4, "network.stat_size = 128", Value::Int(128))},
                      diags);
  ASSERT_EQ(diags.error_count(), 3u) << diags.Render();
  EXPECT_EQ(diags.all()[0].pos.line, 1);
  EXPECT_EQ(diags.all()[1].pos.line, 2);
  EXPECT_EQ(diags.all()[2].pos.line, 3);
  // Rendered with the source line and a caret under the value.
  EXPECT_EQ(diags.all()[0].Render(),
            "run_configs:1:22: error: network.max_epochs must be int, got str 'x'\n"
            " 1 | network.max_epochs = 'x'\n"
            "   |                      ^\n");
}

TEST(SettingsBinding, RangeChecks) {
  EXPECT_EQ(Check("network.minibatch_size = 0", Value::Int(0)),
            "run_configs:3:26: error: network.minibatch_size must be in [1, 1048576], got 0");
  EXPECT_EQ(Check("network.initial_learning_rate = 0", Value::Int(0)),
            "run_configs:3:33: error: network.initial_learning_rate must be in (0, 100], got 0");
  EXPECT_EQ(Check("network.max_test_cut_portion = 1.5", Value::Float(1.5)),
            "run_configs:3:32: error: network.max_test_cut_portion must be in [0, 1], got 1.5");
  EXPECT_EQ(Check("recipe.start_stage = -1", Value::Int(-1)),
            "run_configs:3:22: error: recipe.start_stage must be in [0, 1000], got -1");
  EXPECT_EQ(Check("recipe.selected_epoch = 0", Value::Int(0)),
            "run_configs:3:25: error: recipe.selected_epoch must be in [1, 1000000], got 0");
  Value gpus = At(Value::Tuple({At(Value::Int(0), kRun, 3, 21), At(Value::Int(-1), kRun, 3, 24)}), kRun, 3, 20);
  EXPECT_EQ(Check("computing.gpu_ids = (0, -1)", gpus),
            "run_configs:3:24: error: computing.gpu_ids[1] must be in [0, 1023], got -1");
  EXPECT_EQ(Check("network.resume_epoch = -23", Value::Int(-23)), "");
  EXPECT_EQ(Check("backend.other_p_targets = [0.01, 0.001]", Value::List({Value::Float(0.01), Value::Float(0.001)})),
            "");
  Value priors =
      At(Value::List({At(Value::Float(0.01), kRun, 3, 28), At(Value::Float(1.5), kRun, 3, 34)}), kRun, 3, 27);
  EXPECT_EQ(Check("backend.other_p_targets = [0.01, 1.5]", priors),
            "run_configs:3:34: error: backend.other_p_targets[1] must be in (0, 1), got 1.5");
  EXPECT_EQ(Check("backend.p_target = 1", Value::Int(1)),
            "run_configs:3:20: error: backend.p_target must be in (0, 1), got 1");
  EXPECT_NE(Check("backend.other_p_targets = ['a']", Value::List({Value::String("a")})).find("must be"),
            std::string::npos);
  EXPECT_EQ(Check("backend.calibration_speakers = 0.25", Value::Float(0.25)), "");
  EXPECT_EQ(Check("backend.calibration_speakers = 1", Value::Int(1)),
            "run_configs:3:32: error: backend.calibration_speakers must be in (0, 1), got 1");
  EXPECT_EQ(Check("features.vad_mismatch_tolerance = 2", Value::Int(2)), "");
}

TEST(SettingsBinding, EnumeratedChoices) {
  EXPECT_EQ(Check("network.activation = 'rleu'", Value::String("rleu")),
            "run_configs:3:22: error: network.activation must be one of 'relu', 'lrelu', 'selu', got 'rleu' "
            "(did you mean 'relu'?)");
  EXPECT_EQ(Check("network.optimizer = 'adam'", Value::String("adam")),
            "run_configs:3:21: error: network.optimizer must be one of 'sgd', 'adamw', got 'adam' (did you mean "
            "'adamw'?)");
  EXPECT_EQ(Check("network.cnn_padding_mode = 'circular'", Value::String("circular")), "");
  EXPECT_EQ(Check("network.pooling_layer_type = 'clustering'", Value::String("clustering")), "");
  EXPECT_EQ(Check("network.cluster_assignment_mode = 'lde'", Value::String("lde")), "");
  EXPECT_EQ(Check("network.supervector_mode = 'vlad'", Value::String("vlad")),
            "run_configs:3:28: error: network.supervector_mode must be one of 'net_vlad', 'lde', got 'vlad'");
  EXPECT_EQ(Check("network.lde_covariance_type = 'shared_diagonal'", Value::String("shared_diagonal")), "");
  EXPECT_EQ(Check("network.lde_covariance_type = 'full'", Value::String("full")),
            "run_configs:3:31: error: network.lde_covariance_type 'full' is not supported: ASVtorch has no full "
            "covariances either; use spherical, shared_spherical, diagonal or shared_diagonal");
  EXPECT_EQ(Check("ivector.covariance_type = 'shared_full'", Value::String("shared_full")), "");
  EXPECT_EQ(Check("ivector.ivec_type = 'neural'", Value::String("neural")),
            "run_configs:3:21: error: ivector.ivec_type must be one of 'augmented', 'standard', got 'neural'");
  EXPECT_EQ(Check("features.cmvn = ''", Value::String("")), "");
  EXPECT_EQ(Check("features.cmvn = 'mv'", Value::String("mv")), "");
  EXPECT_EQ(Check("features.cmvn = 'v'", Value::String("v")),
            "run_configs:3:17: error: features.cmvn must be one of '', 'm', 'mv', got 'v' (did you mean 'm'?)");
  EXPECT_EQ(Check("network.precision = 'bf16'", Value::String("bf16")), "");
  EXPECT_EQ(Check("network.precision = 'fp16'", Value::String("fp16")),
            "run_configs:3:21: error: network.precision must be one of 'fp32', 'bf16', got 'fp16'");
  EXPECT_EQ(Check("features.deltas = 'bva'", Value::String("bva")), "");
  EXPECT_EQ(Check("features.deltas = ''", Value::String("")),
            "run_configs:3:19: error: features.deltas must be one of 'b', 'bv', 'bva', got ''");
}

TEST(SettingsBinding, NetworkClassDottedPlainAndUnknown) {
  EXPECT_EQ(Check("network.network_class = 'asvtorch.src.networks.architectures.StandardSeNet'",
                  Value::String("asvtorch.src.networks.architectures.StandardSeNet")),
            "");
  EXPECT_EQ(Check("network.network_class = 'LargeResSeNet'", Value::String("LargeResSeNet")), "");
  EXPECT_EQ(Check("network.network_class = 'StandardResSeNett'", Value::String("StandardResSeNett")),
            "run_configs:3:25: error: network.network_class 'StandardResSeNett' is not a known architecture (did you "
            "mean 'StandardResSeNet'?); known: StandardNet, StandardSeNet, StandardResSeNet, LargeResSeNet");
  EXPECT_EQ(Check("network.network_class = 'mylab.nets.TinyNet'", Value::String("mylab.nets.TinyNet")),
            "run_configs:3:25: error: network.network_class 'mylab.nets.TinyNet' names a custom Python class; "
            "asvcpp implements StandardNet, StandardSeNet, StandardResSeNet, LargeResSeNet (plain or as "
            "asvtorch.src.networks.architectures.<Name>)");

  // The value is kept as written; the accessor gives the plain name.
  XvectorSettings x;
  Diagnostics diags;
  ApplyOverride(x.tree, "network.network_class='asvtorch.src.networks.architectures.StandardResSeNet'", diags);
  EXPECT_TRUE(diags.empty()) << diags.Render();
  EXPECT_EQ(x.settings.network.network_class, "asvtorch.src.networks.architectures.StandardResSeNet");
  EXPECT_EQ(x.settings.network.ArchitectureName(), "StandardResSeNet");
  ApplyOverride(x.tree, "network.network_class=StandardSeNet", diags);
  EXPECT_TRUE(diags.empty()) << diags.Render();
  EXPECT_EQ(x.settings.network.network_class, "StandardSeNet");
  EXPECT_EQ(x.settings.network.ArchitectureName(), "StandardSeNet");
}

TEST(SettingsBinding, UseKaldiFalseIsAnError) {
  EXPECT_EQ(Check("features.use_kaldi = False", Value::Bool(false)),
            "run_configs:3:22: error: features.use_kaldi = False is not supported: asvcpp computes Kaldi-compatible "
            "features only (ASVtorch raises NotImplementedError too)");
  EXPECT_EQ(Check("features.use_kaldi = True", Value::Bool(true)), "");
}

// --- Annotations -----------------------------------------------------------------------------

TEST(SettingsAnnotation, AgreeingAnnotationsAreAccepted) {
  // The three annotated lines of ASVtorch's multigpu_readme.md example, which ASVtorch rejects.
  EXPECT_EQ(Check("network.frame_layer_size: int = 512", Value::Int(512), Type("int")), "");
  EXPECT_EQ(Check("network.momentum: float = 0", Value::Int(0), Type("float")), "");
  EXPECT_EQ(Check("computing.gpu_ids: Tuple[int, ...] = (0, 1)", Value::Tuple({Value::Int(0), Value::Int(1)}),
                  Type("Tuple", {Type("int"), Type("...")})),
            "");
  EXPECT_EQ(Check("computing.gpu_ids: Tuple[int] = (0, 1)", Value::Tuple({Value::Int(0), Value::Int(1)}),
                  Type("Tuple", {Type("int")})),
            "");
  EXPECT_EQ(Check("computing.gpu_ids: tuple = (0,)", Value::Tuple({Value::Int(0)}), Type("tuple")), "");
  EXPECT_EQ(Check("paths.datasets: Dict[str, str] = {'a': '/a'}",
                  Value::Dict({{Value::String("a"), Value::String("/a")}}), Type("Dict", {Type("str"), Type("str")})),
            "");
  EXPECT_EQ(Check("recipe.preparation_datasets: Optional[List[str]] = None", Value::None(),
                  Type("Optional", {Type("List", {Type("str")})})),
            "");
  EXPECT_EQ(Check("recipe.selected_epoch: int = 5", Value::Int(5), Type("int")), "");
}

TEST(SettingsAnnotation, ContradictionIsReportedAtTheAnnotation) {
  EXPECT_EQ(Check("network.bn_momentum: int = 0.1", Value::Float(0.1), Type("int")),
            "run_configs:3:22: error: annotation 'int' contradicts the type of network.bn_momentum (float)");
  EXPECT_EQ(Check("computing.gpu_ids: List[int] = [0]", Value::List({Value::Int(0)}), Type("List", {Type("int")})),
            "run_configs:3:20: error: annotation 'List[int]' contradicts the type of computing.gpu_ids "
            "(Tuple[int, ...])");
  EXPECT_EQ(Check("paths.datasets: Dict[str, int] = {}", Value::Dict({}), Type("Dict", {Type("str"), Type("int")})),
            "run_configs:3:17: error: annotation 'Dict[str, int]' contradicts the type of paths.datasets "
            "(Dict[str, str])");
  EXPECT_EQ(Check("network.max_epochs: Optional[int] = 5", Value::Int(5), Type("Optional", {Type("int")})),
            "run_configs:3:21: error: annotation 'Optional[int]' contradicts the type of network.max_epochs (int)");
  EXPECT_EQ(Check("network.max_epochs: integer = 5", Value::Int(5), Type("integer")),
            "run_configs:3:21: error: annotation 'integer' contradicts the type of network.max_epochs (int)");
}

TEST(SettingsAnnotation, ValueMustMatchTheAnnotation) {
  EXPECT_EQ(Check("recipe.selected_epoch: int = None", Value::None(), Type("int")),
            "run_configs:3:30: error: value None of recipe.selected_epoch does not match its annotation 'int'");
  EXPECT_EQ(Check("computing.gpu_ids: Tuple[int, ...] = [0, 1]", Value::List({Value::Int(0), Value::Int(1)}),
                  Type("Tuple", {Type("int"), Type("...")})),
            "run_configs:3:38: error: value [0, 1] of computing.gpu_ids does not match its annotation "
            "'Tuple[int, ...]'");
  // A value that is wrong for the field is reported once, as a type error.
  EXPECT_EQ(Check("network.frame_layer_size: int = 'big'", Value::String("big"), Type("int")),
            "run_configs:3:33: error: network.frame_layer_size must be int, got str 'big'");
}

// ConfigError shows the first 50 errors and counts the rest: "did you mean" is worked out for
// those 50 only (errors already in the diagnostics count; warnings do not), so a file of 100,000
// misspelt names does not compute 100,000 suggestions.
TEST(SettingsBinding, OnlyTheErrorsShownGetSuggestions) {
  XvectorSettings x;
  Diagnostics diags;
  for (int i = 0; i < 20; ++i) diags.Error(SourcePos{"earlier", i + 1, 1}, "an earlier error");
  for (int i = 0; i < 5; ++i) diags.Warning(SourcePos{"earlier", i + 1, 1}, "a warning");
  std::vector<parser::Assignment> lines;
  for (int i = 0; i < 40; ++i) lines.push_back(MakeAssignment(kRun, i + 1, "network.frame_layer_sise = 512", Value::Int(512)));
  ValidateAssignments(x.tree, lines, diags);
  parser::RunConfigsFile file;
  file.blocks.resize(2);
  for (int i = 0; i < 20; ++i) {
    file.blocks[0].assignments.push_back(MakeAssignment(kRun, 100 + i, "netwrk.max_epochs = 5", Value::Int(5)));
    file.blocks[1].assignments.push_back(MakeAssignment(kRun, 200 + i, "network.frame_layer_sise = 512", Value::Int(512)));
  }
  ValidateRunConfigs(x.tree, file, diags);
  ApplyOverride(x.tree, "network.frame_layer_sise=1", diags);
  ASSERT_EQ(diags.error_count(), 20u + 40u + 40u + 1u) << diags.Render();
  std::vector<std::string> messages;
  for (const auto& d : diags.all()) {
    if (d.severity == Severity::kError && d.pos.file != FileName("earlier")) messages.push_back(d.message);
  }
  ASSERT_EQ(messages.size(), 81u);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const bool shown = 20 + i < 50;
    const bool group = i >= 40 && i < 60;
    const std::string expected = group ? "unknown settings group 'netwrk'" : "unknown field 'network.frame_layer_sise'";
    EXPECT_EQ(messages[i], !shown ? expected
                           : group ? expected + " (did you mean 'network'?)"
                                   : expected + " (did you mean 'frame_layer_size'?)")
        << "error " << i;
  }
}

// --- Layers, provenance, --set ---------------------------------------------------------------

class SettingsLayers : public ::testing::Test {
 protected:
  XvectorSettings x;
  Diagnostics diags;

  void BindInit(std::vector<parser::Assignment> lines) {
    parser::ResolvedConfig init;
    init.name = "init";
    for (const auto& a : lines) testing::AddResolved(init, a, Provenance::Source::kInitConfig);
    Bind(x.tree, init, diags);
  }
  void BindRun(const std::string& block, std::vector<parser::Assignment> lines) {
    parser::ResolvedConfig run;
    run.name = block;
    for (const auto& a : lines) testing::AddResolved(run, a, Provenance::Source::kRunConfig, block);
    Bind(x.tree, run, diags);
  }
  std::string ProvenanceOf(const std::string& key) { return x.tree.FindField(key)->provenance.ToString(); }
};

TEST_F(SettingsLayers, DefaultThenInitThenRunThenSet) {
  BindInit({MakeAssignment("init_config", 4, "network.max_epochs = 10", Value::Int(10)),
            MakeAssignment("init_config", 5, "network.minibatch_size = 32", Value::Int(32)),
            MakeAssignment("init_config", 6, "paths.output_folder = '/out'", Value::String("/out"))});
  BindRun("net", {MakeAssignment(kRun, 12, "network.max_epochs = 20", Value::Int(20)),
                  MakeAssignment(kRun, 13, "network.minibatch_size = 128", Value::Int(128))});
  ApplyOverride(x.tree, "network.max_epochs=30", diags);
  EXPECT_TRUE(diags.empty()) << diags.Render();

  EXPECT_EQ(x.settings.network.max_epochs, 30);
  EXPECT_EQ(x.settings.network.minibatch_size, 128);
  EXPECT_EQ(x.settings.paths.output_folder, "/out");
  EXPECT_EQ(x.settings.network.embedding_size, 512);

  EXPECT_EQ(ProvenanceOf("network.max_epochs"), "command line (--set)");
  EXPECT_EQ(ProvenanceOf("network.minibatch_size"), "run config 'net' (run_configs:13)");
  EXPECT_EQ(ProvenanceOf("paths.output_folder"), "init config init_config:6");
  EXPECT_EQ(ProvenanceOf("network.embedding_size"), "default");

  EXPECT_EQ(ToText(x.tree, {true, true}),
            "paths.output_folder = '/out'  # init config init_config:6\n"
            "\n"
            "network.max_epochs = 30  # command line (--set)\n"
            "network.minibatch_size = 128  # run config 'net' (run_configs:13)\n");
}

TEST_F(SettingsLayers, BadValuesAreReportedAndNotBound) {
  BindRun("net", {MakeAssignment(kRun, 2, "network.max_epochs = 'many'", Value::String("many")),
                  MakeAssignment(kRun, 3, "network.stat_size = 128", Value::Int(128)),
                  MakeAssignment(kRun, 4, "network.nonexistent = 1", Value::Int(1))});
  EXPECT_EQ(diags.error_count(), 2u) << diags.Render();
  EXPECT_EQ(x.settings.network.max_epochs, 1000);
  EXPECT_EQ(x.settings.network.stat_size, 128);
}

// Values of validated assignments are bound with BindProblems::kSkip: their problems were
// reported once, and are neither looked up nor reported again.
TEST_F(SettingsLayers, SkippedProblemsAreNotReportedAgainNorBound) {
  parser::ResolvedConfig run;
  run.name = "net";
  for (const auto& a : {MakeAssignment(kRun, 2, "network.max_epochs = 'many'", Value::String("many")),
                        MakeAssignment(kRun, 3, "network.stat_size = 128", Value::Int(128)),
                        MakeAssignment(kRun, 4, "network.nonexistent = 1", Value::Int(1)),
                        MakeAssignment(kRun, 5, "netwrk.x = 1", Value::Int(1))}) {
    testing::AddResolved(run, a, Provenance::Source::kRunConfig, "net");
  }
  Bind(x.tree, run, diags, BindProblems::kSkip);
  EXPECT_TRUE(diags.empty()) << diags.Render();
  EXPECT_EQ(x.settings.network.max_epochs, 1000);
  EXPECT_EQ(x.settings.network.stat_size, 128);
  EXPECT_EQ(ProvenanceOf("network.stat_size"), "run config 'net' (run_configs:3)");
  Bind(x.tree, run, diags);  // kReport, as before
  EXPECT_EQ(diags.error_count(), 3u) << diags.Render();
}

TEST_F(SettingsLayers, ClipSizeCheckPointsAtTheLaterSetValue) {
  BindInit({MakeAssignment("init_config", 2, "network.min_clip_size = 300", Value::Int(300))});
  BindRun("net", {MakeAssignment(kRun, 7, "network.max_clip_size = 250", Value::Int(250))});
  ASSERT_TRUE(diags.empty()) << diags.Render();
  Validate(x.tree, diags);
  EXPECT_EQ(OnlyError(diags),
            "run_configs:7:1: error: network.max_clip_size (250) must be >= network.min_clip_size (300)");

  Diagnostics again;
  ApplyOverride(x.tree, "network.min_clip_size=260", again);
  ASSERT_TRUE(again.empty()) << again.Render();
  Validate(x.tree, again);
  EXPECT_EQ(OnlyError(again),
            "--set network.min_clip_size=260: error: network.max_clip_size (250) must be >= network.min_clip_size "
            "(260)");

  Diagnostics fixed;
  ApplyOverride(x.tree, "network.max_clip_size=400", fixed);
  Validate(x.tree, fixed);
  EXPECT_TRUE(fixed.empty()) << fixed.Render();
}

TEST_F(SettingsLayers, RecipeCrossFieldChecks) {
  BindRun("emb", {MakeAssignment(kRun, 2, "recipe.start_stage = 7", Value::Int(7)),
                  MakeAssignment(kRun, 3, "recipe.end_stage = 5", Value::Int(5)),
                  MakeAssignment(kRun, 4, "recipe.training_trial_lists = ['vox1_o']",
                                 Value::List({Value::String("vox1_o")}))});
  Validate(x.tree, diags);
  ASSERT_EQ(diags.error_count(), 2u) << diags.Render();
  EXPECT_EQ(diags.all()[0].message, "recipe.end_stage (5) must be >= recipe.start_stage (7)");
  EXPECT_EQ(diags.all()[0].pos.line, 3);
  EXPECT_EQ(diags.all()[1].message,
            "recipe.training_trial_lists names 'vox1_o', which is not a key of recipe.trial_lists");
  EXPECT_EQ(diags.all()[1].pos.line, 4);
}

TEST_F(SettingsLayers, ResetToDefaultsForTheNextConfig) {
  BindRun("net", {MakeAssignment(kRun, 2, "network.max_epochs = 5", Value::Int(5))});
  ResetToDefaults(x.tree);
  EXPECT_EQ(x.settings.network.max_epochs, 1000);
  EXPECT_EQ(ProvenanceOf("network.max_epochs"), "default");
}

TEST(SettingsOverride, RawStringFallbackForStringFields) {
  XvectorSettings x;
  Diagnostics diags;
  ApplyOverride(x.tree, "paths.output_folder=/tmp/x", diags);
  ApplyOverride(x.tree, "paths.system_folder='quoted system'", diags);
  ApplyOverride(x.tree, "features.cmvn=", diags);
  EXPECT_TRUE(diags.empty()) << diags.Render();
  EXPECT_EQ(x.settings.paths.output_folder, "/tmp/x");
  EXPECT_EQ(x.settings.paths.system_folder, "quoted system");
  EXPECT_EQ(x.settings.features.cmvn, features::Cmvn::kNone);
  EXPECT_EQ(x.tree.FindField("paths.output_folder")->provenance.source, Provenance::Source::kCommandLine);
}

TEST(SettingsOverride, LiteralsOfOtherTypes) {
  XvectorSettings x;
  Diagnostics diags;
  ApplyOverride(x.tree, "computing.gpu_ids=(0, 1)", diags);
  ApplyOverride(x.tree, " recipe.selected_epoch = 12 ", diags);
  ApplyOverride(x.tree, "recipe.augmentation_datasets={'voxceleb2_cat': 5}", diags);
  ApplyOverride(x.tree, "computing.use_gpu=False", diags);
  EXPECT_TRUE(diags.empty()) << diags.Render();
  EXPECT_EQ(x.settings.computing.gpu_ids, (Tuple<int>{0, 1}));
  EXPECT_EQ(x.recipe.selected_epoch, 12);
  ASSERT_NE(x.recipe.augmentation_datasets.Find("voxceleb2_cat"), nullptr);
  EXPECT_EQ(*x.recipe.augmentation_datasets.Find("voxceleb2_cat"), 5);
  EXPECT_FALSE(x.settings.computing.use_gpu);
}

TEST(SettingsOverride, ErrorsNameTheArgument) {
  XvectorSettings x;
  const auto error_of = [&](const std::string& arg) {
    Diagnostics diags;
    ApplyOverride(x.tree, arg, diags);
    return diags.empty() ? std::string() : OnlyError(diags);
  };
  EXPECT_EQ(error_of("network.max_epochs=1.5"),
            "--set network.max_epochs=1.5: error: network.max_epochs must be int, got float 1.5");
  EXPECT_EQ(error_of("network.max_epoch=5"),
            "--set network.max_epoch=5: error: unknown field 'network.max_epoch' (did you mean 'max_epochs'?)");
  EXPECT_EQ(error_of("network.max_epochs"), "--set network.max_epochs: error: expected --set group.field=value");
  EXPECT_EQ(error_of("paths.system_folder=12"),
            "--set paths.system_folder=12: error: paths.system_folder must be str, got int 12");
  const std::string bad_int = error_of("network.max_epochs=abc");
  EXPECT_EQ(bad_int.rfind("--set network.max_epochs=abc: error: cannot read 'abc' as int", 0), 0u) << bad_int;
  EXPECT_EQ(x.settings.network.max_epochs, 1000);
}

// Text that would break the files and Kaldi specifiers it ends up in is rejected when the config
// is read, naming the --set argument (or file:line for configs), not hours later in a stage.
TEST(SettingsOverride, PathsAndNamesThatWouldBreakFilesAreRejected) {
  XvectorSettings x;
  const auto error_of = [&](const std::string& arg) {
    Diagnostics diags;
    ApplyOverride(x.tree, arg, diags);
    return diags.empty() ? std::string() : OnlyError(diags);
  };
  EXPECT_EQ(error_of("paths.system_folder=exp,lr0.2"),
            "--set paths.system_folder=exp,lr0.2: error: paths.system_folder 'exp,lr0.2' contains ',', which splits "
            "the Kaldi wspecifiers ('ark,scp:ARCHIVE,SCRIPT') that outputs under it are written with; choose a folder "
            "name without ','");
  EXPECT_NE(error_of("paths.output_folder=/data/a,b").find("contains ','"), std::string::npos);
  EXPECT_NE(error_of("paths.feature_and_list_folder=a,b").find("contains ','"), std::string::npos);
  EXPECT_EQ(error_of("paths.musan_folder=/data/a,b"), "");  // read as a folder, never in a specifier
  EXPECT_EQ(error_of("paths.output_folder="),
            "--set paths.output_folder=: error: paths.output_folder '' must not be empty");
  EXPECT_EQ(error_of("paths.system_folder=out\377"),
            "--set paths.system_folder=out\377: error: paths.system_folder: the text is not valid UTF-8 (byte 0xff "
            "at offset 3)");
  EXPECT_NE(error_of("paths.system_folder=a\nb").find("contains the control character 0x0a (newline)"),
            std::string::npos);
  EXPECT_EQ(error_of("paths.datasets={'../../victim': '/data/vox1'}"),
            "--set paths.datasets={'../../victim': '/data/vox1'}: error: paths.datasets: dataset name '../../victim' "
            "is not a plain name: it starts with '.'; it becomes a file or folder name under paths.output_folder, so "
            "it may hold only letters, digits, '_', '-', '+' and '.' (not first)");
  EXPECT_NE(error_of("paths.datasets={'a/b': '/data/vox1'}").find("it contains '/'"), std::string::npos);
  // Ordinary values pass, UTF-8 and spaces included.
  EXPECT_EQ(error_of("paths.system_folder=système lr0.2"), "");
  EXPECT_EQ(error_of("paths.datasets={'voxceleb1': '/data/a,b/vox1', 'vox2_test-1.0+x': '/d'}"), "");
  EXPECT_EQ(x.settings.paths.system_folder, "système lr0.2");
}

TEST(SettingsBinding, NulBytesAndInvalidUtf8InConfigStringsAreErrors) {
  const std::string nul = Check("paths.kaldi_recipe_folder = 'a\\x00b'", Value::String(std::string("a\0b", 3)));
  EXPECT_NE(nul.find("run_configs:3:"), std::string::npos) << nul;
  EXPECT_NE(nul.find("error: paths.kaldi_recipe_folder: the text contains a NUL byte at offset 1"), std::string::npos)
      << nul;
  const std::string key =
      Check("paths.datasets = {'\\xc3': 'x'}", Value::Dict({{Value::String("\xc3"), Value::String("x")}}));
  EXPECT_NE(key.find("error: paths.datasets key: the text is not valid UTF-8 (byte 0xc3 at offset 0)"),
            std::string::npos)
      << key;
  // Overlong encodings and surrogates are not UTF-8 either; real multi-byte text is.
  EXPECT_NE(Check("network.optimizer = ...", Value::String("\xc0\xafx")).find("not valid UTF-8 (byte 0xc0"),
            std::string::npos);
  EXPECT_NE(Check("paths.system_folder = ...", Value::String("a\xed\xa0\x80")).find("byte 0xed at offset 1"),
            std::string::npos);
  EXPECT_EQ(Check("paths.system_folder = ...", Value::String("\xe6\x97\xa5\xf0\x9f\x8e\x99 \xc3\xa9")), "");
}

TEST(SettingsNoEffect, WarnsOnlyForNonDefaultValuesFromConfigs) {
  XvectorSettings x;
  Diagnostics diags;
  parser::ResolvedConfig init;
  testing::AddResolved(init,
                       MakeAssignment("init_config", 3, "computing.ubm_training_workers = 4", Value::Int(4)),
                       Provenance::Source::kInitConfig);
  testing::AddResolved(init, MakeAssignment("init_config", 4, "features.log_feats = True", Value::Bool(true)),
                       Provenance::Source::kInitConfig);
  Bind(x.tree, init, diags);
  ApplyOverride(x.tree, "computing.world_size=2", diags);
  x.settings.computing.local_process_rank = 1;  // asvrun at run time: no warning
  Validate(x.tree, diags);
  ASSERT_EQ(diags.all().size(), 2u) << diags.Render();
  EXPECT_FALSE(diags.has_errors());
  EXPECT_EQ(diags.all()[0].Render(),
            "init_config:3:1: warning: computing.ubm_training_workers has no effect in asvcpp: only ASVtorch's "
            "i-vector recipes read it; asvcpp has no i-vector pipeline\n"
            " 3 | computing.ubm_training_workers = 4\n"
            "   | ^\n");
  EXPECT_EQ(diags.all()[1].Render(),
            "--set computing.world_size=2: warning: computing.world_size has no effect in asvcpp: set by asvrun at "
            "run time from the launch environment\n");
}

TEST(SettingsNoEffect, MarkedFieldsAreTheDocumentedOnes) {
  XvectorSettings x;
  std::vector<std::string> marked;
  for (const auto& g : x.tree.groups()) {
    if (g.name == "ivector" || g.name == "posterior_extraction") {
      for (const auto& f : g.fields) EXPECT_FALSE(f.no_effect.empty()) << f.key();
      continue;
    }
    for (const auto& f : g.fields) {
      if (!f.no_effect.empty()) marked.push_back(f.key());
    }
  }
  EXPECT_EQ(marked, (std::vector<std::string>{
                        "computing.ubm_training_workers",
                        "computing.posterior_extraction_dataloader_workers", "computing.ivector_dataloader_workers",
                        "computing.local_process_rank", "computing.local_gpu_id", "computing.world_size",
                        "network.attention_layer_size", "features.sampling_rate", "features.frame_shift",
                        "features.log_feats", "features.dct_feats"}));
}

}  // namespace
}  // namespace asv::settings
