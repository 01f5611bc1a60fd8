#include "asvcpp/nnet/resnet.h"

#include <string>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/nnet/layers.h"
#include "asvcpp/nnet/sync_batch_norm.h"

namespace asv::nnet {
namespace {

torch::nn::Conv2d Conv(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

torch::nn::BatchNorm2d Norm2d(std::int64_t channels) {
  return torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(channels).eps(1e-5).momentum(0.1));
}

// The three stride-2 stages take ⌈n/2⌉ three times.
std::int64_t Downsampled(std::int64_t n) {
  for (int i = 0; i < 3; ++i) n = (n + 1) / 2;
  return n;
}

// The checks of ResNetImpl::FrameLevelFeatures, and its input as an image [batch, 1, feat, frames].
torch::Tensor InputImage(const torch::Tensor& x, const ResNetOptions& options) {
  if (x.dim() != 3 || x.size(2) != options.feat_dim) {
    throw DataError(fmt::format("ResNet: input {} must be [batch, frames, {}]", ShapeString(x), options.feat_dim));
  }
  if (Downsampled(x.size(1)) < 2) {
    throw DataError(fmt::format("ResNet: input {} has {} frame(s), needs at least 9", ShapeString(x), x.size(1)));
  }
  torch::Tensor input = x.permute({0, 2, 1}).unsqueeze(1);
  if (options.channels_last) input = input.contiguous(torch::MemoryFormat::ChannelsLast);
  return input;
}

}  // namespace

ResNetOptions ResNet34Options(std::int64_t feat_dim, std::int64_t embed_dim) {
  ResNetOptions options;
  options.feat_dim = feat_dim;
  options.embed_dim = embed_dim;
  options.m_channels = 32;
  options.num_blocks = {3, 4, 6, 3};
  return options;
}

BasicBlockImpl::BasicBlockImpl(std::int64_t in_planes, std::int64_t planes, std::int64_t stride) {
  conv1 = register_module("conv1", Conv(in_planes, planes, 3, stride));
  bn1 = register_module("bn1", Norm2d(planes));
  conv2 = register_module("conv2", Conv(planes, planes, 3, 1));
  bn2 = register_module("bn2", Norm2d(planes));
  shortcut = register_module("shortcut", torch::nn::Sequential());
  if (stride != 1 || in_planes != planes) {
    shortcut->push_back(Conv(in_planes, planes, 1, stride));
    shortcut->push_back(Norm2d(planes));
  }
}

torch::Tensor BasicBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor out = ApplyBatchNorm(*bn2, conv2(torch::relu(ApplyBatchNorm(*bn1, conv1(x)))));
  if (shortcut->is_empty()) return torch::relu(out + x);
  // shortcut->forward(x), with the batch norm through ApplyBatchNorm.
  const torch::Tensor projected = shortcut[0]->as<torch::nn::Conv2d>()->forward(x);
  return torch::relu(out + ApplyBatchNorm(*shortcut[1]->as<torch::nn::BatchNorm2d>(), projected));
}

ResNetImpl::ResNetImpl(const ResNetOptions& options) : options_(options) {
  if (options.feat_dim <= 0 || options.feat_dim % 8 != 0) {
    throw ConfigError(fmt::format("ResNet: feat_dim = {} must be a positive multiple of 8", options.feat_dim));
  }
  if (options.embed_dim <= 0 || options.m_channels <= 0) {
    throw ConfigError(fmt::format("ResNet: embed_dim = {} and m_channels = {} must be positive", options.embed_dim,
                                  options.m_channels));
  }
  for (std::int64_t n : options.num_blocks) {
    if (n <= 0) throw ConfigError(fmt::format("ResNet: every stage needs at least one block (got {})", n));
  }
  const std::int64_t m = options.m_channels;
  conv1 = register_module("conv1", Conv(1, m, 3, 1));
  bn1 = register_module("bn1", Norm2d(m));
  std::int64_t in_planes = m;
  auto make_layer = [&](const std::string& name, std::int64_t planes, std::int64_t blocks, std::int64_t stride) {
    torch::nn::Sequential layer;
    for (std::int64_t i = 0; i < blocks; ++i) {
      layer->push_back(BasicBlock(in_planes, planes, i == 0 ? stride : 1));
      in_planes = planes;
    }
    return register_module(name, layer);
  };
  layer1 = make_layer("layer1", m, options.num_blocks[0], 1);
  layer2 = make_layer("layer2", 2 * m, options.num_blocks[1], 2);
  layer3 = make_layer("layer3", 4 * m, options.num_blocks[2], 2);
  layer4 = make_layer("layer4", 8 * m, options.num_blocks[3], 2);
  pool = register_module("pool", TemporalStatsPooling());
  pool_out_dim_ = 2 * (options.feat_dim / 8) * m * 8;
  seg_1 = register_module("seg_1", torch::nn::Linear(pool_out_dim_, options.embed_dim));
}

