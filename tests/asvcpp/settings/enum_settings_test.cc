// Enumerated settings: fields that hold enums whose names come from one table beside the enum
// (asvcpp/base/enum_names.h), bound from configs and --set, checked, listed and dumped as
// ASVtorch's strings.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "asvcpp/base/error.h"
#include "asvcpp/settings/binding.h"
#include "asvcpp/settings/dump.h"
#include "settings_test_util.h"

namespace asv::settings {
namespace {

using testing::XvectorSettings;

// ASVtorch's spellings of the enumerated settings' defaults: what the JSON dump (and so the
// database and `asvrun diff`) stored before these fields were enums.
const std::map<std::string, std::string> kDefaultStrings = {
    {"network.optimizer", "sgd"},
    {"network.cnn_padding_mode", "zeros"},
    {"network.activation", "lrelu"},
    {"network.pooling_layer_type", "default"},
    {"network.cluster_assignment_mode", "net_vlad"},
    {"network.supervector_mode", "net_vlad"},
    {"network.lde_covariance_type", "spherical"},
    {"network.precision", "fp32"},
    {"ivector.ivec_type", "augmented"},
    {"ivector.covariance_type", "full"},
    {"features.cmvn", "m"},
    {"features.deltas", "b"},
    {"backend.scoring", "plda"},
};

TEST(EnumSettings, DefaultsDumpAsAsvtorchStrings) {
  XvectorSettings x;
  const auto json = ToJson(x.tree);
  for (const auto& [key, name] : kDefaultStrings) {
    EXPECT_EQ(json.at(key), name) << key;
    EXPECT_FALSE(x.tree.FindField(key)->choices.empty()) << key;
  }
}

TEST(EnumSettings, EveryChoiceBindsAndDumpsAsItsName) {
  // Every field with choices, every choice: --set binds it, the dumps write it back unchanged and
  // the field stays default only for the default name.
  int checked = 0;
  const XvectorSettings probe;
  for (const auto& key : probe.tree.Keys()) {
    const Field* field = probe.tree.FindField(key);
    for (const auto& choice : field->choices) {
      XvectorSettings x;
      Diagnostics diags;
      ApplyOverride(x.tree, key + "=" + parser::Value::String(choice).Repr(), diags);
      ASSERT_TRUE(diags.empty()) << key << " = " << choice << "\n" << diags.Render();
      EXPECT_EQ(ToJson(x.tree).at(key), choice) << key;
      EXPECT_EQ(x.tree.FindField(key)->get(), parser::Value::String(choice)) << key;
      EXPECT_EQ(x.tree.FindField(key)->IsDefault(), field->default_value.as_string() == choice) << key;
      ++checked;
    }
  }
  EXPECT_GE(checked, 34);  // 13 enumerated fields with 2-6 names each
}

TEST(EnumSettings, StructsHoldTheEnumValues) {
  XvectorSettings x;
  Diagnostics diags;
  for (const char* set : {"network.activation=selu", "network.cnn_padding_mode=circular",
                          "network.pooling_layer_type=clustering", "network.cluster_assignment_mode=lde",
                          "network.supervector_mode=lde", "network.lde_covariance_type=shared_diagonal",
                          "network.precision=bf16", "features.cmvn=mv", "features.deltas=bva", "backend.scoring=cosine",
                          "ivector.ivec_type=standard", "ivector.covariance_type=shared_spherical",
                          "network.network_class=StandardResSeNet"}) {
    ApplyOverride(x.tree, set, diags);
  }
  ASSERT_TRUE(diags.empty()) << diags.Render();
  const auto& n = x.settings.network;
  EXPECT_EQ(n.activation, nnet::Activation::kSelu);
  EXPECT_EQ(n.cnn_padding_mode, nnet::PaddingMode::kCircular);
  EXPECT_EQ(n.pooling_layer_type, nnet::PoolingType::kClustering);
  EXPECT_EQ(n.cluster_assignment_mode, nnet::ClusterAssignment::kLde);
  EXPECT_EQ(n.supervector_mode, nnet::SupervectorMode::kLde);
  EXPECT_EQ(n.lde_covariance_type, nnet::LdeCovariance::kSharedDiagonal);
  EXPECT_EQ(n.precision, train::Precision::kBFloat16);
  EXPECT_EQ(n.optimizer, train::OptimizerKind::kSgd);
  EXPECT_EQ(n.Architecture(), nnet::Architecture::kStandardResSeNet);
  EXPECT_EQ(x.settings.features.cmvn, features::Cmvn::kMeanVariance);
  EXPECT_EQ(x.settings.features.deltas, features::Deltas::kDeltaDelta);
  EXPECT_EQ(x.settings.backend.scoring, backend::Scoring::kCosine);
  EXPECT_EQ(x.settings.ivector.ivec_type, IvectorType::kStandard);
  EXPECT_EQ(x.settings.ivector.covariance_type, IvectorCovariance::kSharedSpherical);

  ResetToDefaults(x.tree);
  EXPECT_EQ(n.activation, nnet::Activation::kLeakyRelu);
  EXPECT_EQ(x.settings.features.cmvn, features::Cmvn::kMean);
}

TEST(EnumSettings, BadNameOnTheCommandLineListsTheTableAndSuggests) {
  XvectorSettings x;
  Diagnostics diags;
  ApplyOverride(x.tree, "network.precision=bf61", diags);
  ApplyOverride(x.tree, "backend.scoring=cosin", diags);
  ASSERT_EQ(diags.all().size(), 2u) << diags.Render();
  EXPECT_EQ(diags.all()[0].pos.file.str(), "--set network.precision=bf61");
  EXPECT_EQ(diags.all()[0].message, "network.precision must be one of 'fp32', 'bf16', got 'bf61' (did you mean 'bf16'?)");
  EXPECT_EQ(diags.all()[1].message, "backend.scoring must be one of 'plda', 'cosine', got 'cosin' (did you mean "
                                    "'cosine'?)");
  EXPECT_EQ(x.settings.network.precision, train::Precision::kFloat32);
  EXPECT_EQ(x.settings.backend.scoring, backend::Scoring::kPlda);
}

TEST(EnumSettings, ArchitectureOfNetworkClass) {
  NetworkSettings n;
  EXPECT_EQ(n.Architecture(), nnet::Architecture::kStandardNet);  // ASVtorch's dotted default
  n.network_class = "asvtorch.src.networks.architectures.LargeResSeNet";
  EXPECT_EQ(n.Architecture(), nnet::Architecture::kLargeResSeNet);
  n.network_class = "StandardSeNet";
  EXPECT_EQ(n.Architecture(), nnet::Architecture::kStandardSeNet);
  n.network_class = "mylab.nets.TinyNet";
  try {
    n.Architecture();
    ADD_FAILURE() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("names a custom Python class"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace asv::settings
