// Building blocks of ASVtorch's x-vector networks (ASVtorch asvtorch/src/networks/modules.py),
// with ASVtorch's submodule names so that state-dict keys read the same (`cnn.weight`,
// `batchnorm.running_mean`, `se.linear_relu_bn.linear.weight` ...).
//
// Tensor layout of every frame-level block: [batch, channels, frames]. The convolutions are
// Conv1d with stride 1, dilation 1, kernel 2r+1 and padding r ("same" length), bias on, PyTorch's
// default initialisation (LibTorch's defaults are the same). Activation comes BEFORE batch norm,
// as in ASVtorch (unlike Kaldi's TDNN recipes). BatchNorm eps is 1e-5. Every batch norm runs
// through ApplyBatchNorm (sync_batch_norm.h): synchronised across ranks in training when the
// trainer asks for it, the module's own forward otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <torch/nn.h>

#include "asvcpp/enums/nnet_types.h"

namespace asv::nnet {

/// Options shared by all blocks of one network (the `network.*` fields that shape layers).
struct LayerOptions {
  Activation activation = Activation::kLeakyRelu;
  double lrelu_slope = 0.01;  ///< negative slope of kLeakyRelu
  double bn_momentum = 0.1;   ///< BatchNorm running-statistics momentum (PyTorch convention)
  bool bn_affine = true;      ///< BatchNorm with learnable weight and bias
  PaddingMode padding_mode = PaddingMode::kZeros;
};

/// "[2, 30, 200]": a tensor's shape for messages.
std::string ShapeString(const torch::Tensor& x);

/// Applies the activation of `options` element-wise (any shape).
torch::Tensor Activate(const torch::Tensor& x, const LayerOptions& options);

/// BatchNorm1d with `options`' momentum and affine flag (eps 1e-5).
torch::nn::BatchNorm1d MakeBatchNorm(std::int64_t channels, const LayerOptions& options);

/// Conv1d(in -> out, kernel 2·reach+1, padding reach, `options`' padding mode, bias).
torch::nn::Conv1d MakeFrameConv(std::int64_t in_channels, std::int64_t out_channels, std::int64_t reach,
                                const LayerOptions& options);

/// Runs a frame-level convolution made by MakeFrameConv (or a 1x1 Conv1d: reach 0) on
/// x [batch, in, frames] -> [batch, out, frames], the same values as `conv(x)` up to rounding.
/// On the CPU in float32 with zero padding it runs as a 2-D convolution of x viewed as
/// [batch, in, 1, frames] in channels-last memory ("frames-major": each frame's channels
/// contiguous), the layout oneDNN's convolution kernels work in, and returns a [batch, out, frames]
/// tensor with frames-major strides (stride(1) == 1). oneDNN otherwise reorders every input,
/// output and gradient of a [batch, channels, frames] convolution to and from its blocked layout:
/// ~10 % of a CPU training step of StandardNet (ONEDNN_VERBOSE). The input gradient is computed as
/// a forward convolution with the kernel transposed and reversed in time, because oneDNN 2.6's
/// backward-data kernels for this layout are slower than its forward ones. StandardNet's training
/// step at 1 thread: +4-5 % frames/s with LibTorch 1.13 and 2.11 (tools/bench/README.md, case 2).
/// `conv` must pad by `reach` frames (as MakeFrameConv's does). Other devices and dtypes, circular
/// padding, and convolutions that are not stride 1, dilation 1, one group, kernel 2·reach+1 use
/// `conv(x)`. Element-wise operations keep the layout; use NormalizeFrames for batch norm.
/// Throws what `conv(x)` throws for bad shapes.
torch::Tensor ConvolveFrames(torch::nn::Conv1d& conv, std::int64_t reach, const torch::Tensor& x);

/// Batch norm of frame-level x [batch, channels, frames] over batch and frames (as `bn(x)`, through
/// ApplyBatchNorm: synchronised across ranks inside a SyncBatchNormScope). A frames-major x
/// (ConvolveFrames' output) is normalised as its contiguous [batch·frames, channels] view and the
/// result keeps that layout; any other x goes to ApplyBatchNorm(bn, x) as it is.
torch::Tensor NormalizeFrames(torch::nn::BatchNorm1d& bn, const torch::Tensor& x);

/// Mean and standard deviation over time (ASVtorch MeanStdPoolingLayer; Snyder et al. 2018
/// statistics pooling):
///   μ = mean_t x,  σ = sqrt(max(mean_t x² − μ², 1e-6)),  output [μ, σ].
/// forward: [batch, channels, frames] -> [batch, 2·channels]. No parameters.
class MeanStdPoolingLayerImpl : public torch::nn::Module {
 public:
  torch::Tensor forward(const torch::Tensor& x);
};
TORCH_MODULE(MeanStdPoolingLayer);

/// Linear -> BatchNorm (no activation); ASVtorch LinearBatchNormLayer. Submodules `linear`,
/// `batchnorm`. forward: [batch, in] -> [batch, out]. The x-vector embedding is the output of
/// `linear` alone (before batch norm), see XvectorNetImpl::Embed.
class LinearBatchNormLayerImpl : public torch::nn::Module {
 public:
  LinearBatchNormLayerImpl(std::int64_t in_features, std::int64_t out_features, const LayerOptions& options);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear linear{nullptr};
  torch::nn::BatchNorm1d batchnorm{nullptr};
};
TORCH_MODULE(LinearBatchNormLayer);

/// Linear -> f -> BatchNorm; ASVtorch LinearReluBatchNormLayer (used inside SeLayer; "Relu" is
/// ASVtorch's name, the activation is the configured one). Submodules `linear`, `batchnorm`.
/// forward: [batch, in] -> [batch, out].
class LinearReluBatchNormLayerImpl : public torch::nn::Module {
 public:
  LinearReluBatchNormLayerImpl(std::int64_t in_features, std::int64_t out_features, const LayerOptions& options);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear linear{nullptr};
  torch::nn::BatchNorm1d batchnorm{nullptr};

