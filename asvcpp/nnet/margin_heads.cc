#include "asvcpp/nnet/margin_heads.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/nnet/layers.h"
#include "asvcpp/nnet/sync_batch_norm.h"

namespace asv::nnet {
namespace {

namespace F = torch::nn::functional;

constexpr double kPi = 3.14159265358979323846;  // Python's math.pi

void CheckSizes(const MarginHeadOptions& o, bool with_scale) {
  if (o.embed_dim <= 0 || o.num_classes <= 0) {
    throw std::invalid_argument(
        fmt::format("classification head: embed_dim {} and num_classes {} must be positive", o.embed_dim,
                    o.num_classes));
  }
  if (with_scale && !(o.scale > 0 && std::isfinite(o.scale))) {
    throw std::invalid_argument(fmt::format("classification head: scale {} must be positive", o.scale));
  }
}

void CheckMargin(double margin) {
  if (!(margin >= 0 && std::isfinite(margin))) {
    throw std::invalid_argument(fmt::format("classification head: margin {} must be finite and >= 0", margin));
  }
}

void CheckInputs(const torch::Tensor& embeddings, const torch::Tensor& labels, std::int64_t embed_dim) {
  if (embeddings.dim() != 2 || embeddings.size(1) != embed_dim || !embeddings.is_floating_point()) {
    throw std::invalid_argument(fmt::format("classification head: embeddings must be floating [batch, {}], got {} {}",
                                            embed_dim, ShapeString(embeddings),
                                            std::string(c10::toString(embeddings.scalar_type()))));
  }
  if (labels.dim() != 1 || labels.size(0) != embeddings.size(0) || labels.scalar_type() != torch::kInt64) {
    throw std::invalid_argument(fmt::format("classification head: labels must be int64 [{}], got {} {}",
                                            embeddings.size(0), ShapeString(labels),
                                            std::string(c10::toString(labels.scalar_type()))));
  }
}

/// True at [i, labels[i]], false elsewhere: [batch, classes].
torch::Tensor TargetMask(const torch::Tensor& labels, std::int64_t classes) {
  auto mask = torch::zeros({labels.size(0), classes}, torch::TensorOptions().dtype(torch::kBool).device(labels.device()));
  return mask.scatter_(1, labels.view({-1, 1}), true);
}

torch::Tensor NormalizedCosine(const torch::Tensor& embeddings, const torch::Tensor& weight) {
  const auto rows = F::NormalizeFuncOptions().p(2).dim(1).eps(1e-12);
  return F::linear(F::normalize(embeddings, rows), F::normalize(weight, rows));
}

torch::Tensor XavierWeight(const MarginHeadOptions& o) {
  auto w = torch::empty({o.num_classes, o.embed_dim});
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(w);
  return w;
}

}  // namespace

HeadType ParseHeadType(const std::string& name) {
  if (name == "softmax") return HeadType::kSoftmax;
  if (name == "add_margin") return HeadType::kAddMargin;
  if (name == "arc_margin") return HeadType::kArcMargin;
  throw ConfigError(fmt::format("classification head '{}' is not one of softmax, add_margin, arc_margin", name));
}

std::string HeadTypeName(HeadType type) {
  switch (type) {
    case HeadType::kSoftmax:
      return "softmax";
    case HeadType::kAddMargin:
      return "add_margin";
    case HeadType::kArcMargin:
      return "arc_margin";
  }
  return "?";
}

// ---- ArcMarginHead ----

ArcMarginHead::ArcMarginHead(const MarginHeadOptions& options)
    : scale_(options.scale), easy_margin_(options.easy_margin) {
  CheckSizes(options, /*with_scale=*/true);
  weight = register_parameter("weight", XavierWeight(options));
  UpdateMargin(options.margin);
}

void ArcMarginHead::UpdateMargin(double margin) {
  CheckMargin(margin);
  margin_ = margin;
  cos_m_ = std::cos(margin);
  sin_m_ = std::sin(margin);
  th_ = std::cos(kPi - margin);
  mmm_ = 1.0 + std::cos(kPi - margin);
}

torch::Tensor ArcMarginHead::Cosine(const torch::Tensor& embeddings) const {
  return NormalizedCosine(embeddings, weight);
}

torch::Tensor ArcMarginHead::forward(const torch::Tensor& embeddings, const torch::Tensor& labels) {
  CheckInputs(embeddings, labels, weight.size(1));
  const auto cosine = Cosine(embeddings);
  // 1 − cos² can come out slightly negative when rounding pushes |cos| past 1; WeSpeaker's sqrt
  // then returns NaN, here it is 0 (theta = 0 or pi).
  const auto sine = torch::sqrt(torch::clamp_min(1.0 - cosine * cosine, 0.0));
  auto phi = cosine * cos_m_ - sine * sin_m_;
  if (easy_margin_) {
    phi = torch::where(cosine > 0, phi, cosine);
  } else {
    phi = torch::where(cosine > th_, phi, cosine - mmm_);
  }
  return torch::where(TargetMask(labels, weight.size(0)), phi, cosine) * scale_;
}

// ---- AddMarginHead ----

AddMarginHead::AddMarginHead(const MarginHeadOptions& options) : scale_(options.scale) {
  CheckSizes(options, /*with_scale=*/true);
  weight = register_parameter("weight", XavierWeight(options));
  UpdateMargin(options.margin);
}

void AddMarginHead::UpdateMargin(double margin) {
  CheckMargin(margin);
  margin_ = margin;
}

torch::Tensor AddMarginHead::forward(const torch::Tensor& embeddings, const torch::Tensor& labels) {
  CheckInputs(embeddings, labels, weight.size(1));
  const auto cosine = NormalizedCosine(embeddings, weight);
  return torch::where(TargetMask(labels, weight.size(0)), cosine - margin_, cosine) * scale_;
}

// ---- SoftmaxHead ----

SoftmaxHead::SoftmaxHead(const MarginHeadOptions& options) : embed_dim_(options.embed_dim) {
  CheckSizes(options, /*with_scale=*/false);
  trans = register_module("trans", torch::nn::Sequential(torch::nn::BatchNorm1d(options.embed_dim), torch::nn::ReLU(),
                                                         torch::nn::Linear(options.embed_dim, options.num_classes)));
}

void SoftmaxHead::UpdateMargin(double margin) {
  CheckMargin(margin);
}

torch::Tensor SoftmaxHead::forward(const torch::Tensor& embeddings, const torch::Tensor& labels) {
  CheckInputs(embeddings, labels, embed_dim_);
  // trans->forward(embeddings), with the batch norm through ApplyBatchNorm.
  const torch::Tensor normalized = ApplyBatchNorm(*trans[0]->as<torch::nn::BatchNorm1d>(), embeddings);
  return trans[2]->as<torch::nn::Linear>()->forward(trans[1]->as<torch::nn::ReLU>()->forward(normalized));
}

std::shared_ptr<MarginHead> MakeMarginHead(const MarginHeadOptions& options) {
  switch (options.type) {
    case HeadType::kSoftmax:
      return std::make_shared<SoftmaxHead>(options);
    case HeadType::kAddMargin:
      return std::make_shared<AddMarginHead>(options);
    case HeadType::kArcMargin:
      return std::make_shared<ArcMarginHead>(options);
  }
  throw std::invalid_argument("classification head: unknown type");
}

}  // namespace asv::nnet
