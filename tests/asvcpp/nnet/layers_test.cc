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

// A [batch, channels, frames] tensor with the same values stored frames-major.
torch::Tensor FramesMajorCopy(const torch::Tensor& x) {
  return x.transpose(1, 2).contiguous().transpose(1, 2);
}

bool IsFramesMajorLayout(const torch::Tensor& x) {
  return x.transpose(1, 2).is_contiguous();
}

TEST(ConvolveFramesTest, SameValuesAndGradientsAsConv1d) {
  torch::manual_seed(11);
  for (const std::int64_t reach : {0, 2, 3}) {
    for (const std::int64_t frames : {2, 13}) {
      for (const bool frames_major_input : {false, true}) {
        SCOPED_TRACE(testing::Message() << "reach " << reach << ", frames " << frames << ", frames-major input "
                                        << frames_major_input);
        auto conv = MakeFrameConv(6, 5, reach, LayerOptions{});
        const auto weight = conv->weight.detach().clone().requires_grad_(true);
        const auto bias = conv->bias.detach().clone().requires_grad_(true);
        const auto values = torch::randn({3, 6, frames});
        const auto x = (frames_major_input ? FramesMajorCopy(values) : values.clone()).requires_grad_(true);
        const auto x_ref = values.clone().requires_grad_(true);

        const auto y = ConvolveFrames(conv, reach, x);
        const auto y_ref = torch::conv1d(x_ref, weight, bias, 1, reach);
        ASSERT_EQ(y.sizes(), y_ref.sizes());
        EXPECT_TRUE(IsFramesMajorLayout(y));
        EXPECT_TRUE(torch::allclose(y, y_ref, 1e-5, 1e-5));

        const auto upstream = torch::randn(y_ref.sizes());
        (y * upstream).sum().backward();
        (y_ref * upstream).sum().backward();
        EXPECT_TRUE(torch::allclose(x.grad(), x_ref.grad(), 1e-5, 1e-5));
        EXPECT_TRUE(torch::allclose(conv->weight.grad(), weight.grad(), 1e-4, 1e-5));
        EXPECT_TRUE(torch::allclose(conv->bias.grad(), bias.grad(), 1e-4, 1e-5));
        EXPECT_EQ(conv->weight.grad().sizes(), conv->weight.sizes());

        torch::NoGradGuard no_grad;
        EXPECT_TRUE(torch::allclose(ConvolveFrames(conv, reach, x), y_ref, 1e-5, 1e-5));
      }
    }
  }
}

TEST(ConvolveFramesTest, InputWithoutGradientStillTrainsTheKernel) {
  // The first frame layer: the features need no gradient, the kernel and bias do.
  torch::manual_seed(12);
  auto conv = MakeFrameConv(4, 3, 2, LayerOptions{});
  const auto weight = conv->weight.detach().clone().requires_grad_(true);
  const auto x = torch::randn({2, 4, 9});
  ConvolveFrames(conv, 2, x).pow(2).sum().backward();
  torch::conv1d(x, weight, conv->bias.detach(), 1, 2).pow(2).sum().backward();
  EXPECT_TRUE(torch::allclose(conv->weight.grad(), weight.grad(), 1e-4, 1e-5));
  EXPECT_FALSE(x.grad().defined());
}

TEST(ConvolveFramesTest, OtherDtypesAndCircularPaddingUseConv1d) {
  torch::manual_seed(13);
  LayerOptions circular;
  circular.padding_mode = PaddingMode::kCircular;
  auto wrapped = MakeFrameConv(2, 3, 2, circular);
  const auto x = torch::randn({1, 2, 8});
  EXPECT_TRUE(torch::allclose(ConvolveFrames(wrapped, 2, x), wrapped(x)));
  auto conv = MakeFrameConv(2, 3, 1, LayerOptions{});
  conv->to(torch::kFloat64);
  const auto xd = x.to(torch::kFloat64);
  EXPECT_TRUE(torch::allclose(ConvolveFrames(conv, 1, xd), torch::conv1d(xd, conv->weight, conv->bias, 1, 1)));
}

TEST(NormalizeFramesTest, FramesMajorInputIsBatchNormOverBatchAndFrames) {
  torch::manual_seed(14);
  auto bn = MakeBatchNorm(5, LayerOptions{});
  auto bn_ref = MakeBatchNorm(5, LayerOptions{});
  {
    torch::NoGradGuard g;
    bn->weight.uniform_(0.5, 2);
    bn->bias.uniform_(-1, 1);
    bn_ref->weight.copy_(bn->weight);
    bn_ref->bias.copy_(bn->bias);
  }
  const auto values = torch::randn({4, 5, 7}) * 3 + 1;
  const auto x = FramesMajorCopy(values).requires_grad_(true);
  const auto x_ref = values.clone().requires_grad_(true);
  const auto y = NormalizeFrames(bn, x);
  const auto y_ref = bn_ref(x_ref);
  EXPECT_TRUE(IsFramesMajorLayout(y));
  EXPECT_TRUE(torch::allclose(y, y_ref, 1e-5, 1e-5));
  // Training mode: the running statistics move the same way.
  EXPECT_TRUE(torch::allclose(bn->running_mean, bn_ref->running_mean, 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(bn->running_var, bn_ref->running_var, 1e-5, 1e-6));
  const auto upstream = torch::randn(y_ref.sizes());
  (y * upstream).sum().backward();
  (y_ref * upstream).sum().backward();
  EXPECT_TRUE(torch::allclose(x.grad(), x_ref.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(bn->weight.grad(), bn_ref->weight.grad(), 1e-4, 1e-5));
  bn->eval();
  bn_ref->eval();
  EXPECT_TRUE(torch::allclose(NormalizeFrames(bn, x), bn_ref(x_ref), 1e-5, 1e-5));
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
  // The layer convolves frames-major (ConvolveFrames), the reference with Conv1d: other kernels,
  // other summation orders (seen on a 16-core Xeon host with LibTorch 2.11: beyond allclose's default
  // absolute 1e-8), so float32 rounding is allowed; a wrong formula is off by O(1).
  EXPECT_TRUE(torch::allclose(layer(x), expected, 1e-4, 1e-5)) << (layer(x) - expected).abs().max();
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
