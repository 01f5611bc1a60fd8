// Classification heads (WeSpeaker's "projections") that turn speaker embeddings into the logits
// of a cross-entropy loss during training, after WeSpeaker's wespeaker/models/projections.py
// (classes ArcMarginProduct, AddMarginProduct and Linear, project_type "arc_margin",
// "add_margin" and "softmax"):
//
//   cos[i][j] = <x_i / |x_i|, w_j / |w_j|>      (F.normalize, eps 1e-12; W: [classes, embed_dim])
//   AAM-softmax / ArcFace (Deng et al. 2019, "ArcFace: Additive Angular Margin Loss for Deep
//   Face Recognition", CVPR), ArcMarginHead:
//     target logit      s · phi,  phi = cos(theta + m) = cos·cos(m) − sin·sin(m),
//                                 sin = sqrt(1 − cos²)
//     when theta + m > pi (cos <= th, th = cos(pi − m)) WeSpeaker replaces phi by
//                       cos − mmm,  mmm = 1 + cos(pi − m)
//       (continuous at theta = pi − m, where both are −1, and decreasing in theta; the ArcFace
//       paper's code uses cos − sin(pi − m)·m instead, WeSpeaker keeps that only in a comment);
//     with easy_margin phi is used only where cos > 0 and cos itself elsewhere;
//     other logits      s · cos
//   AM-softmax / CosFace (Wang et al. 2018, "CosFace: Large Margin Cosine Loss for Deep Face
//   Recognition", CVPR; Wang et al. 2018, "Additive Margin Softmax for Face Verification", IEEE
//   SPL), AddMarginHead: target logit s · (cos − m), other logits s · cos
//   plain softmax, SoftmaxHead: WeSpeaker's Linear, BatchNorm1d(embed_dim) -> ReLU ->
//     Linear(embed_dim -> classes); the labels are not used and there is no margin.
//
// Shapes: embeddings [batch, embed_dim] (floating point), labels [batch] int64 class indices in
// [0, classes) -> logits [batch, classes] in the embeddings' dtype. Parameter names are
// WeSpeaker's ('weight' for the margin heads; 'trans.0.*' (batch norm) and 'trans.2.*' (linear)
// for the softmax head), so state dicts read the same. The margin heads' weight starts with
// Xavier-uniform values (nn.init.xavier_uniform_), the softmax head with PyTorch's defaults.
//
// The margin is not part of the state dict (in WeSpeaker neither): the margin schedule
// (asvcpp/train/margin_schedule.h) sets it with UpdateMargin before every step, from the
// iteration number, so a resumed run gets the same margin without storing it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <torch/nn.h>

namespace asv::nnet {

/// Kind of head (WeSpeaker's projection_args.project_type names).
enum class HeadType {
  kSoftmax,    ///< "softmax": WeSpeaker's Linear
  kAddMargin,  ///< "add_margin": AM-softmax / CosFace
  kArcMargin,  ///< "arc_margin": AAM-softmax / ArcFace
};

/// Parses "softmax" | "add_margin" | "arc_margin". Throws ConfigError naming the value otherwise.
HeadType ParseHeadType(const std::string& name);
/// The name ParseHeadType accepts for `type`.
std::string HeadTypeName(HeadType type);

struct MarginHeadOptions {
  HeadType type = HeadType::kArcMargin;
  std::int64_t embed_dim = 256;
  std::int64_t num_classes = 1;
  double scale = 32.0;  ///< s, multiplies every cosine (margin heads only)
  /// Initial margin m (radians for arc_margin, cosine units for add_margin). WeSpeaker builds its
  /// heads with 0 and lets the margin schedule raise it.
  double margin = 0.0;
  bool easy_margin = false;  ///< arc_margin only: apply the margin only where cos > 0
};

/// Common interface of the heads: logits from embeddings and labels, and a settable margin.
class MarginHead : public torch::nn::Module {
 public:
  /// Logits [batch, classes] of embeddings [batch, embed_dim] whose classes are `labels`
  /// ([batch], int64). Throws std::invalid_argument (with the shapes) for embeddings that are not
  /// [batch, embed_dim] or labels that are not [batch] int64; labels outside [0, classes) make
  /// LibTorch's scatter throw c10::Error on the CPU (not checked beforehand: that would cost a
  /// device synchronisation per step).
  virtual torch::Tensor forward(const torch::Tensor& embeddings, const torch::Tensor& labels) = 0;
  /// Sets the margin used from the next forward on (WeSpeaker's `update(margin)`); ignored by the
  /// softmax head. Throws std::invalid_argument for a negative or non-finite margin.
  virtual void UpdateMargin(double margin) = 0;
  /// The current margin (0 for the softmax head, as WeSpeaker's MarginScheduler.get_margin).
  virtual double margin() const = 0;
};

/// AAM-softmax (ArcFace), WeSpeaker's ArcMarginProduct.
class ArcMarginHead : public MarginHead {
 public:
  /// Throws std::invalid_argument for non-positive sizes or scale, or a bad margin.
  explicit ArcMarginHead(const MarginHeadOptions& options);
  torch::Tensor forward(const torch::Tensor& embeddings, const torch::Tensor& labels) override;
  void UpdateMargin(double margin) override;
  double margin() const override { return margin_; }

  /// Cosines [batch, classes] between the normalised embeddings and class weights.
  torch::Tensor Cosine(const torch::Tensor& embeddings) const;

  torch::Tensor weight;  ///< [classes, embed_dim]

 private:
  double scale_;
  bool easy_margin_;
  double margin_ = 0;
  double cos_m_ = 1, sin_m_ = 0;  // cos(m), sin(m)
  double th_ = -1;                // cos(pi − m): phi is used where cos > th
  double mmm_ = 0;                // 1 + cos(pi − m): the fallback is cos − mmm
};

/// AM-softmax (CosFace), WeSpeaker's AddMarginProduct.
class AddMarginHead : public MarginHead {
 public:
  /// Throws std::invalid_argument for non-positive sizes or scale, or a bad margin.
  explicit AddMarginHead(const MarginHeadOptions& options);
  torch::Tensor forward(const torch::Tensor& embeddings, const torch::Tensor& labels) override;
  void UpdateMargin(double margin) override;
  double margin() const override { return margin_; }

  torch::Tensor weight;  ///< [classes, embed_dim]

 private:
  double scale_;
  double margin_ = 0;
};

/// Plain softmax, WeSpeaker's Linear: BatchNorm1d -> ReLU -> Linear (the batch norm through
/// ApplyBatchNorm, sync_batch_norm.h).
class SoftmaxHead : public MarginHead {
 public:
  /// Throws std::invalid_argument for non-positive sizes.
  explicit SoftmaxHead(const MarginHeadOptions& options);
  /// `labels` are checked for shape only and otherwise unused.
  torch::Tensor forward(const torch::Tensor& embeddings, const torch::Tensor& labels) override;
  void UpdateMargin(double margin) override;
  double margin() const override { return 0.0; }

  torch::nn::Sequential trans{nullptr};  ///< [0] BatchNorm1d, [1] ReLU, [2] Linear

 private:
  std::int64_t embed_dim_;
};

/// The head `options.type` selects.
std::shared_ptr<MarginHead> MakeMarginHead(const MarginHeadOptions& options);

}  // namespace asv::nnet
