#include "asvcpp/nnet/ecapa_tdnn.h"

#include <vector>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/nnet/layers.h"
#include "asvcpp/nnet/sync_batch_norm.h"

namespace asv::nnet {
namespace {

constexpr std::int64_t kScale = 8;                     // Res2Net scale of every block
constexpr std::int64_t kAggregatedChannels = 3 * 512;  // `conv` output, fixed upstream
constexpr std::int64_t kBottleneck = 128;              // SE and attention bottlenecks

torch::nn::BatchNorm1d Norm1d(std::int64_t channels) {
  return torch::nn::BatchNorm1d(torch::nn::BatchNorm1dOptions(channels).eps(1e-5).momentum(0.1));
}

}  // namespace

EcapaTdnnOptions EcapaTdnnOptionsFor(const std::string& wespeaker_name, std::int64_t feat_dim, std::int64_t embed_dim) {
  EcapaTdnnOptions options;
  options.feat_dim = feat_dim;
  options.embed_dim = embed_dim;
  if (wespeaker_name == "ECAPA_TDNN_c512" || wespeaker_name == "ECAPA_TDNN_GLOB_c512") {
    options.channels = 512;
  } else if (wespeaker_name == "ECAPA_TDNN_c1024" || wespeaker_name == "ECAPA_TDNN_GLOB_c1024") {
    options.channels = 1024;
  } else {
    throw ConfigError(
        fmt::format("'{}' is not one of ECAPA_TDNN_c512, ECAPA_TDNN_GLOB_c512, ECAPA_TDNN_c1024, ECAPA_TDNN_GLOB_c1024",
                    wespeaker_name));
  }
  options.global_context = wespeaker_name.find("_GLOB_") != std::string::npos;
  return options;
}

Conv1dReluBnImpl::Conv1dReluBnImpl(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
                                   std::int64_t padding, std::int64_t dilation) {
  conv = register_module("conv", torch::nn::Conv1d(torch::nn::Conv1dOptions(in_channels, out_channels, kernel_size)
                                                       .padding(padding)
                                                       .dilation(dilation)
                                                       .bias(true)));
  bn = register_module("bn", Norm1d(out_channels));
}

torch::Tensor Conv1dReluBnImpl::forward(const torch::Tensor& x) {
  return ApplyBatchNorm(*bn, torch::relu(conv(x)));
}

Res2Conv1dReluBnImpl::Res2Conv1dReluBnImpl(std::int64_t channels, std::int64_t kernel_size, std::int64_t padding,
                                           std::int64_t dilation, std::int64_t scale) {
  if (scale < 2 || channels % scale != 0) {
    throw ConfigError(
        fmt::format("Res2Net block: channels = {} must be a multiple of scale = {} (>= 2)", channels, scale));
  }
  width_ = channels / scale;
  convs = register_module("convs", torch::nn::ModuleList());
  bns = register_module("bns", torch::nn::ModuleList());
  for (std::int64_t i = 0; i + 1 < scale; ++i) {
    convs->push_back(torch::nn::Conv1d(
        torch::nn::Conv1dOptions(width_, width_, kernel_size).padding(padding).dilation(dilation).bias(true)));
    bns->push_back(Norm1d(width_));
  }
}

torch::Tensor Res2Conv1dReluBnImpl::forward(const torch::Tensor& x) {
  const std::vector<torch::Tensor> groups = torch::split(x, width_, 1);
  std::vector<torch::Tensor> out;
  out.reserve(groups.size());
  torch::Tensor sp = groups[0];
  for (std::size_t i = 0; i < convs->size(); ++i) {
    if (i > 0) sp = sp + groups[i];
    sp = convs[i]->as<torch::nn::Conv1d>()->forward(sp);
    sp = ApplyBatchNorm(*bns[i]->as<torch::nn::BatchNorm1d>(), torch::relu(sp));
    out.push_back(sp);
  }
  out.push_back(groups[convs->size()]);
  return torch::cat(out, 1);
}

SeConnectImpl::SeConnectImpl(std::int64_t channels, std::int64_t bottleneck_dim) {
  linear1 = register_module("linear1", torch::nn::Linear(channels, bottleneck_dim));
  linear2 = register_module("linear2", torch::nn::Linear(bottleneck_dim, channels));
}

torch::Tensor SeConnectImpl::forward(const torch::Tensor& x) {
  const torch::Tensor w = torch::sigmoid(linear2(torch::relu(linear1(x.mean(2)))));
  return x * w.unsqueeze(2);
}

SeRes2BlockImpl::SeRes2BlockImpl(std::int64_t channels, std::int64_t kernel_size, std::int64_t dilation,
                                 std::int64_t scale) {
  se_res2block = register_module(
      "se_res2block",
      torch::nn::Sequential(Conv1dReluBn(channels, channels, 1),
                            Res2Conv1dReluBn(channels, kernel_size, dilation * (kernel_size - 1) / 2, dilation, scale),
                            Conv1dReluBn(channels, channels, 1), SeConnect(channels, kBottleneck)));
}

torch::Tensor SeRes2BlockImpl::forward(const torch::Tensor& x) {
  return x + se_res2block->forward(x);
}

EcapaTdnnImpl::EcapaTdnnImpl(const EcapaTdnnOptions& options) : options_(options) {
  if (options.channels <= 0 || options.channels % kScale != 0 || options.feat_dim <= 0 || options.embed_dim <= 0) {
    throw ConfigError(fmt::format(
        "ECAPA-TDNN: channels = {} (a positive multiple of 8), feat_dim = {} and embed_dim = {} must be positive",
        options.channels, options.feat_dim, options.embed_dim));
  }
  const std::int64_t c = options.channels;
  layer1 = register_module("layer1", Conv1dReluBn(options.feat_dim, c, 5, 2));
  layer2 = register_module("layer2", SeRes2Block(c, 3, 2, kScale));
  layer3 = register_module("layer3", SeRes2Block(c, 3, 3, kScale));
  layer4 = register_module("layer4", SeRes2Block(c, 3, 4, kScale));
  conv = register_module("conv", torch::nn::Conv1d(torch::nn::Conv1dOptions(3 * c, kAggregatedChannels, 1)));
  pool = register_module("pool", AttentiveStatsPooling(kAggregatedChannels, kBottleneck, options.global_context));
  bn = register_module("bn", Norm1d(2 * kAggregatedChannels));
  linear = register_module("linear", torch::nn::Linear(2 * kAggregatedChannels, options.embed_dim));
}

torch::Tensor EcapaTdnnImpl::FrameLevelFeatures(const torch::Tensor& x) {
  if (x.dim() != 3 || x.size(2) != options_.feat_dim || x.size(1) < 1) {
    throw DataError(
        fmt::format("ECAPA-TDNN: input {} must be [batch, frames >= 1, {}]", ShapeString(x), options_.feat_dim));
  }
  const torch::Tensor out1 = layer1(x.permute({0, 2, 1}));
  const torch::Tensor out2 = layer2(out1);
  const torch::Tensor out3 = layer3(out2);
  const torch::Tensor out4 = layer4(out3);
  return conv(torch::cat({out2, out3, out4}, 1));
}

torch::Tensor EcapaTdnnImpl::forward(const torch::Tensor& x) {
  return linear(ApplyBatchNorm(*bn, pool(torch::relu(FrameLevelFeatures(x)))));
}

}  // namespace asv::nnet