torch::Tensor ResNetImpl::FrameLevelFeatures(const torch::Tensor& x) {
  torch::Tensor out = torch::relu(ApplyBatchNorm(*bn1, conv1(InputImage(x, options_))));
  out = layer1->forward(out);
  out = layer2->forward(out);
  out = layer3->forward(out);
  return layer4->forward(out);
}

torch::Tensor ResNetImpl::forward(const torch::Tensor& x) {
  return seg_1(pool(FrameLevelFeatures(x)));
}

FoldedResNet::Conv FoldedResNet::Fold(torch::nn::Conv2dImpl& conv, torch::nn::BatchNorm2dImpl& bn) {
  const torch::NoGradGuard no_grad;
  const auto& o = bn.options;
  const auto type = conv.weight.scalar_type();
  const torch::Tensor scale =
      bn.weight.to(torch::kFloat64) / torch::sqrt(bn.running_var.to(torch::kFloat64) + o.eps());  // [out]
  Conv out;
  out.weight = (conv.weight.to(torch::kFloat64) * scale.view({-1, 1, 1, 1})).to(type).contiguous();
  out.bias = (bn.bias.to(torch::kFloat64) - bn.running_mean.to(torch::kFloat64) * scale).to(type);
  out.stride = (*conv.options.stride())[0];
  out.padding = conv.weight.size(-1) / 2;  // every convolution here pads kernel / 2 (Conv above)
  return out;
}

torch::Tensor FoldedResNet::Conv::operator()(const torch::Tensor& x) const {
  return torch::conv2d(x, weight, bias, stride, padding);
}

FoldedResNet::FoldedResNet(ResNetImpl& net) : options_(net.options()), pool_(net.pool) {
  conv1_ = Fold(*net.conv1, *net.bn1);
  for (auto* layer : {&net.layer1, &net.layer2, &net.layer3, &net.layer4}) {
    for (std::size_t i = 0; i < (*layer)->size(); ++i) {
      auto& block = *(*layer)[i]->as<BasicBlockImpl>();
      Block folded;
      folded.conv1 = Fold(*block.conv1, *block.bn1);
      folded.conv2 = Fold(*block.conv2, *block.bn2);
      if (!block.shortcut->is_empty()) {
        folded.projected = true;
        folded.shortcut =
            Fold(*block.shortcut[0]->as<torch::nn::Conv2d>(), *block.shortcut[1]->as<torch::nn::BatchNorm2d>());
      }
      blocks_.push_back(std::move(folded));
    }
  }
  const torch::NoGradGuard no_grad;
  seg_weight_ = net.seg_1->weight.detach().clone();
  seg_bias_ = net.seg_1->bias.detach().clone();
}

torch::Tensor FoldedResNet::forward(const torch::Tensor& x) const {
  const torch::NoGradGuard no_grad;
  torch::Tensor out = conv1_(InputImage(x, options_)).relu_();
  for (const auto& block : blocks_) {
    torch::Tensor inner = block.conv2(block.conv1(out).relu_());
    inner += block.projected ? block.shortcut(out) : out;
    out = inner.relu_();
  }
  return torch::linear(TemporalStatsPooling(pool_)->forward(out), seg_weight_, seg_bias_);
}

}  // namespace asv::nnet
