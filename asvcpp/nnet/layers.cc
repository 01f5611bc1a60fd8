#include "asvcpp/nnet/layers.h"

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::nnet {

Activation ParseActivation(const std::string& name) {
  if (name == "relu") return Activation::kRelu;
  if (name == "lrelu") return Activation::kLeakyRelu;
  if (name == "selu") return Activation::kSelu;
  throw ConfigError(fmt::format("network.activation = '{}' is not one of relu, lrelu, selu", name));
}

PaddingMode ParsePaddingMode(const std::string& name) {
  if (name == "zeros") return PaddingMode::kZeros;
  if (name == "circular") return PaddingMode::kCircular;
  throw ConfigError(fmt::format("network.cnn_padding_mode = '{}' is not one of zeros, circular", name));
}

std::string ShapeString(const torch::Tensor& x) {
  std::string s = "[";
  for (std::int64_t i = 0; i < x.dim(); ++i) s += (i ? ", " : "") + std::to_string(x.size(i));
  return s + "]";
}

torch::Tensor Activate(const torch::Tensor& x, const LayerOptions& options) {
  switch (options.activation) {
    case Activation::kRelu:
      return torch::relu(x);
    case Activation::kLeakyRelu:
      return torch::leaky_relu(x, options.lrelu_slope);
    case Activation::kSelu:
      return torch::selu(x);
  }
  return x;
}

torch::nn::BatchNorm1d MakeBatchNorm(std::int64_t channels, const LayerOptions& options) {
  return torch::nn::BatchNorm1d(
      torch::nn::BatchNorm1dOptions(channels).eps(1e-5).momentum(options.bn_momentum).affine(options.bn_affine));
}

torch::nn::Conv1d MakeFrameConv(std::int64_t in_channels, std::int64_t out_channels, std::int64_t reach,
                                const LayerOptions& options) {
  auto conv_options = torch::nn::Conv1dOptions(in_channels, out_channels, 2 * reach + 1)
                          .stride(1)
                          .dilation(1)
                          .padding(reach)
                          .bias(true);
  if (options.padding_mode == PaddingMode::kCircular) {
    conv_options.padding_mode(torch::kCircular);
  } else {
    conv_options.padding_mode(torch::kZeros);
  }
  return torch::nn::Conv1d(conv_options);
}

torch::Tensor MeanStdPoolingLayerImpl::forward(const torch::Tensor& x) {
  const auto mean = x.mean(2);
  const auto std = torch::sqrt(torch::clamp_min(x.pow(2).mean(2) - mean.pow(2), 1e-6));
  return torch::cat({mean, std}, 1);
}

LinearBatchNormLayerImpl::LinearBatchNormLayerImpl(std::int64_t in_features, std::int64_t out_features,
                                                   const LayerOptions& options) {
  linear = register_module("linear", torch::nn::Linear(in_features, out_features));
  batchnorm = register_module("batchnorm", MakeBatchNorm(out_features, options));
}

torch::Tensor LinearBatchNormLayerImpl::forward(const torch::Tensor& x) {
  return batchnorm(linear(x));
}

LinearReluBatchNormLayerImpl::LinearReluBatchNormLayerImpl(std::int64_t in_features, std::int64_t out_features,
                                                           const LayerOptions& options)
    : options_(options) {
  linear = register_module("linear", torch::nn::Linear(in_features, out_features));
  batchnorm = register_module("batchnorm", MakeBatchNorm(out_features, options));
}

torch::Tensor LinearReluBatchNormLayerImpl::forward(const torch::Tensor& x) {
  return batchnorm(Activate(linear(x), options_));
}

SeLayerImpl::SeLayerImpl(std::int64_t channels, std::int64_t ser, const LayerOptions& options) {
  const std::int64_t hidden = ser > 0 ? channels / ser : 0;
  if (hidden < 1) {
    throw ConfigError(fmt::format(
        "network.ser = {} leaves no hidden units in a squeeze-excitation layer of {} channels (need ser <= {})", ser,
        channels, channels));
  }
  pooling_layer = register_module("pooling_layer", MeanStdPoolingLayer());
  linear_relu_bn = register_module("linear_relu_bn", LinearReluBatchNormLayer(2 * channels, hidden, options));
  fc = register_module("fc", torch::nn::Linear(torch::nn::LinearOptions(hidden, channels).bias(true)));
}

torch::Tensor SeLayerImpl::forward(const torch::Tensor& x) {
  auto w = torch::sigmoid(fc(linear_relu_bn(pooling_layer(x))));
  return x * w.unsqueeze(2);
}

CnnLayerImpl::CnnLayerImpl(std::int64_t in_channels, std::int64_t out_channels, std::int64_t reach, std::int64_t ser,
                           const LayerOptions& options)
    : reach_(reach), options_(options) {
  batchnorm = register_module("batchnorm", MakeBatchNorm(out_channels, options));
  cnn = register_module("cnn", MakeFrameConv(in_channels, out_channels, reach, options));
  if (ser > 0) se = register_module("se", SeLayer(out_channels, ser, options));
}

torch::Tensor CnnLayerImpl::forward(const torch::Tensor& x) {
  auto y = cnn(x);
  if (se) y = se(y);
  return batchnorm(Activate(y, options_));
}

ResCnnLayerImpl::ResCnnLayerImpl(std::int64_t channels, std::int64_t reach, std::int64_t ser,
                                 const LayerOptions& options)
    : reach_(reach), options_(options) {
  fc = register_module("fc", torch::nn::Conv1d(torch::nn::Conv1dOptions(channels, channels, 1).bias(true)));
  cnn = register_module("cnn", MakeFrameConv(channels, channels, reach, options));
  fc_norm = register_module("fc_norm", MakeBatchNorm(channels, options));
  cnn_norm = register_module("cnn_norm", MakeBatchNorm(channels, options));
  if (ser > 0) se = register_module("se", SeLayer(channels, ser, options));
}

torch::Tensor ResCnnLayerImpl::forward(const torch::Tensor& x) {
  auto y = fc_norm(Activate(fc(x), options_));
  y = cnn(y);
  if (se) y = se(y);
  return cnn_norm(Activate(y + x, options_));
}

}  // namespace asv::nnet
