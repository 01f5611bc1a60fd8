#include "asvcpp/train/step_readings.h"

#include <stdexcept>

#include <torch/torch.h>

namespace asv::train {

bool StepReadings::Add(const torch::Tensor& loss, const torch::Tensor& correct) {
  if (loss.dim() != 0 || correct.dim() != 0) {
    throw std::invalid_argument("StepReadings::Add: loss and correct must be 0-dim tensors");
  }
  losses_.push_back(loss.detach());
  correct_.push_back(correct.detach());
  return losses_.size() >= kReadInterval;
}

std::vector<StepReadings::Step> StepReadings::Read() {
  std::vector<Step> steps(losses_.size());
  if (steps.empty()) return steps;
  // float32 (or bfloat16, half) to float64 is exact, so each value equals Tensor::item<double>().
  const auto host = [](const std::vector<torch::Tensor>& values) {
    return torch::stack(values).to(torch::kCPU, torch::kDouble).contiguous();
  };
  const auto losses = host(losses_);
  const auto correct = host(correct_);
  const double* l = losses.data_ptr<double>();
  const double* c = correct.data_ptr<double>();
  for (std::size_t k = 0; k < steps.size(); ++k) steps[k] = {l[k], c[k]};
  losses_.clear();
  correct_.clear();
  return steps;
}

}  // namespace asv::train
