// ASVtorch's x-vector architectures (asvtorch/src/networks/architectures.py, StandardNetTemplate
// and its four subclasses), after Snyder et al. 2018, "X-vectors: robust DNN embeddings for
// speaker recognition", with ASVtorch's layer sizes and kernels:
//
//   architecture      frame layers (reach r -> kernel 2r+1; D = frame_layer_size, S = stat_size)
//   StandardNet       Cnn(F→D,2) Cnn(D→D,2) Cnn(D→D,3) Cnn(D→D,0) Cnn(D→S,0)
//   StandardSeNet     the same, each with squeeze-excitation (ser)
//   StandardResSeNet  Cnn(F→D,2,SE) Res(D,2,SE) Res(D,3,SE) Res(D,0,SE) Cnn(D→S,0,SE)
//   LargeResSeNet     Cnn(F→D,2,SE) Res(D,r,SE) for r = 2,3,4,1,2,3,4,0, Cnn(D→S,0,SE)
//   all               pooling (mean+std: 2S, or clustering: K·S) -> LinearBatchNorm(pool→E)
//                     -> Linear(E→n_speakers) (softmax cross-entropy in training)
//
// Submodule names are ASVtorch's: `tdnn_layers.<i>.*`, `pooling_layer.*`,
// `utterance_layers.0.linear.*`, `utterance_layers.0.batchnorm.*`, `utterance_layers.1.*`.
// ASVtorch's four bookkeeping Parameters of BaseNet (feat_dim_param, n_speakers_param,
// training_loss, consecutive_lr_updates) are NOT part of the module: the training checkpoint keeps
// them as plain values (asv::train).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn.h>

#include "asvcpp/nnet/clustering_layer.h"
#include "asvcpp/nnet/layers.h"
#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/enums/nnet_types.h"

namespace asv::settings {
struct NetworkSettings;
}

namespace asv::nnet {

/// Everything that shapes an x-vector network.
struct XvectorNetOptions {
  Architecture architecture = Architecture::kStandardNet;
  std::int64_t feat_dim = 30;           ///< F, input features per frame
  std::int64_t n_speakers = 1;          ///< classifier outputs
  std::int64_t frame_layer_size = 512;  ///< D
  std::int64_t stat_size = 1500;        ///< S, channels of the last frame layer
  std::int64_t embedding_size = 512;    ///< E
  std::int64_t ser = 16;                ///< squeeze-excitation reduction (SE architectures only)
  LayerOptions layer;
  PoolingType pooling = PoolingType::kMeanStd;
  ClusteringOptions clustering;  ///< used when pooling == kClustering
};

/// Converts the `network.*` settings (already validated) plus the data-dependent sizes. Throws
/// ConfigError for a network_class that names no architecture (one the settings layer would have
/// rejected).
XvectorNetOptions NetOptionsFromSettings(const settings::NetworkSettings& network, std::int64_t feat_dim,
                                         std::int64_t n_speakers);

/// An x-vector network. Input of every method: features [batch, feat_dim, frames] (float32 on the
/// module's device); throws DataError for another rank, feature dimension or zero frames.
class XvectorNetImpl : public SpeakerNet {
 public:
  explicit XvectorNetImpl(const XvectorNetOptions& options);

  /// Speaker logits [batch, n_speakers] (no softmax).
  torch::Tensor forward(const torch::Tensor& x);

  /// forward(x): the softmax output layer does not use the labels.
  torch::Tensor Logits(const torch::Tensor& x, const torch::Tensor& labels) override;

  /// Embeddings [batch, embedding_size]: `utterance_layers[0].linear(pooled)`, i.e. the affine
  /// output BEFORE the batch norm (ASVtorch forward mode 'extract_embeddings'). Call in eval mode
  /// for inference (the frame layers' batch norms then use running statistics).
  torch::Tensor Embed(const torch::Tensor& x) override;

  /// Architecture name (EnumToName), sizes, layout kFeaturesFirst, min_frames: max_reach() with
  /// circular padding, else 1.
  SpeakerNetInfo info() const override;

  /// Output of the last frame layer: [batch, stat_size, frames] (mode 'extract_features').
  torch::Tensor FrameOutputs(const torch::Tensor& x);

  /// Pooled statistics: [batch, pooling_output_dim()].
  torch::Tensor Pooled(const torch::Tensor& x);

  const XvectorNetOptions& options() const { return options_; }
  /// 2·stat_size (mean+std) or n_clusters·stat_size (clustering).
  std::int64_t pooling_output_dim() const { return pooling_output_dim_; }
  /// Largest convolution reach over the frame layers (circular padding needs inputs of at least
  /// this many frames).
  std::int64_t max_reach() const;

  torch::nn::ModuleList tdnn_layers{nullptr};
  torch::nn::ModuleList utterance_layers{nullptr};
  /// Typed views of the modules registered above (same objects).
  std::vector<std::shared_ptr<FrameLayerImpl>> frame_layers;
  MeanStdPoolingLayer mean_std_pooling{nullptr};  ///< registered as `pooling_layer` when kMeanStd
  ClusteringLayer clustering_pooling{nullptr};    ///< registered as `pooling_layer` when kClustering
  LinearBatchNormLayer embedding_layer{nullptr};  ///< utterance_layers[0]
  torch::nn::Linear classifier{nullptr};          ///< utterance_layers[1]

 private:
  void CheckInput(const torch::Tensor& x) const;
  torch::Tensor Pool(const torch::Tensor& frame_outputs);

  XvectorNetOptions options_;
  std::int64_t pooling_output_dim_ = 0;
};
TORCH_MODULE(XvectorNet);

/// Builds the network selected by `network.network_class` and the other `network.*` fields for
/// `feat_dim`-dimensional input and `n_speakers` classes (weights: PyTorch default initialisation
/// from LibTorch's global generator; seed it with torch::manual_seed for reproducible runs).
XvectorNet MakeXvectorNet(const settings::NetworkSettings& network, std::int64_t feat_dim, std::int64_t n_speakers);

/// Number of parameter elements of `module` (trainable only, or all parameters).
std::int64_t CountParameters(const torch::nn::Module& module, bool trainable_only = true);

}  // namespace asv::nnet
