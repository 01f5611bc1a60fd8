// The deterministic weights and inputs of tools/golden/make_model_golden.py (its docstring has
// the formulas) and its golden file, tests/asvcpp/nnet/golden/wespeaker_models_golden.json, for
// the tests that compare asvcpp's networks with WeSpeaker's (nnet/wespeaker_golden_test.cc,
// models/wespeaker_model_test.cc). Sources that include it are compiled with -ffp-contract=off
// so that the value generator rounds like NumPy.
#pragma once

#include <cmath>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "tests/build_paths.h"

namespace asv::nnet {
namespace {

using nlohmann::json;

const json& Golden() {
  static const json doc = [] {
    std::ifstream in(std::string(ASV_SOURCE_DIR) + "/tests/asvcpp/nnet/golden/wespeaker_models_golden.json");
    if (!in) throw std::runtime_error("cannot open wespeaker_models_golden.json");
    return json::parse(in);
  }();
  return doc;
}

// u(seed, k) of make_model_golden.py: SplitMix64's output function of seed·2^40 + k.
double Uniform(std::uint64_t seed, std::uint64_t k) {
  std::uint64_t z = (seed << 40) + k + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z = z ^ (z >> 31);
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

inline bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Sets state-dict tensor number `index` as make_model_golden.py's fill_value does.
void Fill(const std::string& name, torch::Tensor& t, std::uint64_t index, double gain) {
  if (EndsWith(name, "num_batches_tracked")) {
    t.zero_();
    return;
  }
  const std::int64_t n = t.numel();
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) {
    const double u = Uniform(index, static_cast<std::uint64_t>(k));
    double value;
    if (EndsWith(name, "running_mean")) {
      value = 0.1 * (2.0 * u - 1.0);
    } else if (EndsWith(name, "running_var")) {
      value = 0.5 + u;
    } else if (t.dim() >= 2) {
      const double a = gain * std::sqrt(3.0 / static_cast<double>(n / t.size(0)));
      value = a * (2.0 * u - 1.0);
    } else if (EndsWith(name, "weight")) {
      value = 1.0 + 0.2 * (2.0 * u - 1.0);
    } else {
      value = 0.1 * (2.0 * u - 1.0);
    }
    v[static_cast<std::size_t>(k)] = static_cast<float>(value);
  }
  t.copy_(torch::from_blob(v.data(), t.sizes(), torch::kFloat32));
}

// make_model_golden.py's make_input.
torch::Tensor MakeInput(std::int64_t batch, std::int64_t frames, std::int64_t feat_dim, std::uint64_t input_seed) {
  const std::uint64_t seed = input_seed + static_cast<std::uint64_t>(frames);
  std::vector<float> v(static_cast<std::size_t>(batch * frames * feat_dim));
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t t = 0; t < frames; ++t) {
      const double ramp = 2.0 * static_cast<double>(t) / static_cast<double>(frames - 1) - 1.0;
      for (std::int64_t f = 0; f < feat_dim; ++f) {
        const auto i = static_cast<std::uint64_t>((b * frames + t) * feat_dim + f);
        const auto bf = static_cast<std::uint64_t>(b * feat_dim + f);
        const double noise = 2.0 * Uniform(seed, i) - 1.0;
        const double slope = 2.0 * Uniform(seed + 1024, bf) - 1.0;
        const double offset = 2.0 * Uniform(seed + 2048, bf) - 1.0;
        v[i] = static_cast<float>(noise + slope * ramp + offset);
      }
    }
  }
  return torch::from_blob(v.data(), {batch, frames, feat_dim}, torch::kFloat32).clone();
}

const json& GoldenModel(const std::string& name) {
  for (const json& m : Golden()["models"]) {
    if (m["name"] == name) return m;
  }
  throw std::runtime_error("no golden model " + name);
}

}  // namespace
}  // namespace asv::nnet
