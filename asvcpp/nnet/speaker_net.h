// What the trainer, the checkpoints and the embedding extractor need of a speaker-embedding
// network: training logits of a minibatch, embeddings, and the sizes that a checkpoint records.
// Two families implement it: ASVtorch's x-vector networks (xvector_net.h, softmax output layer
// inside the network) and the margin networks below (an embedding model such as WeSpeaker's
// ResNet34 or ECAPA-TDNN followed by a classification head of margin_heads.h, WeSpeaker's
// "projection").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <torch/nn.h>

#include "asvcpp/nnet/margin_heads.h"

namespace asv::nnet {

/// How a network wants its features.
enum class FeatureLayout {
  kFeaturesFirst,  ///< [batch, feat_dim, frames] (x-vector TDNNs: channels first)
  kFramesFirst,    ///< [batch, frames, feat_dim] (WeSpeaker's models: fbank as Kaldi writes it)
};

/// The sizes of a network, as checkpoints record them.
struct SpeakerNetInfo {
  std::string architecture;  ///< e.g. "StandardNet", "ResNet34", "ECAPA_TDNN_GLOB_c512"
  std::int64_t feat_dim = 0;
  std::int64_t n_speakers = 0;  ///< classes of the training head
  std::int64_t embedding_size = 0;
  FeatureLayout layout = FeatureLayout::kFeaturesFirst;
  std::int64_t min_frames = 1;  ///< the fewest frames an input may have
};

/// A speaker-embedding network with its training head.
class SpeakerNet : public torch::nn::Module {
 public:
  /// Training logits [batch, n_speakers] of `features` (info().layout, float32 on the module's
  /// device) whose speakers are `labels` ([batch] int64 in [0, n_speakers), on the same device;
  /// margin heads use them, a softmax output ignores them). Throws DataError for features of
  /// another rank or feature dimension, std::invalid_argument for labels of the wrong shape.
  virtual torch::Tensor Logits(const torch::Tensor& features, const torch::Tensor& labels) = 0;

  /// Embeddings [batch, embedding_size] of `features` (info().layout); call in eval mode for
  /// inference. Same errors as Logits.
  virtual torch::Tensor Embed(const torch::Tensor& features) = 0;

  virtual SpeakerNetInfo info() const = 0;

  /// Sets the head's margin for the following steps (margin_schedule.h); networks without a
  /// margin ignore it. Throws std::invalid_argument for a negative or non-finite margin.
  virtual void UpdateMargin(double /*margin*/) {}

  /// The head's current margin (0 without one).
  virtual double margin() const { return 0.0; }
};

/// `features` [batch, feat_dim, frames] (the layout of host batches and Kaldi feature matrices
/// transposed) as `layout` wants them: unchanged for kFeaturesFirst, a transposed view
/// [batch, frames, feat_dim] for kFramesFirst. Throws std::invalid_argument for a tensor that is
/// not 3-D.
torch::Tensor ToLayout(const torch::Tensor& features, FeatureLayout layout);

/// An embedding model followed by a classification head. The model's submodules are registered
/// at the top level and the head as `projection`, so parameter names are those of WeSpeaker's
/// checkpoints ("layer1.0.conv1.weight", ..., "projection.weight").
class MarginNetImpl : public SpeakerNet {
 public:
  /// `model` maps features [batch, frames, feat_dim] to embeddings [batch, embedding_size] (its
  /// forward()); `forward` calls it. `info` gives the sizes (layout must be kFramesFirst), `head`
  /// must take `info.embedding_size`-dim embeddings to `info.n_speakers` classes. Throws
  /// std::invalid_argument when the model has parameters or buffers of its own outside its
  /// submodules (they would not be registered) or a size does not match.
  MarginNetImpl(std::shared_ptr<torch::nn::Module> model,
                std::function<torch::Tensor(const torch::Tensor&)> forward, SpeakerNetInfo info,
                std::shared_ptr<MarginHead> head);

  torch::Tensor Logits(const torch::Tensor& features, const torch::Tensor& labels) override;
  torch::Tensor Embed(const torch::Tensor& features) override;
  SpeakerNetInfo info() const override { return info_; }
  void UpdateMargin(double margin) override { head_->UpdateMargin(margin); }
  double margin() const override { return head_->margin(); }
  /// Also switches the embedding model itself (its own training flag), not only its submodules.
  void train(bool on = true) override;

  MarginHead& head() const { return *head_; }
  /// The embedding model (a ResNetImpl or EcapaTdnnImpl for MakeMarginNet's networks).
  const std::shared_ptr<torch::nn::Module>& model() const { return model_; }

 private:
  std::shared_ptr<torch::nn::Module> model_;
  std::function<torch::Tensor(const torch::Tensor&)> forward_;
  SpeakerNetInfo info_;
  std::shared_ptr<MarginHead> head_;
};
TORCH_MODULE(MarginNet);

/// The function inference should embed with: for a MarginNet holding a ResNet, FoldedResNet's
/// forward (BatchNorm folded into the convolutions; equal to net.Embed in eval mode to float
/// rounding, a few per cent faster); for every other network net.Embed itself. Features
/// [batch, frames, feat_dim] or [batch, feat_dim, frames] as net.info().layout says, embeddings
/// [batch, embedding_size]. The folded form is a snapshot of the current weights: call again
/// after they change. Call in eval mode and without gradients; `net` must outlive the function.
std::function<torch::Tensor(const torch::Tensor&)> InferenceEmbedding(SpeakerNet& net);

/// The embedding models by WeSpeaker's names: "ResNet34" (TSTP pooling) and the ECAPA-TDNN names
/// of EcapaTdnnOptionsFor ("ECAPA_TDNN_c512", "ECAPA_TDNN_GLOB_c512", "ECAPA_TDNN_c1024",
/// "ECAPA_TDNN_GLOB_c1024"), with `feat_dim` fbank bins and `embedding_size`, followed by the
/// head `head` (whose embed_dim and num_classes are set from the other arguments). `channels` > 0
/// replaces the model's width: ResNet's m_channels (32 in ResNet34), ECAPA-TDNN's C (512 or 1024
/// by the name), e.g. for small demo models; the name stays the model's. `channels_last`: ResNet's
/// ResNetOptions::channels_last (ECAPA-TDNN, a 1-D network, ignores it). Throws ConfigError for an
/// unknown model name, naming the known ones, and what the model constructors throw.
MarginNet MakeMarginNet(const std::string& model, std::int64_t feat_dim, std::int64_t embedding_size,
                        std::int64_t n_speakers, MarginHeadOptions head, std::int64_t channels = 0,
                        bool channels_last = false);

/// The model names MakeMarginNet knows.
std::vector<std::string> MarginNetModels();

}  // namespace asv::nnet
