// ResNet speaker-embedding networks as WeSpeaker builds them (WeSpeaker, wespeaker/models/
// resnet.py, classes ResNet and BasicBlock, constructor ResNet34), after He et al. 2016, "Deep
// Residual Learning for Image Recognition" with WeSpeaker's changes: 3x3 input convolution with
// stride 1, m_channels = 32 base channels, no max pooling, and statistics pooling over time.
//
//   input         fbank [batch, frames, feat_dim], viewed as an image [batch, 1, feat_dim, frames]
//   conv1, bn1    3x3 conv 1 -> m, BatchNorm2d, ReLU
//   layer1..4     n_1..n_4 BasicBlocks with m, 2m, 4m, 8m channels; the first block of layer2..4
//                 has stride 2 (frequency and time halved, rounding up)
//   pool          TSTP over time of the 8m x ⌈feat_dim/8⌉ channel-frequency rows -> 2·8m·feat_dim/8
//   seg_1         Linear -> embed_dim (the embedding)
//
// ResNet34 is n = (3, 4, 6, 3); with feat_dim 80, m = 32 and embed_dim 256 (WeSpeaker's
// voxceleb/v2 conf/resnet.yaml: "ResNet34-TSTP-emb256") it has 6,634,336 parameters.
//
// Submodule names are WeSpeaker's, so named_parameters()/named_buffers() give its state-dict keys
// (`conv1.weight`, `bn1.running_mean`, `layer2.0.shortcut.0.weight`, `seg_1.bias` ...), which lets
// a WeSpeaker checkpoint be loaded by name. Not supported: WeSpeaker's two_emb_layer = true
// (seg_bn_1, seg_2), Bottleneck blocks (ResNet50 and deeper), other pooling functions.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <torch/nn.h>

#include "asvcpp/nnet/pooling.h"

namespace asv::nnet {

/// Everything that shapes a ResNet (WeSpeaker ResNet's constructor arguments).
struct ResNetOptions {
  std::int64_t feat_dim = 80;                          ///< fbank channels; a multiple of 8
  std::int64_t embed_dim = 256;                        ///< embedding size
  std::int64_t m_channels = 32;                        ///< channels of conv1 and layer1
  std::array<std::int64_t, 4> num_blocks{3, 4, 6, 3};  ///< BasicBlocks in layer1..4 (ResNet34)
  /// Run the 2-D convolutions on channels-last (NHWC) activations: the layout of cuDNN's fastest
  /// tensor-core kernels, as PyTorch users get with x.to(memory_format=torch.channels_last). The
  /// weights keep their layout (cuDNN converts them) and so do their gradients (autograd returns
  /// them in the parameter's layout), so optimizers, gradient reduction and checkpoints are
  /// unchanged; outputs equal the default layout's to float rounding.
  bool channels_last = false;
};

/// WeSpeaker's ResNet34(feat_dim, embed_dim) with pooling_func "TSTP", two_emb_layer false.
ResNetOptions ResNet34Options(std::int64_t feat_dim = 80, std::int64_t embed_dim = 256);

/// He et al.'s basic residual block (WeSpeaker BasicBlock, expansion 1):
///   y = bn2(conv2(relu(bn1(conv1(x)))));  out = relu(y + shortcut(x))
/// conv1: 3x3, stride s, in -> out; conv2: 3x3, out -> out; both padding 1, no bias. shortcut is
/// the identity, or (when s != 1 or in != out) `shortcut.0` 1x1 conv with stride s (no bias) and
/// `shortcut.1` BatchNorm2d. forward: [batch, in, H, W] -> [batch, out, ⌈H/s⌉, ⌈W/s⌉].
class BasicBlockImpl : public torch::nn::Module {
 public:
  BasicBlockImpl(std::int64_t in_planes, std::int64_t planes, std::int64_t stride);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  torch::nn::Conv2d conv2{nullptr};
  torch::nn::BatchNorm2d bn2{nullptr};
  torch::nn::Sequential shortcut{nullptr};  ///< empty for the identity
};
TORCH_MODULE(BasicBlock);

/// The ResNet above. BatchNorm: eps 1e-5, momentum 0.1 (PyTorch's defaults, as WeSpeaker); every
/// one (bn1, the blocks' bn1/bn2 and shortcut.1) runs through ApplyBatchNorm (sync_batch_norm.h).
/// Weights: LibTorch's default initialisation (the same as PyTorch's).
class ResNetImpl : public torch::nn::Module {
 public:
  /// Throws ConfigError when feat_dim is not a positive multiple of 8 (WeSpeaker sizes the pooling
  /// output as ⌊feat_dim/8⌋ rows, which is right only then) or another size is not positive.
  explicit ResNetImpl(const ResNetOptions& options);

