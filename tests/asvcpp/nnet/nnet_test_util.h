// Helpers shared by the tests of asvcpp/nnet.
#pragma once

#include <torch/nn/module.h>

#include <set>
#include <string>

namespace asv::nnet::testing {

/// The state-dict keys of `m`: the names of its parameters and buffers.
inline std::set<std::string> StateKeys(const torch::nn::Module& m) {
  std::set<std::string> keys;
  for (const auto& p : m.named_parameters()) keys.insert(p.key());
  for (const auto& b : m.named_buffers()) keys.insert(b.key());
  return keys;
}

}  // namespace asv::nnet::testing
