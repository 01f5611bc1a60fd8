// The trainer's optimizers: parameter groups with their own learning rate and weight decay, and a
// per-parameter state keyed by parameter NAME (torch::optim keys it by tensor address, as a
// std::string in LibTorch 1.13 and a void* in 2.x), which makes checkpoints readable,
// device-independent and version-independent. Implementations: Sgd (sgd.h, torch.optim.SGD) and
// AdamW (adamw.h, torch.optim.AdamW).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace asv::train {

struct ParamGroup {
  std::vector<std::string> names;     ///< parameter names (module.named_parameters() keys)
  std::vector<torch::Tensor> params;  ///< the parameters, same order
  double lr = 0.1;
  double weight_decay = 0;
};

/// One tensor of an optimizer's per-parameter state, e.g. ("fc.weight", "exp_avg", tensor).
struct OptimizerState {
  std::string param;
  std::string key;
  torch::Tensor value;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// "SGD" or "AdamW": written into checkpoints, which refuse to resume with another optimizer.
  virtual std::string name() const = 0;
  /// One update of every parameter that has a gradient (others are skipped, as in PyTorch; a
  /// parameter's state starts at its first gradient). A group's parameters must share a device
  /// (LibTorch's _foreach operations throw c10::Error otherwise).
  virtual void Step() = 0;
  /// Drops all gradients (PyTorch 2.x zero_grad(set_to_none=True)).
  void ZeroGrad();

  std::vector<ParamGroup>& groups() { return groups_; }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  /// All parameters of all groups in group order.
  std::vector<torch::Tensor> parameters() const;

  /// The defined state tensors, parameter by parameter in group order.
  virtual std::vector<OptimizerState> State() const = 0;
  /// Restores one state tensor (copied to the parameter's device). Throws DataError for an
  /// unknown parameter or key, or a shape that does not fit.
  virtual void SetState(const std::string& param, const std::string& key, const torch::Tensor& value) = 0;

 protected:
  /// Throws std::invalid_argument when a group's names and params differ in size.
  explicit Optimizer(std::vector<ParamGroup> groups);
  /// (group, index) of the parameter `name`. Throws DataError for an unknown name.
  std::pair<std::size_t, std::size_t> Find(const std::string& name) const;

  std::vector<ParamGroup> groups_;
};

}  // namespace asv::train
