// Stochastic gradient descent with parameter groups, matching torch.optim.SGD (dampening 0) step
// for step:
//   d = grad + weight_decay · p
//   momentum > 0:  buf = d (first step), else buf = momentum · buf + d;
//                  d = buf, or with Nesterov momentum d = d + momentum · buf
//   p -= lr · d
// Own implementation instead of torch::optim::SGD because the optimizer state is then keyed by
// parameter NAME (torch::optim keys it by tensor address, as a std::string in LibTorch 1.13 and a
// void* in 2.x), which makes checkpoints readable, device-independent and version-independent.
// A step updates each group with LibTorch's multi-tensor (_foreach) operations, as torch.optim.SGD
// does on CUDA by default: a few kernel launches per group instead of several per parameter.
#pragma once

#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace asv::train {

struct SgdParamGroup {
  std::vector<std::string> names;     ///< parameter names (module.named_parameters() keys)
  std::vector<torch::Tensor> params;  ///< the parameters, same order
  double lr = 0.1;
  double weight_decay = 0;
};

class Sgd {
 public:
  /// Throws std::invalid_argument for names/params of different sizes, a negative momentum, or
  /// Nesterov momentum without momentum (as torch.optim.SGD).
  Sgd(std::vector<SgdParamGroup> groups, double momentum, bool nesterov = false);

  /// One update of every parameter that has a gradient (others are skipped, as in PyTorch; a
  /// parameter's momentum buffer starts at its first gradient). A group's parameters must share
  /// a device (LibTorch's _foreach operations throw c10::Error otherwise).
  void Step();
  /// Drops all gradients (PyTorch 2.x zero_grad(set_to_none=True)).
  void ZeroGrad();

  std::vector<SgdParamGroup>& groups() { return groups_; }
  const std::vector<SgdParamGroup>& groups() const { return groups_; }
  double momentum() const { return momentum_; }
  bool nesterov() const { return nesterov_; }
  /// All parameters of all groups in group order.
  std::vector<torch::Tensor> parameters() const;

  /// Momentum buffer of each parameter by name; undefined tensors before a parameter's first
  /// step or when momentum == 0.
  std::vector<std::pair<std::string, torch::Tensor>> MomentumBuffers() const;
  /// Restores a buffer (copied to the parameter's device). Throws DataError for an unknown name
  /// or a shape mismatch.
  void SetMomentumBuffer(const std::string& name, const torch::Tensor& buffer);

 private:
  std::vector<SgdParamGroup> groups_;
  std::vector<std::vector<torch::Tensor>> buffers_;  // [group][param]
  double momentum_;
  bool nesterov_;
};

/// ASVtorch's two groups (get_weight_decay_param_groups): group 0 = trainable parameters whose
/// name contains any `skiplist` substring (weight decay 0), group 1 = all other trainable
/// parameters (weight decay `weight_decay`); both with learning rate `lr`.
std::vector<SgdParamGroup> WeightDecayGroups(const torch::nn::Module& module, const std::vector<std::string>& skiplist,
                                             double lr, double weight_decay);

}  // namespace asv::train
