#include "asvcpp/features/spec_augment.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "asvcpp/base/error.h"

namespace asv::features {
namespace {

// [batch, length] true inside any of the masks [start, start + width) of each row; `start` and
// `width` are [batch, count] int64.
torch::Tensor MaskOf(const torch::Tensor& start, const torch::Tensor& width, std::int64_t length) {
  const torch::Tensor position = torch::arange(length, start.options()).view({1, 1, length});
  const torch::Tensor first = start.unsqueeze(2), end = (start + width).unsqueeze(2);
  return position.ge(first).logical_and(position.lt(end)).any(1);
}

}  // namespace

torch::Tensor SpecAugment(const torch::Tensor& features, const SpecAugmentOptions& opts,
                          const std::optional<torch::Generator>& generator) {
  opts.Validate();
  if (features.dim() != 3 || !torch::isFloatingType(features.scalar_type())) {
    throw std::invalid_argument(
        fmt::format("SpecAugment: features must be a [batch, frames, dim] floating-point tensor, got {} dimensions "
                    "of {}",
                    features.dim(), c10::toString(features.scalar_type())));
  }
  const auto device = features.device();
  if (generator.has_value() && generator->device().type() != device.type()) {
    throw std::invalid_argument(fmt::format("SpecAugment: the generator is on {}, the features on {}",
                                            generator->device().str(), device.str()));
  }
  const std::int64_t batch = features.size(0), frames = features.size(1), dim = features.size(2);
  if (batch == 0 || frames == 0 || dim == 0) return features.clone();
  torch::NoGradGuard no_grad;
  c10::optional<at::Generator> gen;  // c10::optional: LibTorch 1.13's factories take it, 2.x's std::optional alias
  if (generator.has_value()) gen = *generator;
  const auto real = torch::TensorOptions().dtype(torch::kFloat64).device(device);
  const auto int64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  const torch::Tensor augmented = torch::rand({batch}, gen, real).lt(opts.prob);  // random.random() < prob
  const torch::Tensor t_start = torch::randint(0, frames, {batch, opts.num_t_mask}, gen, int64);
  const torch::Tensor t_width = torch::randint(1, opts.max_t + 1, {batch, opts.num_t_mask}, gen, int64);
  const torch::Tensor f_start = torch::randint(0, dim, {batch, opts.num_f_mask}, gen, int64);
  const torch::Tensor f_width = torch::randint(1, opts.max_f + 1, {batch, opts.num_f_mask}, gen, int64);
  const torch::Tensor time = MaskOf(t_start, t_width, frames);  // [batch, frames]
  const torch::Tensor freq = MaskOf(f_start, f_width, dim);     // [batch, dim]
  const torch::Tensor mask = time.unsqueeze(2).logical_or(freq.unsqueeze(1)).logical_and(augmented.view({batch, 1, 1}));
  return features.masked_fill(mask, 0);
}

}  // namespace asv::features
