// AdamW (Loshchilov & Hutter, "Decoupled weight decay regularization", ICLR 2019) matching
// torch.optim.AdamW (amsgrad off, maximize off) step for step. For each parameter p with gradient
// g, at its step t = 1, 2, ...:
//   p      = p · (1 − lr · weight_decay)                    (decoupled weight decay)
//   m      = β1 · m + (1 − β1) · g                           (exp_avg, starts at 0)
//   v      = β2 · v + (1 − β2) · g²                          (exp_avg_sq, starts at 0)
//   p     −= lr / (1 − β1^t) · m / (sqrt(v) / sqrt(1 − β2^t) + ε)
// with the learning rate and weight decay of the parameter's group. The state (exp_avg,
// exp_avg_sq and step, as torch.optim.AdamW names them) is keyed by parameter name (optimizer.h).
#pragma once

#include <string>
#include <vector>

#include "asvcpp/train/optimizer.h"

namespace asv::train {

struct AdamWOptions {
  double beta1 = 0.9;   ///< torch.optim.AdamW's betas[0]
  double beta2 = 0.999; ///< betas[1]
  double eps = 1e-8;
};

class AdamW : public Optimizer {
 public:
  /// Throws std::invalid_argument for names/params of different sizes, betas outside [0, 1) or a
  /// negative eps (as torch.optim.AdamW).
  explicit AdamW(std::vector<ParamGroup> groups, AdamWOptions options = {});

  std::string name() const override { return "AdamW"; }
  void Step() override;
  const AdamWOptions& options() const { return options_; }

  /// "exp_avg", "exp_avg_sq" (the parameter's shape) and "step" (a float64 scalar) of every
  /// parameter that has taken a step.
  std::vector<OptimizerState> State() const override;
  /// Throws DataError for an unknown parameter or key and for a shape that does not fit.
  void SetState(const std::string& param, const std::string& key, const torch::Tensor& value) override;

 private:
  struct ParamState {
    torch::Tensor exp_avg, exp_avg_sq;
    double step = 0;
  };
  std::vector<std::vector<ParamState>> state_;  // [group][param]
  AdamWOptions options_;
};

}  // namespace asv::train
