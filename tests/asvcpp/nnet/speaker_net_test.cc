#include "asvcpp/nnet/speaker_net.h"

#include <set>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "asvcpp/base/error.h"
#include "asvcpp/nnet/ecapa_tdnn.h"
#include "asvcpp/nnet/resnet.h"
#include "asvcpp/nnet/xvector_net.h"

namespace asv::nnet {
namespace {

MarginHeadOptions Arc() {
  MarginHeadOptions o;
  o.type = HeadType::kArcMargin;
  return o;
}

std::set<std::string> Keys(const torch::nn::Module& m) {
  std::set<std::string> keys;
  for (const auto& p : m.named_parameters()) keys.insert(p.key());
  for (const auto& b : m.named_buffers()) keys.insert(b.key());
  return keys;
}

TEST(SpeakerNetTest, MarginNetHasTheModelsKeysAtTheTopAndTheHeadAsProjection) {
  torch::manual_seed(1);
  auto net = MakeMarginNet("ResNet34", 80, 256, 10, Arc());
  torch::manual_seed(1);
  auto resnet = ResNet(ResNet34Options(80, 256));
  auto expected = Keys(*resnet);
  expected.insert("projection.weight");
  EXPECT_EQ(Keys(*net), expected);
  // ResNet34's parameters plus the AAM head's [classes, embed_dim] weight.
  EXPECT_EQ(CountParameters(*net), 6634336 + 10 * 256);
  const auto info = net->info();
  EXPECT_EQ(info.architecture, "ResNet34");
  EXPECT_EQ(info.feat_dim, 80);
  EXPECT_EQ(info.n_speakers, 10);
  EXPECT_EQ(info.embedding_size, 256);
  EXPECT_EQ(info.layout, FeatureLayout::kFramesFirst);
  EXPECT_EQ(info.min_frames, 9);

  auto ecapa = MakeMarginNet("ECAPA_TDNN_GLOB_c512", 80, 192, 7, Arc());
  EXPECT_EQ(CountParameters(*ecapa), 6190720 + 7 * 192);
  EXPECT_EQ(ecapa->info().min_frames, 2);
  EXPECT_EQ(MakeMarginNet("ECAPA_TDNN_c512", 80, 192, 7, Arc())->info().min_frames, 1);
}

TEST(SpeakerNetTest, MarginNetEmbedsWithTheModelAndScoresWithTheHead) {
  torch::manual_seed(3);
  auto net = MakeMarginNet("ECAPA_TDNN_c512", 16, 24, 5, Arc());
  net->eval();
  const auto x = torch::randn({3, 40, 16});
  const auto labels = torch::tensor(std::vector<std::int64_t>{0, 4, 2});
  const auto embeddings = net->Embed(x);
  ASSERT_EQ(embeddings.sizes(), (std::vector<std::int64_t>{3, 24}));
  const auto logits = net->Logits(x, labels);
  ASSERT_EQ(logits.sizes(), (std::vector<std::int64_t>{3, 5}));
  // With margin 0 the AAM logits are scale · cosine between embedding and class weight.
  auto& head = dynamic_cast<ArcMarginHead&>(net->head());
  EXPECT_TRUE(torch::allclose(logits, 32.0 * head.Cosine(embeddings), 1e-4, 1e-4));
  net->UpdateMargin(0.2);
  EXPECT_DOUBLE_EQ(net->margin(), 0.2);
  const auto with_margin = net->Logits(x, labels);
  // Only the target logits change, and they go down.
  for (std::int64_t i = 0; i < 3; ++i) {
    const auto target = labels[i].item<std::int64_t>();
    for (std::int64_t j = 0; j < 5; ++j) {
      const float before = logits[i][j].item<float>(), after = with_margin[i][j].item<float>();
      if (j == target) {
        EXPECT_LT(after, before);
      } else {
        EXPECT_NEAR(after, before, 1e-4);
      }
    }
  }
}

TEST(SpeakerNetTest, TrainAndEvalReachTheModelsBatchNorms) {
  torch::manual_seed(5);
  auto net = MakeMarginNet("ECAPA_TDNN_c512", 16, 24, 5, Arc());
  const auto x = torch::randn({4, 30, 16});
  net->eval();
  const auto a = net->Embed(x);
  const auto b = net->Embed(x);
  EXPECT_TRUE(torch::equal(a, b));  // running statistics, not the batch's
  net->train();
  const auto c = net->Embed(x);
  EXPECT_FALSE(torch::allclose(a, c));  // batch statistics
  for (const auto& m : net->modules(/*include_self=*/true)) EXPECT_TRUE(m->is_training()) << m->name();
}

// Channels-last activations change the memory layout, not the maths: the same weights give the
// same logits and the same gradients, and the gradients keep the parameters' own layout.
TEST(SpeakerNetTest, ChannelsLastResNetEqualsTheDefaultLayout) {
  torch::manual_seed(7);
  auto plain = MakeMarginNet("ResNet34", 16, 8, 5, Arc(), 8);
  auto nhwc = MakeMarginNet("ResNet34", 16, 8, 5, Arc(), 8, /*channels_last=*/true);
  {
    torch::NoGradGuard no_grad;
    const auto from = plain->named_parameters();
    for (auto& p : nhwc->named_parameters()) p.value().copy_(from[p.key()]);
  }
  const auto x = torch::randn({3, 40, 16});  // [batch, frames, feat_dim]
  const auto labels = torch::tensor({0, 3, 4}, torch::kLong);
  // Differences relative to the largest magnitude (the logits are cosines times 32).
  const auto relative = [](const torch::Tensor& u, const torch::Tensor& v) {
    return (u - v).abs().max().item<double>() / v.abs().max().item<double>();
  };
  const auto a = plain->Logits(x, labels);
  const auto b = nhwc->Logits(x, labels);
  EXPECT_LT(relative(b, a), 1e-5);
  a.sum().backward();
  b.sum().backward();
  const auto grads = plain->named_parameters();
  std::size_t conv_weights = 0;
  for (const auto& p : nhwc->named_parameters()) {
    const auto& g = p.value().grad();
    ASSERT_TRUE(g.defined()) << p.key();
    EXPECT_LT(relative(g, grads[p.key()].grad()), 1e-4) << p.key();
    EXPECT_TRUE(g.is_contiguous()) << p.key();
    if (g.dim() == 4) ++conv_weights;
  }
  EXPECT_GT(conv_weights, 30u);

  // The activations really are channels-last.
  auto options = ResNet34Options(16, 8);
  options.m_channels = 8;
  options.channels_last = true;
  ResNet resnet(options);
  EXPECT_TRUE(resnet->FrameLevelFeatures(x).is_contiguous(torch::MemoryFormat::ChannelsLast));
  options.channels_last = false;
  ResNet plain_resnet(options);
  EXPECT_FALSE(plain_resnet->FrameLevelFeatures(x).is_contiguous(torch::MemoryFormat::ChannelsLast));
}

TEST(SpeakerNetTest, InferenceEmbeddingFoldsResNetsAndLeavesOtherNetworksAlone) {
  torch::manual_seed(8);
  auto resnet = MakeMarginNet("ResNet34", 16, 8, 5, Arc(), 8);
  {
    torch::NoGradGuard no_grad;
    for (auto& b : resnet->named_buffers()) {
      if (b.key().find("running_var") != std::string::npos) b.value().copy_(torch::rand_like(b.value()) + 0.2);
    }
  }
  resnet->eval();
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({2, 40, 16});  // [batch, frames, feat_dim]
  const auto expected = resnet->Embed(x);
  const auto embed = InferenceEmbedding(*resnet);
  const auto folded = embed(x);
  EXPECT_LT((folded - expected).abs().max().item<double>() / expected.abs().max().item<double>(), 1e-5);
  EXPECT_FALSE(torch::equal(folded, expected));  // another computation, not Embed itself

  auto ecapa = MakeMarginNet("ECAPA_TDNN_GLOB_c512", 16, 8, 5, Arc(), 32);
  ecapa->eval();
  EXPECT_TRUE(torch::equal(InferenceEmbedding(*ecapa)(x), ecapa->Embed(x)));
}

TEST(SpeakerNetTest, UnknownModelsAreConfigErrorsNamingTheKnownOnes) {
  try {
    MakeMarginNet("ResNet35", 80, 256, 10, Arc());
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'ResNet35'"), std::string::npos) << what;
    EXPECT_NE(what.find("ECAPA_TDNN_GLOB_c1024"), std::string::npos) << what;
  }
}

TEST(SpeakerNetTest, ToLayoutTransposesForFramesFirstModels) {
  const auto x = torch::arange(24, torch::kFloat32).reshape({2, 3, 4});
  EXPECT_TRUE(torch::equal(ToLayout(x, FeatureLayout::kFeaturesFirst), x));
  const auto y = ToLayout(x, FeatureLayout::kFramesFirst);
  ASSERT_EQ(y.sizes(), (std::vector<std::int64_t>{2, 4, 3}));
  EXPECT_EQ(y[1][2][0].item<float>(), x[1][0][2].item<float>());
  EXPECT_THROW(ToLayout(torch::zeros({2, 3}), FeatureLayout::kFramesFirst), std::invalid_argument);
}

TEST(SpeakerNetTest, XvectorNetsDescribeThemselves) {
  XvectorNetOptions o;
  o.feat_dim = 20;
  o.n_speakers = 6;
  o.frame_layer_size = 16;
  o.stat_size = 24;
  o.embedding_size = 12;
  XvectorNet net(o);
  const auto info = net->info();
  EXPECT_EQ(info.architecture, "StandardNet");
  EXPECT_EQ(info.feat_dim, 20);
  EXPECT_EQ(info.n_speakers, 6);
  EXPECT_EQ(info.embedding_size, 12);
  EXPECT_EQ(info.layout, FeatureLayout::kFeaturesFirst);
  const auto x = torch::randn({2, 20, 15});
  net->eval();
  EXPECT_TRUE(torch::equal(net->Logits(x, torch::zeros({2}, torch::kInt64)), net->forward(x)));
}

}  // namespace
}  // namespace asv::nnet