 private:
  LayerOptions options_;
};
TORCH_MODULE(LinearReluBatchNormLayer);

/// Squeeze-and-excitation over time (Hu et al. 2018, "Squeeze-and-Excitation Networks"), in
/// ASVtorch's variant SeLayer: the squeeze is mean+std pooling instead of a plain mean.
///   s = MeanStd(x)                                  [batch, 2D]
///   w = sigmoid(fc(linear_relu_bn(s)))              [batch, D], hidden size ⌊D/ser⌋
///   out = x · w (each channel scaled over all frames)
/// Submodules `pooling_layer`, `linear_relu_bn`, `fc`. forward: [batch, D, frames] -> same shape.
/// Throws ConfigError when ser > D (empty hidden layer).
class SeLayerImpl : public torch::nn::Module {
 public:
  SeLayerImpl(std::int64_t channels, std::int64_t ser, const LayerOptions& options);
  torch::Tensor forward(const torch::Tensor& x);

  MeanStdPoolingLayer pooling_layer{nullptr};
  LinearReluBatchNormLayer linear_relu_bn{nullptr};
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(SeLayer);

/// A frame-level layer ([batch, in, frames] -> [batch, out, frames]); the common base of CnnLayer
/// and ResCnnLayer so an architecture can hold a list of either.
class FrameLayerImpl : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  /// Frames of context on each side of the layer's convolution (r of kernel 2r+1).
  virtual std::int64_t reach() const = 0;
};

/// ASVtorch CnnLayer: conv(in -> out, kernel 2r+1) -> [SE if ser > 0] -> f -> BatchNorm.
/// Submodules (registration order as in ASVtorch) `batchnorm`, `cnn`, `se` (only when ser > 0).
/// forward: [batch, in, frames] -> [batch, out, frames].
class CnnLayerImpl : public FrameLayerImpl {
 public:
  CnnLayerImpl(std::int64_t in_channels, std::int64_t out_channels, std::int64_t reach, std::int64_t ser,
               const LayerOptions& options);
  torch::Tensor forward(const torch::Tensor& x) override;
  std::int64_t reach() const override { return reach_; }

  torch::nn::BatchNorm1d batchnorm{nullptr};
  torch::nn::Conv1d cnn{nullptr};
  SeLayer se{nullptr};  ///< null when ser == 0

 private:
  std::int64_t reach_;
  LayerOptions options_;
};
TORCH_MODULE(CnnLayer);

/// ASVtorch ResCnnLayer (D channels in and out):
///   y = fc_norm(f(fc(x)))           fc: 1x1 convolution
///   y = cnn(y)                      kernel 2r+1
///   y = se(y)                       if ser > 0
///   out = cnn_norm(f(y + x))
/// Submodules (registration order as in ASVtorch) `fc`, `cnn`, `fc_norm`, `cnn_norm`, `se`.
/// forward: [batch, D, frames] -> [batch, D, frames].
class ResCnnLayerImpl : public FrameLayerImpl {
 public:
  ResCnnLayerImpl(std::int64_t channels, std::int64_t reach, std::int64_t ser, const LayerOptions& options);
  torch::Tensor forward(const torch::Tensor& x) override;
  std::int64_t reach() const override { return reach_; }

  torch::nn::Conv1d fc{nullptr};
  torch::nn::Conv1d cnn{nullptr};
  torch::nn::BatchNorm1d fc_norm{nullptr};
  torch::nn::BatchNorm1d cnn_norm{nullptr};
  SeLayer se{nullptr};  ///< null when ser == 0

 private:
  std::int64_t reach_;
  LayerOptions options_;
};
TORCH_MODULE(ResCnnLayer);

}  // namespace asv::nnet
