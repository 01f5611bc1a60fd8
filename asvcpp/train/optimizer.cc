#include "asvcpp/train/optimizer.h"

#include <stdexcept>

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::train {

Optimizer::Optimizer(std::vector<ParamGroup> groups) : groups_(std::move(groups)) {
  for (const auto& g : groups_) {
    if (g.names.size() != g.params.size()) throw std::invalid_argument("optimizer: names and params differ in size");
  }
}

void Optimizer::ZeroGrad() {
  for (auto& g : groups_) {
    for (auto& p : g.params) {
      if (p.grad().defined()) p.mutable_grad() = torch::Tensor();
    }
  }
}

std::vector<torch::Tensor> Optimizer::parameters() const {
  std::vector<torch::Tensor> all;
  for (const auto& g : groups_) all.insert(all.end(), g.params.begin(), g.params.end());
  return all;
}

std::pair<std::size_t, std::size_t> Optimizer::Find(const std::string& name) const {
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    for (std::size_t pi = 0; pi < groups_[gi].names.size(); ++pi) {
      if (groups_[gi].names[pi] == name) return {gi, pi};
    }
  }
  throw DataError(fmt::format("optimizer state for unknown parameter '{}'", name));
}

}  // namespace asv::train
