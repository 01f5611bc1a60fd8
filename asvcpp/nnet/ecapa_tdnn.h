// ECAPA-TDNN (Desplanques et al. 2020, "ECAPA-TDNN: Emphasized Channel Attention, Propagation and
// Aggregation in TDNN Based Speaker Verification") as WeSpeaker builds it (WeSpeaker,
// wespeaker/models/ecapa_tdnn.py, classes ECAPA_TDNN, SE_Res2Block, Res2Conv1dReluBn,
// Conv1dReluBn, SE_Connect; constructors ECAPA_TDNN_c512, ECAPA_TDNN_GLOB_c512,
// ECAPA_TDNN_c1024, ECAPA_TDNN_GLOB_c1024). Layout [batch, channels, frames] inside; C = channels:
//
//   input    fbank [batch, frames, feat_dim] -> [batch, feat_dim, frames]
//   layer1   Conv1dReluBn(feat_dim -> C, kernel 5, padding 2)
//   layer2   SE_Res2Block(C, kernel 3, dilation 2)     out2
//   layer3   SE_Res2Block(C, kernel 3, dilation 3)     out3
//   layer4   SE_Res2Block(C, kernel 3, dilation 4)     out4
//   conv     1x1 Conv1d(3C -> 1536) on [out2; out3; out4] (multi-layer feature aggregation;
//            1536 = 3·512 for every C, as upstream), then ReLU
//   pool     attentive statistics pooling (AttentiveStatsPooling, bottleneck 128) -> 3072
//   bn       BatchNorm1d(3072)
//   linear   Linear(3072 -> embed_dim): the embedding
//
// "GLOB" (WeSpeaker's global_context_att = true) is the global-context attention of the paper:
// the attention also sees each channel's mean and standard deviation over the whole utterance
// (pool.linear1 takes 3·1536 channels instead of 1536). WeSpeaker's voxceleb/v2
// conf/ecapa_tdnn.yaml trains ECAPA_TDNN_GLOB_c512 (ECAPA_TDNN_GLOB_c1024 as the alternative),
// with feat_dim 80, embed_dim 192, pooling ASTP. Parameters at feat_dim 80, embed_dim 192:
// ECAPA_TDNN_c512 5,797,504; ECAPA_TDNN_GLOB_c512 6,190,720; ECAPA_TDNN_c1024 14,263,872;
// ECAPA_TDNN_GLOB_c1024 14,657,088.
//
// Submodule names are WeSpeaker's, so named_parameters()/named_buffers() give its state-dict keys
// (`layer1.conv.weight`, `layer2.se_res2block.1.convs.0.weight`, `layer4.se_res2block.3.linear2.bias`,
// `pool.linear1.weight`, `bn.running_var`, `linear.weight` ...). Not supported: emb_bn = true
// (bn2), other pooling functions.
#pragma once

#include <cstdint>
#include <string>

#include <torch/nn.h>

#include "asvcpp/nnet/pooling.h"

namespace asv::nnet {

/// Everything that shapes an ECAPA-TDNN (WeSpeaker ECAPA_TDNN's constructor arguments). The
/// defaults are ECAPA_TDNN_GLOB_c512 with feat_dim 80 and embed_dim 192.
struct EcapaTdnnOptions {
  std::int64_t channels = 512;   ///< C; a multiple of `scale`
  std::int64_t feat_dim = 80;    ///< fbank channels
  std::int64_t embed_dim = 192;  ///< embedding size
  bool global_context = true;    ///< WeSpeaker's global_context_att ("GLOB")
};

/// Options of a WeSpeaker constructor name: "ECAPA_TDNN_c512", "ECAPA_TDNN_GLOB_c512",
/// "ECAPA_TDNN_c1024" or "ECAPA_TDNN_GLOB_c1024". Throws ConfigError for any other name.
EcapaTdnnOptions EcapaTdnnOptionsFor(const std::string& wespeaker_name, std::int64_t feat_dim = 80,
                                     std::int64_t embed_dim = 192);

/// Conv1d (bias) -> ReLU -> BatchNorm1d (WeSpeaker Conv1dReluBn). Submodules `conv`, `bn`.
/// forward: [batch, in, frames] -> [batch, out, frames'] (frames' = frames for "same" padding).
class Conv1dReluBnImpl : public torch::nn::Module {
 public:
  Conv1dReluBnImpl(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
                   std::int64_t padding = 0, std::int64_t dilation = 1);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Conv1d conv{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};
TORCH_MODULE(Conv1dReluBn);

/// Res2Net's hierarchical convolution (Gao et al. 2019, "Res2Net: A New Multi-scale Backbone
/// Architecture"; WeSpeaker Res2Conv1dReluBn): x is split along channels into `scale` groups of
/// w = C/scale; y_0 = f_0(x_0), y_i = f_i(x_i + y_{i-1}) for i = 1 .. scale−2, and the last group
/// passes unchanged; output [y_0; ...; y_{scale−2}; x_{scale−1}]. Each f_i is Conv1d(w -> w, kernel,
/// padding, dilation, bias) -> ReLU -> BatchNorm1d. Submodules `convs.<i>`, `bns.<i>`.
/// forward: [batch, C, frames] -> [batch, C, frames] with "same" padding.
class Res2Conv1dReluBnImpl : public torch::nn::Module {
 public:
  /// Throws ConfigError when channels is not a multiple of scale or scale < 2.
  Res2Conv1dReluBnImpl(std::int64_t channels, std::int64_t kernel_size, std::int64_t padding, std::int64_t dilation,
                       std::int64_t scale);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::ModuleList convs{nullptr};
  torch::nn::ModuleList bns{nullptr};

