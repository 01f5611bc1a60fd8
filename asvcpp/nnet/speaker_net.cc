#include "asvcpp/nnet/speaker_net.h"

#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "asvcpp/base/error.h"
#include "asvcpp/nnet/ecapa_tdnn.h"
#include "asvcpp/nnet/resnet.h"

namespace asv::nnet {

torch::Tensor ToLayout(const torch::Tensor& features, FeatureLayout layout) {
  if (features.dim() != 3) {
    throw std::invalid_argument(fmt::format("features must be [batch, feat_dim, frames], got {} dimensions", features.dim()));
  }
  return layout == FeatureLayout::kFramesFirst ? features.transpose(1, 2) : features;
}

MarginNetImpl::MarginNetImpl(std::shared_ptr<torch::nn::Module> model,
                             std::function<torch::Tensor(const torch::Tensor&)> forward, SpeakerNetInfo info,
                             std::shared_ptr<MarginHead> head)
    : model_(std::move(model)), forward_(std::move(forward)), info_(std::move(info)), head_(std::move(head)) {
  if (!model_ || !forward_ || !head_) throw std::invalid_argument("MarginNet: model, forward and head are required");
  if (info_.layout != FeatureLayout::kFramesFirst) {
    throw std::invalid_argument("MarginNet: models take features [batch, frames, feat_dim]");
  }
  if (!model_->named_parameters(/*recurse=*/false).is_empty() || !model_->named_buffers(/*recurse=*/false).is_empty()) {
    throw std::invalid_argument(fmt::format("MarginNet: {} has parameters outside its submodules", info_.architecture));
  }
  for (const auto& child : model_->named_children()) register_module(child.key(), child.value());
  register_module("projection", head_);
}

torch::Tensor MarginNetImpl::Logits(const torch::Tensor& features, const torch::Tensor& labels) {
  return head_->forward(forward_(features), labels);
}

torch::Tensor MarginNetImpl::Embed(const torch::Tensor& features) {
  return forward_(features);
}

void MarginNetImpl::train(bool on) {
  torch::nn::Module::train(on);
  model_->train(on);
}

std::function<torch::Tensor(const torch::Tensor&)> InferenceEmbedding(SpeakerNet& net) {
  if (auto* margin = dynamic_cast<MarginNetImpl*>(&net)) {
    if (auto resnet = std::dynamic_pointer_cast<ResNetImpl>(margin->model())) {
      auto folded = std::make_shared<const FoldedResNet>(*resnet);
      return [folded](const torch::Tensor& x) { return folded->forward(x); };
    }
  }
  return [&net](const torch::Tensor& x) { return net.Embed(x); };
}

std::vector<std::string> MarginNetModels() {
  return {"ResNet34", "ECAPA_TDNN_c512", "ECAPA_TDNN_GLOB_c512", "ECAPA_TDNN_c1024", "ECAPA_TDNN_GLOB_c1024"};
}

MarginNet MakeMarginNet(const std::string& model, std::int64_t feat_dim, std::int64_t embedding_size,
                        std::int64_t n_speakers, MarginHeadOptions head, std::int64_t channels,
                        bool channels_last) {
  SpeakerNetInfo info;
  info.architecture = model;
  info.feat_dim = feat_dim;
  info.n_speakers = n_speakers;
  info.embedding_size = embedding_size;
  info.layout = FeatureLayout::kFramesFirst;
  head.embed_dim = embedding_size;
  head.num_classes = n_speakers;
  if (model == "ResNet34") {
    auto options = ResNet34Options(feat_dim, embedding_size);
    if (channels > 0) options.m_channels = channels;
    options.channels_last = channels_last;
    auto net = ResNet(options);
    info.min_frames = 9;  // TSTP needs 2 frames after three stride-2 stages
    return MarginNet(net.ptr(), [net](const torch::Tensor& x) mutable { return net->forward(x); }, info,
                     MakeMarginHead(head));
  }
  if (model.rfind("ECAPA_TDNN", 0) == 0) {
    auto options = EcapaTdnnOptionsFor(model, feat_dim, embedding_size);
    if (channels > 0) options.channels = channels;
    auto net = EcapaTdnn(options);
    info.min_frames = options.global_context ? 2 : 1;
    return MarginNet(net.ptr(), [net](const torch::Tensor& x) mutable { return net->forward(x); }, info,
                     MakeMarginHead(head));
  }
  throw ConfigError(fmt::format("unknown embedding model '{}'; known: {}", model, fmt::join(MarginNetModels(), ", ")));
}

}  // namespace asv::nnet
