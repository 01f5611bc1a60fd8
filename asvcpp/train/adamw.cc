#include "asvcpp/train/adamw.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <torch/torch.h>

#include "asvcpp/base/error.h"

namespace asv::train {

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions options)
    : Optimizer(std::move(groups)), options_(options) {
  if (!(options.beta1 >= 0 && options.beta1 < 1) || !(options.beta2 >= 0 && options.beta2 < 1)) {
    throw std::invalid_argument(fmt::format("AdamW: betas ({}, {}) must lie in [0, 1)", options.beta1, options.beta2));
  }
  if (!(options.eps >= 0)) throw std::invalid_argument("AdamW: negative eps");
  for (const auto& g : groups_) state_.emplace_back(g.params.size());
}

void AdamW::Step() {
  torch::NoGradGuard no_grad;
  const double beta1 = options_.beta1;
  const double beta2 = options_.beta2;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    auto& g = groups_[gi];
    for (std::size_t pi = 0; pi < g.params.size(); ++pi) {
      auto& p = g.params[pi];
      const auto& grad = p.grad();
      if (!grad.defined()) continue;
      auto& s = state_[gi][pi];
      if (!s.exp_avg.defined()) {
        s.exp_avg = torch::zeros_like(p, torch::MemoryFormat::Preserve);
        s.exp_avg_sq = torch::zeros_like(p, torch::MemoryFormat::Preserve);
      }
      s.step += 1;
      if (g.weight_decay != 0) p.mul_(1 - g.lr * g.weight_decay);
      s.exp_avg.lerp_(grad, 1 - beta1);
      s.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
      const double bias_correction1 = 1 - std::pow(beta1, s.step);
      const double bias_correction2 = 1 - std::pow(beta2, s.step);
      const double step_size = g.lr / bias_correction1;
      const auto denom = (s.exp_avg_sq.sqrt() / std::sqrt(bias_correction2)).add_(options_.eps);
      p.addcdiv_(s.exp_avg, denom, -step_size);
    }
  }
}

std::vector<OptimizerState> AdamW::State() const {
  std::vector<OptimizerState> out;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    for (std::size_t pi = 0; pi < groups_[gi].names.size(); ++pi) {
      const auto& s = state_[gi][pi];
      if (!s.exp_avg.defined()) continue;
      const auto& name = groups_[gi].names[pi];
      out.push_back({name, "exp_avg", s.exp_avg});
      out.push_back({name, "exp_avg_sq", s.exp_avg_sq});
      out.push_back({name, "step", torch::tensor(s.step, torch::kFloat64)});
    }
  }
  return out;
}

void AdamW::SetState(const std::string& param, const std::string& key, const torch::Tensor& value) {
  const auto [gi, pi] = Find(param);
  const auto& p = groups_[gi].params[pi];
  auto& s = state_[gi][pi];
  if (key == "step") {
    if (value.numel() != 1) throw DataError(fmt::format("AdamW step of '{}' is not a scalar", param));
    s.step = value.item<double>();
    return;
  }
  if (key != "exp_avg" && key != "exp_avg_sq") {
    throw DataError(fmt::format("AdamW has no state '{}' (of '{}')", key, param));
  }
  if (value.sizes() != p.sizes()) {
    throw DataError(fmt::format("AdamW {} of '{}' has another shape than the parameter", key, param));
  }
  auto copy = value.detach().to(p.device(), p.scalar_type()).clone();
  (key == "exp_avg" ? s.exp_avg : s.exp_avg_sq) = std::move(copy);
  // A state restored half way (exp_avg without exp_avg_sq) starts the other at zero.
  if (!s.exp_avg.defined()) s.exp_avg = torch::zeros_like(p);
  if (!s.exp_avg_sq.defined()) s.exp_avg_sq = torch::zeros_like(p);
}

}  // namespace asv::train
