// Unit tests of the WeSpeaker networks (asvcpp/nnet/{pooling,resnet,ecapa_tdnn}.h): parameter
// counts, shapes, pooling formulas and input checks. Comparisons with WeSpeaker's PyTorch code
// are in wespeaker_golden_test.cc.
#include <cmath>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "asvcpp/base/error.h"
#include "asvcpp/nnet/ecapa_tdnn.h"
#include "asvcpp/nnet/pooling.h"
#include "asvcpp/nnet/resnet.h"
#include "asvcpp/nnet/xvector_net.h"
#include "tests/asvcpp/nnet/nnet_test_util.h"

namespace asv::nnet {
namespace {

using testing::StateKeys;

TEST(WespeakerModelsTest, ParameterCountsMatchWespeaker) {
  // The counts of WeSpeaker's models (feat_dim 80), from tools/golden/make_model_golden.py; its
  // papers and READMEs round them to 6.63 M, 6.19 M and 14.65 M.
  EXPECT_EQ(CountParameters(*ResNet(ResNet34Options(80, 256))), 6634336);
  EXPECT_EQ(CountParameters(*EcapaTdnn(EcapaTdnnOptionsFor("ECAPA_TDNN_c512"))), 5797504);
  EXPECT_EQ(CountParameters(*EcapaTdnn(EcapaTdnnOptionsFor("ECAPA_TDNN_GLOB_c512"))), 6190720);
  EXPECT_EQ(CountParameters(*EcapaTdnn(EcapaTdnnOptionsFor("ECAPA_TDNN_c1024"))), 14263872);
  EXPECT_EQ(CountParameters(*EcapaTdnn(EcapaTdnnOptionsFor("ECAPA_TDNN_GLOB_c1024"))), 14657088);
}

TEST(WespeakerModelsTest, EcapaOptionsForWespeakerNames) {
  EXPECT_EQ(EcapaTdnnOptionsFor("ECAPA_TDNN_c1024").channels, 1024);
  EXPECT_FALSE(EcapaTdnnOptionsFor("ECAPA_TDNN_c1024").global_context);
  EXPECT_EQ(EcapaTdnnOptionsFor("ECAPA_TDNN_GLOB_c512").channels, 512);
  EXPECT_TRUE(EcapaTdnnOptionsFor("ECAPA_TDNN_GLOB_c512").global_context);
  EXPECT_EQ(EcapaTdnnOptionsFor("ECAPA_TDNN_c512", 40, 256).feat_dim, 40);
  EXPECT_EQ(EcapaTdnnOptionsFor("ECAPA_TDNN_c512", 40, 256).embed_dim, 256);
  EXPECT_THROW(EcapaTdnnOptionsFor("ECAPA_TDNN_c256"), ConfigError);
  EXPECT_THROW(EcapaTdnnOptionsFor("ResNet34"), ConfigError);
}

TEST(WespeakerModelsTest, StateKeysUseWespeakerNames) {
  const auto resnet = StateKeys(*ResNet(ResNet34Options()));
  for (const char* key : {"conv1.weight", "bn1.running_var", "layer1.0.conv1.weight", "layer2.0.shortcut.0.weight",
                          "layer2.0.shortcut.1.num_batches_tracked", "layer4.2.bn2.bias", "seg_1.weight"}) {
    EXPECT_EQ(resnet.count(key), 1u) << key;
  }
  EXPECT_EQ(resnet.count("layer1.0.shortcut.0.weight"), 0u);  // identity shortcut
  const auto ecapa = StateKeys(*EcapaTdnn(EcapaTdnnOptions{}));
  for (const char* key :
       {"layer1.conv.weight", "layer2.se_res2block.1.convs.6.weight", "layer3.se_res2block.1.bns.0.running_mean",
        "layer4.se_res2block.3.linear2.bias", "conv.weight", "pool.linear1.weight", "bn.running_var", "linear.bias"}) {
    EXPECT_EQ(ecapa.count(key), 1u) << key;
  }
  EXPECT_EQ(ecapa.count("layer2.se_res2block.1.convs.7.weight"), 0u);  // scale 8: 7 convolutions
}

TEST(WespeakerModelsTest, ResNetShapes) {
  torch::manual_seed(1);
  ResNetOptions options = ResNet34Options(40, 64);
  options.num_blocks = {1, 1, 1, 1};
  options.m_channels = 8;
  ResNet net(options);
  net->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({3, 37, 40});
  EXPECT_EQ(net->FrameLevelFeatures(x).sizes(), (std::vector<std::int64_t>{3, 64, 5, 5}));
  EXPECT_EQ(net->pool_out_dim(), 2 * 64 * 5);
  EXPECT_EQ(net->forward(x).sizes(), (std::vector<std::int64_t>{3, 64}));
  EXPECT_NO_THROW(net->forward(torch::randn({1, 9, 40})));
  EXPECT_THROW(net->forward(torch::randn({1, 8, 40})), DataError);  // 1 frame left for TSTP
  EXPECT_THROW(net->forward(torch::randn({1, 37, 41})), DataError);
  EXPECT_THROW(net->forward(torch::randn({37, 40})), DataError);
  EXPECT_THROW(ResNet(ResNet34Options(81)), ConfigError);
}

// Gives every BatchNorm of `net` running statistics and an affine map far from the identity, so
// that folding them wrongly (or not at all) changes the output.
void RandomizeBatchNorms(torch::nn::Module& net) {
  torch::NoGradGuard no_grad;
  for (auto& b : net.named_buffers()) {
    if (b.key().find("running_mean") != std::string::npos) b.value().copy_(torch::randn_like(b.value()) * 0.5);
    if (b.key().find("running_var") != std::string::npos) b.value().copy_(torch::rand_like(b.value()) * 2 + 0.1);
  }
  for (auto& p : net.named_parameters()) {
    if (p.key().find("bn") == std::string::npos && p.key().find("shortcut.1") == std::string::npos) continue;
    p.value().copy_(p.key().find("weight") != std::string::npos ? torch::rand_like(p.value()) + 0.5
                                                                 : torch::randn_like(p.value()) * 0.3);
  }
}

TEST(WespeakerModelsTest, FoldedResNetEqualsTheEvalModeNetwork) {
  for (const bool channels_last : {false, true}) {
    torch::manual_seed(3);
    ResNetOptions options = ResNet34Options(40, 64);
    options.num_blocks = {2, 2, 1, 1};  // identity and projection shortcuts
    options.m_channels = 8;
    options.channels_last = channels_last;
    ResNet net(options);
    RandomizeBatchNorms(*net);
    net->eval();
    torch::NoGradGuard no_grad;
    const FoldedResNet folded(*net);
    for (const std::int64_t frames : {9, 37, 200}) {
      const torch::Tensor x = torch::randn({3, frames, 40});
      const torch::Tensor expected = net->forward(x);
      const torch::Tensor got = folded.forward(x);
      ASSERT_EQ(got.sizes(), expected.sizes());
      const double relative = (got - expected).abs().max().item<double>() / expected.abs().max().item<double>();
      EXPECT_LT(relative, 1e-5) << frames << " frames, channels_last " << channels_last;
    }
    // The same checks as the network's forward.
    EXPECT_THROW(folded.forward(torch::randn({1, 8, 40})), DataError);
    EXPECT_THROW(folded.forward(torch::randn({1, 37, 41})), DataError);

    // A snapshot: later changes of the network do not reach it.
    const torch::Tensor x = torch::randn({1, 50, 40});
    const torch::Tensor before = folded.forward(x);
    net->layer1[0]->as<BasicBlockImpl>()->bn1->running_mean.add_(1.0);
    EXPECT_TRUE(torch::equal(folded.forward(x), before));
    EXPECT_FALSE(torch::allclose(net->forward(x), before, 1e-3, 1e-3));
  }
}

TEST(WespeakerModelsTest, EcapaShapes) {
  torch::manual_seed(2);
  EcapaTdnnOptions options;
  options.channels = 64;
  options.feat_dim = 24;
  options.embed_dim = 32;
  EcapaTdnn net(options);
  net->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({2, 13, 24});
  EXPECT_EQ(net->FrameLevelFeatures(x).sizes(), (std::vector<std::int64_t>{2, 1536, 13}));
  EXPECT_EQ(net->forward(x).sizes(), (std::vector<std::int64_t>{2, 32}));
  EXPECT_THROW(net->forward(torch::randn({2, 1, 24})), DataError);  // global context needs 2 frames
  options.global_context = false;
  EcapaTdnn local(options);
  local->eval();
  EXPECT_EQ(local->forward(torch::randn({2, 1, 24})).sizes(), (std::vector<std::int64_t>{2, 32}));
  EXPECT_THROW(local->forward(torch::randn({2, 13, 23})), DataError);
  options.channels = 60;
  EXPECT_THROW(EcapaTdnn{options}, ConfigError);
}

TEST(WespeakerModelsTest, TemporalStatsPoolingIsMeanAndUnbiasedStd) {
  // Channel 0: frames 1, 2, 3, 6 -> mean 3, unbiased variance (4 + 1 + 0 + 9) / 3.
  const torch::Tensor x = torch::tensor({1.0f, 2.0f, 3.0f, 6.0f, 5.0f, 5.0f, 5.0f, 5.0f}).reshape({1, 2, 4});
  TemporalStatsPooling pool;
  const torch::Tensor y = pool(x);
  ASSERT_EQ(y.sizes(), (std::vector<std::int64_t>{1, 4}));
  EXPECT_FLOAT_EQ(y[0][0].item<float>(), 3.0f);
  EXPECT_FLOAT_EQ(y[0][1].item<float>(), 5.0f);
  EXPECT_FLOAT_EQ(y[0][2].item<float>(), static_cast<float>(std::sqrt(14.0 / 3.0 + 1e-7)));
  EXPECT_FLOAT_EQ(y[0][3].item<float>(), static_cast<float>(std::sqrt(1e-7)));
  // [batch, C, F, frames]: channel-major rows, same values as the flattened 3-D input.
  const torch::Tensor x4 = torch::randn({2, 3, 5, 7});
  EXPECT_TRUE(torch::allclose(pool(x4), pool(x4.reshape({2, 15, 7}))));
  EXPECT_THROW(pool(torch::randn({2, 3, 1})), DataError);
  EXPECT_THROW(pool(torch::randn({2, 3})), DataError);
}

TEST(WespeakerModelsTest, AttentiveStatsPoolingWithUniformAttentionIsBiasedStats) {
  // With linear2's weights zero the attention is uniform over frames: the weighted mean is the
  // mean and the weighted variance the biased one.
  AttentiveStatsPooling pool(3, 4, /*global_context=*/true);
  EXPECT_EQ(pool->linear1->weight.size(1), 9);
  torch::NoGradGuard no_grad;
  pool->linear2->weight.zero_();
  const torch::Tensor x = torch::randn({2, 3, 6});
  const torch::Tensor y = pool(x);
  const torch::Tensor mean = x.mean(2);
  const torch::Tensor std = torch::sqrt(torch::clamp_min((x * x).mean(2) - mean * mean, 1e-7));
  EXPECT_TRUE(torch::allclose(y, torch::cat({mean, std}, 1), 1e-5, 1e-6));
  EXPECT_THROW(pool(torch::randn({2, 4, 6})), DataError);
  EXPECT_THROW(pool(torch::randn({2, 3, 1})), DataError);
}

}  // namespace
}  // namespace asv::nnet
