#include "asvcpp/nnet/pooling.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/nnet/layers.h"

namespace asv::nnet {
namespace {

constexpr double kVarianceFloor = 1e-7;

// [batch, C, frames] as is; [batch, C, F, frames] -> [batch, C·F, frames].
torch::Tensor FlattenChannels(const torch::Tensor& x, const char* layer) {
  if (x.dim() == 3) return x;
  if (x.dim() == 4) return x.reshape({x.size(0), x.size(1) * x.size(2), x.size(3)});
  throw DataError(fmt::format("{}: input {} must be [batch, channels, frames] or [batch, channels, freq, frames]",
                              layer, ShapeString(x)));
}

// Standard deviation over the last axis with the unbiased variance (divisor frames - 1).
torch::Tensor UnbiasedStd(const torch::Tensor& x, bool keepdim) {
  return torch::sqrt(torch::var(x, std::vector<std::int64_t>{-1}, /*unbiased=*/true, keepdim) + kVarianceFloor);
}

}  // namespace

torch::Tensor TemporalStatsPoolingImpl::forward(const torch::Tensor& x) {
  const torch::Tensor flat = FlattenChannels(x, "temporal statistics pooling");
  if (flat.size(2) < 2) {
    throw DataError(fmt::format("temporal statistics pooling: input {} has {} frame(s), needs at least 2",
                                ShapeString(x), flat.size(2)));
  }
  return torch::cat({flat.mean(-1), UnbiasedStd(flat, /*keepdim=*/false)}, 1);
}

AttentiveStatsPoolingImpl::AttentiveStatsPoolingImpl(std::int64_t in_dim, std::int64_t bottleneck_dim,
                                                     bool global_context)
    : in_dim_(in_dim), global_context_(global_context) {
  const std::int64_t attention_in = global_context ? 3 * in_dim : in_dim;
  linear1 = register_module("linear1", torch::nn::Conv1d(torch::nn::Conv1dOptions(attention_in, bottleneck_dim, 1)));
  linear2 = register_module("linear2", torch::nn::Conv1d(torch::nn::Conv1dOptions(bottleneck_dim, in_dim, 1)));
}

torch::Tensor AttentiveStatsPoolingImpl::forward(const torch::Tensor& x) {
  const torch::Tensor flat = FlattenChannels(x, "attentive statistics pooling");
  if (flat.size(1) != in_dim_) {
    throw DataError(fmt::format("attentive statistics pooling: input {} has {} channels, expected {}", ShapeString(x),
                                flat.size(1), in_dim_));
  }
  const std::int64_t min_frames = global_context_ ? 2 : 1;
  if (flat.size(2) < min_frames) {
    throw DataError(fmt::format("attentive statistics pooling: input {} has {} frame(s), needs at least {}",
                                ShapeString(x), flat.size(2), min_frames));
  }
  torch::Tensor attention_in = flat;
  if (global_context_) {
    attention_in = torch::cat(
        {flat, flat.mean(-1, /*keepdim=*/true).expand_as(flat), UnbiasedStd(flat, /*keepdim=*/true).expand_as(flat)},
        1);
  }
  const torch::Tensor alpha = torch::softmax(linear2(torch::tanh(linear1(attention_in))), 2);
  const torch::Tensor mean = torch::sum(alpha * flat, 2);
  const torch::Tensor variance = torch::sum(alpha * (flat * flat), 2) - mean * mean;
  return torch::cat({mean, torch::sqrt(variance.clamp_min(kVarianceFloor))}, 1);
}

}  // namespace asv::nnet
