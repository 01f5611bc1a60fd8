#include "asvcpp/nnet/xvector_net.h"

#include <algorithm>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/settings/settings.h"

namespace asv::nnet {

XvectorNetOptions NetOptionsFromSettings(const settings::NetworkSettings& network, std::int64_t feat_dim,
                                         std::int64_t n_speakers) {
  XvectorNetOptions o;
  o.architecture = network.Architecture();
  o.feat_dim = feat_dim;
  o.n_speakers = n_speakers;
  o.frame_layer_size = network.frame_layer_size;
  o.stat_size = network.stat_size;
  o.embedding_size = network.embedding_size;
  o.ser = network.ser;
  o.layer.activation = network.activation;
  o.layer.lrelu_slope = network.lrelu_slope;
  o.layer.bn_momentum = network.bn_momentum;
  o.layer.bn_affine = network.bn_affine;
  o.layer.padding_mode = network.cnn_padding_mode;
  o.pooling = network.pooling_layer_type;
  o.clustering.n_clusters = network.n_clusters;
  o.clustering.n_ghost_clusters = network.n_ghost_clusters;
  o.clustering.normalize_supervector = network.normalize_supervector;
  o.clustering.net_vlad_alpha = network.net_vlad_alpha;
  o.clustering.assignment = network.cluster_assignment_mode;
  o.clustering.supervector = network.supervector_mode;
  o.clustering.lde_covariance = network.lde_covariance_type;
  return o;
}

XvectorNetImpl::XvectorNetImpl(const XvectorNetOptions& options) : options_(options) {
  const auto& o = options_;
  if (o.feat_dim < 1 || o.n_speakers < 1 || o.frame_layer_size < 1 || o.stat_size < 1 || o.embedding_size < 1) {
    throw ConfigError(
        fmt::format("x-vector network sizes must be positive (feat_dim {}, n_speakers {}, "
                    "frame_layer_size {}, stat_size {}, embedding_size {})",
                    o.feat_dim, o.n_speakers, o.frame_layer_size, o.stat_size, o.embedding_size));
  }
  tdnn_layers = register_module("tdnn_layers", torch::nn::ModuleList());
  utterance_layers = register_module("utterance_layers", torch::nn::ModuleList());

  const std::int64_t d = o.frame_layer_size;
  const std::int64_t ser = o.architecture == Architecture::kStandardNet ? 0 : o.ser;
  auto add_cnn = [&](std::int64_t in, std::int64_t out, std::int64_t reach) {
    auto layer = std::make_shared<CnnLayerImpl>(in, out, reach, ser, o.layer);
    tdnn_layers->push_back(layer);
    frame_layers.push_back(layer);
  };
  auto add_res = [&](std::int64_t reach) {
    auto layer = std::make_shared<ResCnnLayerImpl>(d, reach, ser, o.layer);
    tdnn_layers->push_back(layer);
    frame_layers.push_back(layer);
  };
  switch (o.architecture) {
    case Architecture::kStandardNet:
    case Architecture::kStandardSeNet:
      add_cnn(o.feat_dim, d, 2);
      add_cnn(d, d, 2);
      add_cnn(d, d, 3);
      add_cnn(d, d, 0);
      add_cnn(d, o.stat_size, 0);
      break;
    case Architecture::kStandardResSeNet:
      add_cnn(o.feat_dim, d, 2);
      for (std::int64_t reach : {2, 3, 0}) add_res(reach);
      add_cnn(d, o.stat_size, 0);
      break;
    case Architecture::kLargeResSeNet:
      add_cnn(o.feat_dim, d, 2);
      for (std::int64_t reach : {2, 3, 4, 1, 2, 3, 4, 0}) add_res(reach);
      add_cnn(d, o.stat_size, 0);
      break;
  }

  if (o.pooling == PoolingType::kClustering) {
    clustering_pooling = register_module("pooling_layer", ClusteringLayer(o.stat_size, o.clustering));
    pooling_output_dim_ = clustering_pooling->output_dim();
  } else {
    mean_std_pooling = register_module("pooling_layer", MeanStdPoolingLayer());
    pooling_output_dim_ = 2 * o.stat_size;
  }

  embedding_layer = LinearBatchNormLayer(pooling_output_dim_, o.embedding_size, o.layer);
  classifier = torch::nn::Linear(o.embedding_size, o.n_speakers);
  utterance_layers->push_back(embedding_layer);
  utterance_layers->push_back(classifier);
}

std::int64_t XvectorNetImpl::max_reach() const {
  std::int64_t r = 0;
  for (const auto& layer : frame_layers) r = std::max(r, layer->reach());
  return r;
}

void XvectorNetImpl::CheckInput(const torch::Tensor& x) const {
  if (x.dim() != 3 || x.size(1) != options_.feat_dim || x.size(0) < 1 || x.size(2) < 1) {
    throw DataError(fmt::format("x-vector network input must be [batch >= 1, feat_dim = {}, frames >= 1], got {}",
                                options_.feat_dim, ShapeString(x)));
  }
  if (options_.layer.padding_mode == PaddingMode::kCircular && x.size(2) < max_reach()) {
    throw DataError(fmt::format("circular padding needs inputs of at least {} frames, got {}", max_reach(), x.size(2)));
  }
}

torch::Tensor XvectorNetImpl::FrameOutputs(const torch::Tensor& x) {
  CheckInput(x);
  torch::Tensor y = x;
  for (const auto& layer : frame_layers) y = layer->forward(y);
  return y;
}

torch::Tensor XvectorNetImpl::Pool(const torch::Tensor& frame_outputs) {
  return clustering_pooling ? clustering_pooling(frame_outputs) : mean_std_pooling(frame_outputs);
}

torch::Tensor XvectorNetImpl::Pooled(const torch::Tensor& x) {
  return Pool(FrameOutputs(x));
}

torch::Tensor XvectorNetImpl::forward(const torch::Tensor& x) {
  return classifier(embedding_layer(Pooled(x)));
}

torch::Tensor XvectorNetImpl::Logits(const torch::Tensor& x, const torch::Tensor& /*labels*/) {
  return forward(x);
}

torch::Tensor XvectorNetImpl::Embed(const torch::Tensor& x) {
  return embedding_layer->linear(Pooled(x));
}

SpeakerNetInfo XvectorNetImpl::info() const {
  SpeakerNetInfo info;
  info.architecture = std::string(EnumToName(options_.architecture));
  info.feat_dim = options_.feat_dim;
  info.n_speakers = options_.n_speakers;
  info.embedding_size = options_.embedding_size;
  info.layout = FeatureLayout::kFeaturesFirst;
  info.min_frames = options_.layer.padding_mode == PaddingMode::kCircular ? std::max<std::int64_t>(1, max_reach()) : 1;
  return info;
}

XvectorNet MakeXvectorNet(const settings::NetworkSettings& network, std::int64_t feat_dim, std::int64_t n_speakers) {
  return XvectorNet(NetOptionsFromSettings(network, feat_dim, n_speakers));
}

std::int64_t CountParameters(const torch::nn::Module& module, bool trainable_only) {
  std::int64_t n = 0;
  for (const auto& p : module.parameters()) {
    if (!trainable_only || p.requires_grad()) n += p.numel();
  }
  return n;
}

}  // namespace asv::nnet
