#include "asvcpp/nnet/xvector_net.h"

#include <set>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "asvcpp/base/error.h"
#include "asvcpp/settings/settings.h"
#include "tests/asvcpp/nnet/nnet_test_util.h"

namespace asv::nnet {
namespace {

using testing::StateKeys;

TEST(XvectorNetTest, StandardNetParameterCountMatchesAsvtorch) {
  // ASVtorch's StandardNet (asvtorch/src/networks/architectures.py): 5,800,852 without the
  // classifier for 30-dim input; the classifier adds 513 per speaker.
  settings::NetworkSettings s;
  for (std::int64_t n_speakers : {1, 1000}) {
    auto net = MakeXvectorNet(s, 30, n_speakers);
    EXPECT_EQ(CountParameters(*net), 5800852 + 513 * n_speakers);
    EXPECT_EQ(CountParameters(*net->classifier), 513 * n_speakers);
  }
}

TEST(XvectorNetTest, StandardSeNetAddsSqueezeExcitationParameters) {
  settings::NetworkSettings s;
  s.network_class = "StandardSeNet";
  auto net = MakeXvectorNet(s, 30, 10);
  // SE(D, 16): Linear(2D -> D/16) + BN(D/16) + Linear(D/16 -> D).
  auto se = [](std::int64_t d) { return (2 * d * (d / 16) + d / 16) + 2 * (d / 16) + ((d / 16) * d + d); };
  EXPECT_EQ(CountParameters(*net), 5800852 + 513 * 10 + 4 * se(512) + se(1500));
}

TEST(XvectorNetTest, OutputShapesOfEveryArchitecture) {
  torch::manual_seed(20);
  for (const std::string arch : {"StandardNet", "StandardSeNet", "StandardResSeNet", "LargeResSeNet"}) {
    settings::NetworkSettings s;
    s.network_class = std::string(settings::kAsvtorchArchitecturePrefix) + arch;
    s.frame_layer_size = 64;
    s.stat_size = 96;
    s.embedding_size = 32;
    s.ser = 8;
    auto net = MakeXvectorNet(s, 30, 7);
    EXPECT_EQ(EnumToName(net->options().architecture), arch);
    EXPECT_EQ(net->frame_layers.size(), arch == "LargeResSeNet" ? 10u : 5u);
    for (auto [batch, frames] : {std::pair<int, int>{2, 1}, {3, 7}, {5, 50}}) {
      net->train();
      auto x = torch::randn({batch, 30, frames});
      EXPECT_EQ(net->forward(x).sizes(), (std::vector<std::int64_t>{batch, 7})) << arch;
      EXPECT_EQ(net->FrameOutputs(x).sizes(), (std::vector<std::int64_t>{batch, 96, frames})) << arch;
      EXPECT_EQ(net->Pooled(x).sizes(), (std::vector<std::int64_t>{batch, 192})) << arch;
      net->eval();
      EXPECT_EQ(net->Embed(x).sizes(), (std::vector<std::int64_t>{batch, 32})) << arch;
    }
  }
}

TEST(XvectorNetTest, ClusteringPoolingShapes) {
  torch::manual_seed(21);
  for (const bool lde : {false, true}) {
    settings::NetworkSettings s;
    s.frame_layer_size = 32;
    s.stat_size = 16;
    s.embedding_size = 8;
    s.pooling_layer_type = PoolingType::kClustering;
    s.cluster_assignment_mode = lde ? ClusterAssignment::kLde : ClusterAssignment::kNetVlad;
    s.supervector_mode = lde ? SupervectorMode::kLde : SupervectorMode::kNetVlad;
    s.n_clusters = 5;
    auto net = MakeXvectorNet(s, 20, 4);
    EXPECT_EQ(net->pooling_output_dim(), 80);
    auto x = torch::randn({3, 20, 12});
    EXPECT_EQ(net->forward(x).sizes(), (std::vector<std::int64_t>{3, 4}));
    net->eval();
    EXPECT_EQ(net->Embed(x).sizes(), (std::vector<std::int64_t>{3, 8}));
    EXPECT_TRUE(StateKeys(*net).count("pooling_layer.centroids"));
  }
}

TEST(XvectorNetTest, EmbeddingIsLinearOutputBeforeBatchNorm) {
  torch::manual_seed(22);
  settings::NetworkSettings s;
  s.frame_layer_size = 32;
  s.stat_size = 48;
  s.embedding_size = 16;
  auto net = MakeXvectorNet(s, 10, 6);
  // A few training steps' worth of batch-norm statistics, so eval-mode BN is not the identity.
  for (int i = 0; i < 3; ++i) net->forward(torch::randn({8, 10, 20}) * 2 + 1);
  net->eval();
  torch::NoGradGuard no_grad;
  auto x = torch::randn({4, 10, 25});
  auto pooled = net->Pooled(x);
  auto embedding = net->Embed(x);
  EXPECT_TRUE(torch::allclose(embedding, net->embedding_layer->linear(pooled)));
  EXPECT_FALSE(torch::allclose(embedding, net->embedding_layer(pooled), 1e-3, 1e-3));
  EXPECT_TRUE(
      torch::allclose(net->forward(x), net->classifier(net->embedding_layer->batchnorm(embedding)), 1e-5, 1e-5));
}

TEST(XvectorNetTest, StateDictKeysFollowAsvtorch) {
  settings::NetworkSettings s;
  s.frame_layer_size = 32;
  s.stat_size = 48;
  s.embedding_size = 16;
  s.ser = 4;
  const auto plain = StateKeys(*MakeXvectorNet(s, 10, 3));
  for (const char* key :
       {"tdnn_layers.0.cnn.weight", "tdnn_layers.0.cnn.bias", "tdnn_layers.0.batchnorm.weight",
        "tdnn_layers.0.batchnorm.running_mean", "tdnn_layers.0.batchnorm.num_batches_tracked",
        "tdnn_layers.4.cnn.weight", "utterance_layers.0.linear.weight", "utterance_layers.0.batchnorm.running_var",
        "utterance_layers.1.weight", "utterance_layers.1.bias"}) {
    EXPECT_TRUE(plain.count(key)) << key;
  }
  s.network_class = "StandardResSeNet";
  const auto res = StateKeys(*MakeXvectorNet(s, 10, 3));
  for (const char* key : {"tdnn_layers.0.se.linear_relu_bn.linear.weight", "tdnn_layers.1.fc.weight",
                          "tdnn_layers.1.fc_norm.running_mean", "tdnn_layers.1.cnn_norm.weight",
                          "tdnn_layers.1.se.fc.bias", "tdnn_layers.4.se.linear_relu_bn.batchnorm.weight"}) {
    EXPECT_TRUE(res.count(key)) << key;
  }
}

TEST(XvectorNetTest, RejectsBadInput) {
  settings::NetworkSettings s;
  s.frame_layer_size = 16;
  s.stat_size = 16;
  s.embedding_size = 8;
  auto net = MakeXvectorNet(s, 10, 3);
  EXPECT_THROW(net->forward(torch::randn({2, 11, 20})), DataError);
  EXPECT_THROW(net->forward(torch::randn({2, 10, 0})), DataError);
  EXPECT_THROW(net->forward(torch::randn({10, 20})), DataError);
  s.cnn_padding_mode = PaddingMode::kCircular;
  auto circular = MakeXvectorNet(s, 10, 3);
  EXPECT_EQ(circular->max_reach(), 3);
  EXPECT_THROW(circular->forward(torch::randn({2, 10, 2})), DataError);
  EXPECT_EQ(circular->forward(torch::randn({2, 10, 3})).sizes(), (std::vector<std::int64_t>{2, 3}));
}

TEST(XvectorNetTest, BuildsTheArchitectureNetworkClassNames) {
  settings::NetworkSettings s;
  s.network_class = "asvtorch.src.networks.architectures.LargeResSeNet";
  EXPECT_EQ(NetOptionsFromSettings(s, 30, 2).architecture, Architecture::kLargeResSeNet);
  s.network_class = "StandardSeNet";
  EXPECT_EQ(NetOptionsFromSettings(s, 30, 2).architecture, Architecture::kStandardSeNet);
  s.network_class = "my.module.Custom";
  EXPECT_THROW(NetOptionsFromSettings(s, 30, 2), ConfigError);
}

}  // namespace
}  // namespace asv::nnet