  /// Embeddings [batch, embed_dim] of fbank features x [batch, frames, feat_dim] (float32 on the
  /// module's device): `seg_1` output, WeSpeaker's `embed_a`. Call in eval mode for inference.
  /// Throws DataError for another rank or feature dimension, or fewer than 9 frames (TSTP needs
  /// at least 2 frames after the three stride-2 stages).
  torch::Tensor forward(const torch::Tensor& x);

  /// Output of layer4: [batch, 8·m_channels, ⌈feat_dim/8⌉, ⌈frames/8⌉] (same checks as forward).
  torch::Tensor FrameLevelFeatures(const torch::Tensor& x);

  const ResNetOptions& options() const { return options_; }
  /// Size of the pooled vector: 2 · 8·m_channels · feat_dim/8.
  std::int64_t pool_out_dim() const { return pool_out_dim_; }

  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  torch::nn::Sequential layer1{nullptr}, layer2{nullptr}, layer3{nullptr}, layer4{nullptr};
  TemporalStatsPooling pool{nullptr};
  torch::nn::Linear seg_1{nullptr};

 private:
  ResNetOptions options_;
  std::int64_t pool_out_dim_ = 0;
};
TORCH_MODULE(ResNet);

/// A ResNet's embedding function for inference, with every BatchNorm folded into the convolution
/// before it, as PyTorch's torch.nn.utils.fusion.fuse_conv_bn_eval folds them (Ioffe and Szegedy
/// 2015, eval-mode batch normalisation is an affine map per channel): with s = γ / √(σ² + ε) of
/// the running variance σ², weight' = weight · s per output channel and bias' = β − μ · s. This
/// removes the BatchNorm passes over the activations (about 5 % of ResNet34's CPU time). The
/// folded values are computed in double and rounded to the weights' type once.
///
/// A snapshot: built from the network's current weights and running statistics, on their device,
/// it does not follow later changes of the network (build it again after training). Equals
/// ResNetImpl::forward in eval mode to float rounding (asserted in tests: relative difference
/// below 1e-5), not bit for bit.
class FoldedResNet {
 public:
  explicit FoldedResNet(ResNetImpl& net);

  /// Embeddings [batch, embed_dim] of fbank features x [batch, frames, feat_dim] (float32 on the
  /// network's device). Throws DataError as ResNetImpl::forward does. Runs without gradients.
  torch::Tensor forward(const torch::Tensor& x) const;

 private:
  struct Conv {
    torch::Tensor weight, bias;  ///< folded: [out, in, k, k], [out]
    std::int64_t stride = 1, padding = 0;
    torch::Tensor operator()(const torch::Tensor& x) const;
  };
  struct Block {
    Conv conv1, conv2;
    bool projected = false;  ///< shortcut is a 1x1 convolution (else the identity)
    Conv shortcut;
  };
  static Conv Fold(torch::nn::Conv2dImpl& conv, torch::nn::BatchNorm2dImpl& bn);

  ResNetOptions options_;
  Conv conv1_;
  std::vector<Block> blocks_;
  TemporalStatsPooling pool_{nullptr};
  torch::Tensor seg_weight_, seg_bias_;
};

}  // namespace asv::nnet
