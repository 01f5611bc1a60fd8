#include "asvcpp/train/model_init.h"

#include <map>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "asvcpp/base/error.h"

namespace asv::train {
namespace {

std::map<std::string, torch::Tensor> NamedStateMap(const torch::nn::Module& module) {
  std::map<std::string, torch::Tensor> state;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) state.emplace(p.key(), p.value());
  for (const auto& b : module.named_buffers(/*recurse=*/true)) state.emplace(b.key(), b.value());
  return state;
}

std::string ShapeOf(const torch::Tensor& t) {
  return fmt::format("[{}]", fmt::join(t.sizes(), ", "));
}

bool RowsMappable(const torch::Tensor& from, const torch::Tensor& to) {
  if (from.dim() != to.dim() || from.dim() == 0 || from.size(0) < 1) return false;
  for (std::int64_t d = 1; d < from.dim(); ++d) {
    if (from.size(d) != to.size(d)) return false;
  }
  return true;
}

}  // namespace

void CopyModelState(const torch::nn::Module& from, torch::nn::Module& to, const std::string& class_prefix) {
  const auto source = NamedStateMap(from);
  auto target = NamedStateMap(to);
  for (const auto& [name, tensor] : source) {
    if (target.count(name) == 0) {
      throw DataError(fmt::format("initial model: it has '{}' {}, which the network lacks", name, ShapeOf(tensor)));
    }
  }
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : target) {
    const auto it = source.find(name);
    if (it == source.end()) throw DataError(fmt::format("initial model: it lacks the network's '{}'", name));
    const torch::Tensor& value = it->second;
    if (value.sizes() == tensor.sizes()) {
      tensor.copy_(value);
      continue;
    }
    const bool class_tensor = !class_prefix.empty() && name.rfind(class_prefix, 0) == 0;
    if (!class_tensor || !RowsMappable(value, tensor)) {
      throw DataError(fmt::format("initial model: '{}' is {} there and {} in the network", name, ShapeOf(value),
                                  ShapeOf(tensor)));
    }
    const auto rows = torch::arange(tensor.size(0), torch::kLong).remainder(value.size(0));
    tensor.copy_(value.index_select(0, rows.to(value.device())));
  }
}

CheckpointMeta InitFromCheckpoint(const std::filesystem::path& path, torch::nn::Module& net,
                                  const NetworkLike& make_like, const std::string& class_prefix) {
  const auto meta = ReadCheckpointMeta(path);
  const auto source = make_like(meta.feat_dim, meta.n_speakers);
  ReadCheckpoint(path, *source, nullptr);
  try {
    CopyModelState(*source, net, class_prefix);
  } catch (const DataError& e) {
    throw DataError(fmt::format("{}: {}", path.string(), e.what()));
  }
  return meta;
}

}  // namespace asv::train
