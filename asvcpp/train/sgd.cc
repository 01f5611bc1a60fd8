#include "asvcpp/train/sgd.h"

#include <stdexcept>

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::train {

Sgd::Sgd(std::vector<SgdParamGroup> groups, double momentum) : groups_(std::move(groups)), momentum_(momentum) {
  if (momentum < 0) throw std::invalid_argument("Sgd: negative momentum");
  for (const auto& g : groups_) {
    if (g.names.size() != g.params.size()) throw std::invalid_argument("Sgd: names and params differ in size");
    buffers_.emplace_back(g.params.size());
  }
}

void Sgd::Step() {
  torch::NoGradGuard no_grad;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    auto& g = groups_[gi];
    for (std::size_t pi = 0; pi < g.params.size(); ++pi) {
      auto& p = g.params[pi];
      const auto& grad = p.grad();
      if (!grad.defined()) continue;
      auto d = g.weight_decay != 0 ? grad.add(p, g.weight_decay) : grad;
      if (momentum_ != 0) {
        auto& buf = buffers_[gi][pi];
        if (!buf.defined()) {
          buf = d.clone().detach();
        } else {
          buf.mul_(momentum_).add_(d);
        }
        d = buf;
      }
      p.add_(d, -g.lr);
    }
  }
}

void Sgd::ZeroGrad() {
  for (auto& g : groups_) {
    for (auto& p : g.params) {
      if (p.grad().defined()) p.mutable_grad() = torch::Tensor();
    }
  }
}

std::vector<torch::Tensor> Sgd::parameters() const {
  std::vector<torch::Tensor> all;
  for (const auto& g : groups_) all.insert(all.end(), g.params.begin(), g.params.end());
  return all;
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
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    for (std::size_t pi = 0; pi < groups_[gi].names.size(); ++pi) {
      if (groups_[gi].names[pi] != name) continue;
      const auto& p = groups_[gi].params[pi];
      if (buffer.sizes() != p.sizes()) {
        throw DataError(fmt::format("momentum buffer of '{}' has another shape than the parameter", name));
      }
      buffers_[gi][pi] = buffer.detach().to(p.device(), p.scalar_type()).clone();
      return;
    }
  }
  throw DataError(fmt::format("momentum buffer for unknown parameter '{}'", name));
}

std::vector<SgdParamGroup> WeightDecayGroups(const torch::nn::Module& module, const std::vector<std::string>& skiplist,
                                             double lr, double weight_decay) {
  std::vector<SgdParamGroup> groups(2);
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
