#include "asvcpp/nnet/layers.h"

#include <cmath>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "asvcpp/base/error.h"

namespace asv::nnet {
namespace {

std::set<std::string> ParameterNames(const torch::nn::Module& m) {
  std::set<std::string> names;
  for (const auto& p : m.named_parameters()) names.insert(p.key());
  return names;
}

TEST(MeanStdPoolingTest, MatchesHandComputation) {
  // Channel 0: 1 2 3 4 -> mean 2.5, E[x²] = 7.5, var = 1.25. Channel 1: constant 3 -> var 0,
  // clamped to 1e-6 -> std 1e-3. Second utterance: -1 1 -> mean 0, std 1; 0 0 2 2 -> mean 1, std 1.
  auto x = torch::tensor({1.f, 2.f, 3.f, 4.f, 3.f, 3.f, 3.f, 3.f, -1.f, 1.f, -1.f, 1.f, 0.f, 0.f, 2.f, 2.f})
               .reshape({2, 2, 4});
  MeanStdPoolingLayer pool;
  auto y = pool(x);
  ASSERT_EQ(y.sizes(), (std::vector<std::int64_t>{2, 4}));
  const auto a = y.accessor<float, 2>();
  EXPECT_FLOAT_EQ(a[0][0], 2.5f);
  EXPECT_FLOAT_EQ(a[0][1], 3.0f);
  EXPECT_NEAR(a[0][2], std::sqrt(1.25f), 1e-6);
  EXPECT_NEAR(a[0][3], 1e-3f, 1e-6);
  EXPECT_FLOAT_EQ(a[1][0], 0.f);
  EXPECT_FLOAT_EQ(a[1][1], 1.f);
  EXPECT_NEAR(a[1][2], 1.f, 1e-6);
  EXPECT_NEAR(a[1][3], 1.f, 1e-6);
}

TEST(LayerOptionsTest, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(ParseActivation("relu"), Activation::kRelu);
  EXPECT_EQ(ParseActivation("lrelu"), Activation::kLeakyRelu);
  EXPECT_EQ(ParseActivation("selu"), Activation::kSelu);
  EXPECT_THROW(ParseActivation("tanh"), ConfigError);
  EXPECT_EQ(ParsePaddingMode("circular"), PaddingMode::kCircular);
  EXPECT_THROW(ParsePaddingMode("reflect"), ConfigError);
}

TEST(LayerOptionsTest, LeakyReluUsesSlope) {
  LayerOptions o;
  o.lrelu_slope = 0.25;
  auto y = Activate(torch::tensor({-4.f, 2.f}), o);
  EXPECT_FLOAT_EQ(y[0].item<float>(), -1.f);
  EXPECT_FLOAT_EQ(y[1].item<float>(), 2.f);
}

TEST(CnnLayerTest, SameLengthAndAsvtorchNames) {
  torch::manual_seed(1);
  LayerOptions o;
  for (std::int64_t reach : {0, 1, 2, 3, 4}) {
    CnnLayer layer(6, 8, reach, 0, o);
    EXPECT_EQ(layer->cnn->weight.sizes(), (std::vector<std::int64_t>{8, 6, 2 * reach + 1}));
    auto y = layer(torch::randn({3, 6, 11}));
    EXPECT_EQ(y.sizes(), (std::vector<std::int64_t>{3, 8, 11})) << "reach " << reach;
  }
  CnnLayer plain(6, 8, 2, 0, o);
  EXPECT_EQ(ParameterNames(*plain),
            (std::set<std::string>{"batchnorm.weight", "batchnorm.bias", "cnn.weight", "cnn.bias"}));
  CnnLayer with_se(6, 8, 2, 4, o);
  EXPECT_EQ(ParameterNames(*with_se),
            (std::set<std::string>{"batchnorm.weight", "batchnorm.bias", "cnn.weight", "cnn.bias",
                                   "se.linear_relu_bn.linear.weight", "se.linear_relu_bn.linear.bias",
                                   "se.linear_relu_bn.batchnorm.weight", "se.linear_relu_bn.batchnorm.bias",
                                   "se.fc.weight", "se.fc.bias"}));
  EXPECT_EQ(with_se->se->linear_relu_bn->linear->weight.sizes(), (std::vector<std::int64_t>{2, 16}));
}

TEST(CnnLayerTest, ActivationBeforeBatchNorm) {
  torch::manual_seed(2);
  LayerOptions o;
  o.lrelu_slope = 0.1;
  CnnLayer layer(4, 5, 1, 0, o);
  layer->eval();
  {
    torch::NoGradGuard g;
    layer->batchnorm->running_mean.uniform_(-1, 1);
    layer->batchnorm->running_var.uniform_(0.5, 2);
    layer->batchnorm->weight.uniform_(0.5, 2);
    layer->batchnorm->bias.uniform_(-1, 1);
  }
  auto x = torch::randn({2, 4, 9});
  auto conv = torch::conv1d(x, layer->cnn->weight, layer->cnn->bias, 1, 1);
  auto act = torch::leaky_relu(conv, 0.1);
  auto expected = (act - layer->batchnorm->running_mean.view({1, 5, 1})) /
                      torch::sqrt(layer->batchnorm->running_var.view({1, 5, 1}) + 1e-5) *
                      layer->batchnorm->weight.view({1, 5, 1}) +
                  layer->batchnorm->bias.view({1, 5, 1});
  EXPECT_TRUE(torch::allclose(layer(x), expected, 1e-5, 1e-5));
}

TEST(CnnLayerTest, CircularPaddingWraps) {
  torch::manual_seed(3);
  LayerOptions o;
  o.padding_mode = PaddingMode::kCircular;
  auto conv = MakeFrameConv(2, 3, 2, o);
  auto x = torch::randn({1, 2, 8});
  auto padded = torch::cat({x.slice(2, 6, 8), x, x.slice(2, 0, 2)}, 2);
  auto expected = torch::conv1d(padded, conv->weight, conv->bias);
  EXPECT_TRUE(torch::allclose(conv(x), expected, 1e-5, 1e-6));
}

TEST(SeLayerTest, ScalesChannelsByGate) {
  torch::manual_seed(4);
  LayerOptions o;
  SeLayer se(8, 2, o);
  se->eval();
  auto x = torch::randn({3, 8, 10});
  auto gate = torch::sigmoid(se->fc(se->linear_relu_bn(MeanStdPoolingLayer()(x))));
  auto y = se(x);
  EXPECT_EQ(y.sizes(), x.sizes());
  EXPECT_TRUE(torch::allclose(y, x * gate.unsqueeze(2), 1e-6, 1e-6));
  EXPECT_EQ(se->fc->weight.sizes(), (std::vector<std::int64_t>{8, 4}));
}

TEST(SeLayerTest, RejectsReductionLargerThanChannels) {
  EXPECT_THROW(SeLayer(8, 9, LayerOptions{}), ConfigError);
}

TEST(ResCnnLayerTest, MatchesFormula) {
  torch::manual_seed(5);
  LayerOptions o;
  o.activation = Activation::kRelu;
  ResCnnLayer layer(6, 2, 0, o);
  layer->eval();
  EXPECT_EQ(ParameterNames(*layer),
            (std::set<std::string>{"fc.weight", "fc.bias", "cnn.weight", "cnn.bias", "fc_norm.weight", "fc_norm.bias",
                                   "cnn_norm.weight", "cnn_norm.bias"}));
  auto x = torch::randn({2, 6, 12});
  auto y = layer->fc_norm(torch::relu(layer->fc(x)));
  y = layer->cnn(y);
  auto expected = layer->cnn_norm(torch::relu(y + x));
  EXPECT_TRUE(torch::allclose(layer(x), expected));
  EXPECT_EQ(layer(x).sizes(), x.sizes());
}

TEST(LinearBatchNormLayerTest, LinearThenBatchNormWithoutActivation) {
  torch::manual_seed(6);
  LayerOptions o;
  LinearBatchNormLayer layer(5, 3, o);
  layer->train();
  auto x = torch::randn({16, 5}) * 3 - 2;
  auto y = layer(x);
  // Training-mode batch norm with unit weight and zero bias: every output column has mean 0 and
  // (biased) variance 1, negative values kept (no activation after the norm).
  EXPECT_TRUE(torch::allclose(y.mean(0), torch::zeros({3}), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose((y - y.mean(0)).pow(2).mean(0), torch::ones({3}), 1e-3, 1e-3));
  EXPECT_LT(y.min().item<float>(), 0.f);
}

}  // namespace
}  // namespace asv::nnet
