// Stochastic gradient descent with parameter groups, matching torch.optim.SGD (dampening 0) step
// for step:
//   d = grad + weight_decay · p
//   momentum > 0:  buf = d (first step), else buf = momentum · buf + d;
//                  d = buf, or with Nesterov momentum d = d + momentum · buf
//   p -= lr · d
// Own implementation instead of torch::optim::SGD because the optimizer state is then keyed by
// parameter name (optimizer.h).
// A step updates each group with LibTorch's multi-tensor (_foreach) operations, as torch.optim.SGD
// does on CUDA by default: a few kernel launches per group instead of several per parameter.
#pragma once

#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "asvcpp/train/optimizer.h"

namespace asv::train {

/// The parameter groups of Sgd (and of any Optimizer).
using SgdParamGroup = ParamGroup;

class Sgd : public Optimizer {
 public:
  /// Throws std::invalid_argument for names/params of different sizes, a negative momentum, or
  /// Nesterov momentum without momentum (as torch.optim.SGD).
  Sgd(std::vector<ParamGroup> groups, double momentum, bool nesterov = false);

  std::string name() const override { return "SGD"; }
  void Step() override;

  double momentum() const { return momentum_; }
  bool nesterov() const { return nesterov_; }

  /// Momentum buffer of each parameter by name; undefined tensors before a parameter's first
  /// step or when momentum == 0.
  std::vector<std::pair<std::string, torch::Tensor>> MomentumBuffers() const;
  /// Restores a buffer (copied to the parameter's device). Throws DataError for an unknown name
  /// or a shape mismatch.
  void SetMomentumBuffer(const std::string& name, const torch::Tensor& buffer);

  /// The momentum buffers under the key "momentum_buffer" (torch.optim.SGD's name).
  std::vector<OptimizerState> State() const override;
  /// Only the key "momentum_buffer"; throws DataError for another key and what
  /// SetMomentumBuffer throws.
  void SetState(const std::string& param, const std::string& key, const torch::Tensor& value) override;

 private:
  std::vector<std::vector<torch::Tensor>> buffers_;  // [group][param]
  double momentum_;
  bool nesterov_;
};

/// ASVtorch's two groups (get_weight_decay_param_groups): group 0 = trainable parameters whose
/// name contains any `skiplist` substring (weight decay 0), group 1 = all other trainable
/// parameters (weight decay `weight_decay`); both with learning rate `lr`.
std::vector<ParamGroup> WeightDecayGroups(const torch::nn::Module& module, const std::vector<std::string>& skiplist,
                                          double lr, double weight_decay);

}  // namespace asv::train
