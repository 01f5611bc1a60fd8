#include "asvcpp/train/model_average.h"

#include <string>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <torch/torch.h>

#include "asvcpp/base/error.h"
#include "asvcpp/train/checkpoint.h"

namespace asv::train {
namespace {

/// Every parameter and buffer of `model` by name.
std::vector<std::pair<std::string, torch::Tensor>> NamedState(torch::nn::Module& model) {
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (auto& item : model.named_parameters()) state.emplace_back(item.key(), item.value());
  for (auto& item : model.named_buffers()) state.emplace_back(item.key(), item.value());
  return state;
}

bool SameFile(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec_a, ec_b;
  if (std::filesystem::equivalent(a, b, ec_a)) return true;
  const auto ca = std::filesystem::weakly_canonical(a, ec_a);
  const auto cb = std::filesystem::weakly_canonical(b, ec_b);
  return !ec_a && !ec_b && ca == cb;
}

void CheckSameNetwork(const CheckpointMeta& first, const std::filesystem::path& first_path, const CheckpointMeta& meta,
                      const std::filesystem::path& path) {
  if (meta.architecture != first.architecture || meta.feat_dim != first.feat_dim ||
      meta.n_speakers != first.n_speakers || meta.embedding_size != first.embedding_size) {
    throw DataError(fmt::format(
        "{}: network {} (feat_dim {}, n_speakers {}, embedding_size {}) differs from {}'s {} ({}, {}, {}); "
        "only checkpoints of one network can be averaged",
        path.string(), meta.architecture, meta.feat_dim, meta.n_speakers, meta.embedding_size, first_path.string(),
        first.architecture, first.feat_dim, first.n_speakers, first.embedding_size));
  }
}

}  // namespace

std::vector<std::filesystem::path> LastCheckpoints(const std::filesystem::path& folder, int last_epoch, int count) {
  if (count < 1) throw DataError(fmt::format("{}: cannot average {} checkpoints", folder.string(), count));
  if (last_epoch < count) {
    throw DataError(fmt::format("{}: averaging the last {} checkpoints needs at least {} epochs, the last is {}",
                                folder.string(), count, count, last_epoch));
  }
  std::vector<std::filesystem::path> paths;
  for (int epoch = last_epoch - count + 1; epoch <= last_epoch; ++epoch) {
    auto path = CheckpointPath(folder, epoch);
    if (!std::filesystem::exists(path)) {
      throw DataError(fmt::format("{}: missing; it is one of the last {} checkpoints to average", path.string(), count));
    }
    paths.push_back(std::move(path));
  }
  return paths;
}

CheckpointMeta AverageCheckpoints(const std::vector<std::filesystem::path>& inputs, torch::nn::Module& model,
                                  const std::filesystem::path& output) {
  if (inputs.empty()) throw DataError("model averaging: no checkpoints given");
  if (!output.empty()) {
    for (const auto& input : inputs) {
      if (SameFile(input, output)) {
        throw DataError(fmt::format("{}: the averaged model would overwrite one of its inputs", output.string()));
      }
    }
  }
  auto state = NamedState(model);
  std::vector<torch::Tensor> sums(state.size());  // float64 sums; undefined for integer tensors
  CheckpointMeta first;
  CheckpointMeta meta;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    meta = ReadCheckpoint(inputs[i], model, /*optimizer=*/nullptr);
    if (i == 0) {
      first = meta;
    } else {
      CheckSameNetwork(first, inputs[0], meta, inputs[i]);
    }
    torch::NoGradGuard no_grad;
    for (std::size_t k = 0; k < state.size(); ++k) {
      const auto& value = state[k].second;
      if (!value.is_floating_point()) continue;  // integer buffers keep the newest value (loaded last)
      auto as_double = value.detach().to(torch::kCPU, torch::kFloat64);
      sums[k] = sums[k].defined() ? sums[k].add_(as_double) : as_double.clone();
    }
  }
  {
    torch::NoGradGuard no_grad;
    const auto n = static_cast<double>(inputs.size());
    for (std::size_t k = 0; k < state.size(); ++k) {
      if (sums[k].defined()) state[k].second.copy_(sums[k].div_(n));
    }
  }
  if (!output.empty()) WriteCheckpoint(output, meta, model, /*optimizer=*/nullptr);
  return meta;
}

}  // namespace asv::train