 private:
  std::int64_t width_;
};
TORCH_MODULE(Res2Conv1dReluBn);

/// Squeeze-and-excitation over time (Hu et al. 2018; WeSpeaker SE_Connect):
///   w = sigmoid(linear2(relu(linear1(mean_t x))));  out = x · w (per channel).
/// linear1: C -> bottleneck, linear2: bottleneck -> C. forward: [batch, C, frames] -> same.
class SeConnectImpl : public torch::nn::Module {
 public:
  explicit SeConnectImpl(std::int64_t channels, std::int64_t bottleneck_dim = 128);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear linear1{nullptr};
  torch::nn::Linear linear2{nullptr};
};
TORCH_MODULE(SeConnect);

/// SE-Res2Block (WeSpeaker SE_Res2Block): out = x + SE(Conv1dReluBn_1x1(Res2(Conv1dReluBn_1x1(x)))),
/// Res2 with kernel `kernel_size`, padding = dilation·(kernel_size−1)/2, and scale 8. Submodule
/// `se_res2block` = Sequential(Conv1dReluBn, Res2Conv1dReluBn, Conv1dReluBn, SeConnect).
/// forward: [batch, C, frames] -> [batch, C, frames].
class SeRes2BlockImpl : public torch::nn::Module {
 public:
  SeRes2BlockImpl(std::int64_t channels, std::int64_t kernel_size, std::int64_t dilation, std::int64_t scale = 8);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Sequential se_res2block{nullptr};
};
TORCH_MODULE(SeRes2Block);

/// The ECAPA-TDNN above. BatchNorm: eps 1e-5, momentum 0.1 (PyTorch's defaults, as WeSpeaker);
/// every one runs through ApplyBatchNorm (sync_batch_norm.h).
/// Weights: LibTorch's default initialisation (the same as PyTorch's).
class EcapaTdnnImpl : public torch::nn::Module {
 public:
  /// Throws ConfigError when a size is not positive or channels is not a multiple of 8.
  explicit EcapaTdnnImpl(const EcapaTdnnOptions& options);

  /// Embeddings [batch, embed_dim] of fbank features x [batch, frames, feat_dim] (float32 on the
  /// module's device): the `linear` output (the second element of WeSpeaker's forward()). Call in
  /// eval mode for inference. Throws DataError for another rank or feature dimension, zero
  /// frames, or (global context) fewer than 2 frames.
  torch::Tensor forward(const torch::Tensor& x);

  /// Aggregated frame-level features: `conv` output before its ReLU, [batch, 1536, frames]
  /// (WeSpeaker's get_frame_level_feat, transposed). Same checks as forward.
  torch::Tensor FrameLevelFeatures(const torch::Tensor& x);

  const EcapaTdnnOptions& options() const { return options_; }

  Conv1dReluBn layer1{nullptr};
  SeRes2Block layer2{nullptr}, layer3{nullptr}, layer4{nullptr};
  torch::nn::Conv1d conv{nullptr};
  AttentiveStatsPooling pool{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
  torch::nn::Linear linear{nullptr};

 private:
  EcapaTdnnOptions options_;
};
TORCH_MODULE(EcapaTdnn);

}  // namespace asv::nnet
