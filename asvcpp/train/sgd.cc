#include "asvcpp/train/sgd.h"

#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::train {

Sgd::Sgd(std::vector<ParamGroup> groups, double momentum, bool nesterov)
    : Optimizer(std::move(groups)), momentum_(momentum), nesterov_(nesterov) {
  if (momentum < 0) throw std::invalid_argument("Sgd: negative momentum");
  if (nesterov && momentum == 0) throw std::invalid_argument("Sgd: Nesterov momentum needs a momentum > 0");
  for (const auto& g : groups_) buffers_.emplace_back(g.params.size());
}

void Sgd::Step() {
  torch::NoGradGuard no_grad;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    auto& g = groups_[gi];
    // The parameters with a gradient, as lists for the multi-tensor (_foreach) kernels: on CUDA
    // each call below is a few launches for all the group's parameters instead of one per
    // parameter (as torch.optim.SGD's foreach implementation, PyTorch's default on CUDA); on the
    // CPU they run the same per-tensor operations as a loop would.
    std::vector<torch::Tensor> params;
    std::vector<torch::Tensor> grads;
    std::vector<std::size_t> index;
    for (std::size_t pi = 0; pi < g.params.size(); ++pi) {
      const auto& grad = g.params[pi].grad();
      if (!grad.defined()) continue;
      params.push_back(g.params[pi]);
      grads.push_back(grad);
      index.push_back(pi);
    }
    if (params.empty()) continue;
    auto d = g.weight_decay != 0 ? at::_foreach_add(grads, params, g.weight_decay) : std::move(grads);
    if (momentum_ != 0) {
      auto& buffers = buffers_[gi];
      std::vector<torch::Tensor> bufs;  // existing buffers and their directions
      std::vector<torch::Tensor> bufs_d;
      for (std::size_t k = 0; k < index.size(); ++k) {
        auto& buf = buffers[index[k]];
        if (!buf.defined()) {
          buf = d[k].clone().detach();  // first step: buf = d
        } else {
          bufs.push_back(buf);
          bufs_d.push_back(d[k]);
        }
      }
      if (!bufs.empty()) {
        at::_foreach_mul_(bufs, momentum_);
        at::_foreach_add_(bufs, bufs_d);
      }
      std::vector<torch::Tensor> updated;
      for (std::size_t k = 0; k < index.size(); ++k) updated.push_back(buffers[index[k]]);
      if (nesterov_) {
        d = at::_foreach_add(d, updated, momentum_);
      } else {
        d = std::move(updated);
      }
    }
    at::_foreach_add_(params, d, -g.lr);
  }
}

std::vector<std::pair<std::string, torch::Tensor>> Sgd::MomentumBuffers() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    for (std::size_t pi = 0; pi < groups_[gi].names.size(); ++pi) {
      out.emplace_back(groups_[gi].names[pi], buffers_[gi][pi]);
    }
  }
  return out;
}

void Sgd::SetMomentumBuffer(const std::string& name, const torch::Tensor& buffer) {
  const auto [gi, pi] = Find(name);
  const auto& p = groups_[gi].params[pi];
  if (buffer.sizes() != p.sizes()) {
    throw DataError(fmt::format("momentum buffer of '{}' has another shape than the parameter", name));
  }
  buffers_[gi][pi] = buffer.detach().to(p.device(), p.scalar_type()).clone();
}

std::vector<OptimizerState> Sgd::State() const {
  std::vector<OptimizerState> state;
  for (auto& [name, buffer] : MomentumBuffers()) {
    if (buffer.defined()) state.push_back({name, "momentum_buffer", buffer});
  }
  return state;
}

void Sgd::SetState(const std::string& param, const std::string& key, const torch::Tensor& value) {
  if (key != "momentum_buffer") throw DataError(fmt::format("SGD has no state '{}' (of '{}')", key, param));
  SetMomentumBuffer(param, value);
}

std::vector<ParamGroup> WeightDecayGroups(const torch::nn::Module& module, const std::vector<std::string>& skiplist,
                                          double lr, double weight_decay) {
  std::vector<ParamGroup> groups(2);
  groups[0].lr = groups[1].lr = lr;
  groups[0].weight_decay = 0;
  groups[1].weight_decay = weight_decay;
  for (const auto& item : module.named_parameters()) {
    if (!item.value().requires_grad()) continue;
    bool skip = false;
    for (const auto& s : skiplist) skip = skip || item.key().find(s) != std::string::npos;
    auto& g = groups[skip ? 0 : 1];
    g.names.push_back(item.key());
    g.params.push_back(item.value());
  }
  return groups;
}

}  // namespace asv::train
