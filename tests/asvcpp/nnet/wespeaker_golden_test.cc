// Compares asvcpp's ResNet34 and ECAPA-TDNN with WeSpeaker's PyTorch models run with the same
// weights. Golden file: tests/asvcpp/nnet/golden/wespeaker_models_golden.json, made by
// tools/golden/make_model_golden.py (its docstring has the command, the WeSpeaker commit, the
// versions, and the formulas of the weights and inputs that this file reproduces). For every
// model: the parameter count, the state-dict names and shapes (one to one with asvcpp's
// named_parameters() and named_buffers()), and the embeddings of two batches (2 x 200 and
// 2 x 157 frames of 80-dim input) within 1e-5. This file is compiled with -ffp-contract=off so
// the value generator rounds like NumPy.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "asvcpp/nnet/ecapa_tdnn.h"
#include "asvcpp/nnet/resnet.h"
#include "asvcpp/nnet/xvector_net.h"
#include "tests/build_paths.h"

namespace asv::nnet {
namespace {

using nlohmann::json;

constexpr double kTolerance = 1e-5;

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

bool EndsWith(const std::string& s, const std::string& suffix) {
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

std::map<std::string, torch::Tensor> StateTensors(torch::nn::Module& m) {
  std::map<std::string, torch::Tensor> state;
  for (auto& p : m.named_parameters()) state[p.key()] = p.value();
  for (auto& b : m.named_buffers()) state[b.key()] = b.value();
  return state;
}

const json& GoldenModel(const std::string& name) {
  for (const json& m : Golden()["models"]) {
    if (m["name"] == name) return m;
  }
  throw std::runtime_error("no golden model " + name);
}

// Checks names, shapes and parameter count, fills the weights, and compares the embeddings.
void CompareWithWespeaker(torch::nn::Module& model, const std::string& name,
                          const std::function<torch::Tensor(const torch::Tensor&)>& embed) {
  const json& golden = GoldenModel(name);
  const json& doc = Golden();
  EXPECT_EQ(CountParameters(model), golden["parameter_count"].get<std::int64_t>());

  std::map<std::string, torch::Tensor> state = StateTensors(model);
  const json& golden_state = golden["state_dict"];
  ASSERT_EQ(state.size(), golden_state.size()) << name << ": state-dict sizes differ";
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < golden_state.size(); ++i) {
    const std::string key = golden_state[i][0];
    const auto shape = golden_state[i][1].get<std::vector<std::int64_t>>();
    auto it = state.find(key);
    ASSERT_NE(it, state.end()) << name << ": no tensor named " << key;
    ASSERT_EQ(it->second.sizes().vec(), shape) << name << ": " << key;
    Fill(key, it->second, i, golden["gain"].get<double>());
  }

  model.eval();
  const auto batch = doc["batch"].get<std::int64_t>();
  const auto feat_dim = doc["feat_dim"].get<std::int64_t>();
  for (const json& c : golden["cases"]) {
    const auto frames = c["frames"].get<std::int64_t>();
    const torch::Tensor x = MakeInput(batch, frames, feat_dim, doc["input_seed"].get<std::uint64_t>());
    const torch::Tensor e = embed(x);
    const auto expected_shape = c["embedding_shape"].get<std::vector<std::int64_t>>();
    ASSERT_EQ(e.sizes().vec(), expected_shape);
    const auto expected = c["embedding"].get<std::vector<float>>();
    const torch::Tensor reference = torch::tensor(expected).reshape(expected_shape);
    const double max_diff = (e - reference).abs().max().item<double>();
    ::testing::Test::RecordProperty(name + "_frames" + std::to_string(frames) + "_max_abs_diff",
                                    std::to_string(max_diff));
    std::printf("%s, %lld frames: max |asvcpp - WeSpeaker| = %.3g (max |embedding| %.3g)\n", name.c_str(),
                static_cast<long long>(frames), max_diff, reference.abs().max().item<double>());
    EXPECT_LE(max_diff, kTolerance) << name << ", " << frames << " frames";
  }
}

TEST(WespeakerGoldenTest, GoldenFileHasTheModels) {
  EXPECT_EQ(Golden()["wespeaker_commit"], "dfa741957e5c11f477623b6e583d67d0af25ee88");
  EXPECT_EQ(Golden()["models"].size(), 5u);
}

TEST(WespeakerGoldenTest, ResNet34) {
  ResNet net(ResNet34Options(80, 256));
  CompareWithWespeaker(*net, "ResNet34", [&](const torch::Tensor& x) { return net->forward(x); });
}

class EcapaGoldenTest : public ::testing::TestWithParam<const char*> {};

TEST_P(EcapaGoldenTest, MatchesWespeaker) {
  EcapaTdnn net(EcapaTdnnOptionsFor(GetParam(), 80, 192));
  CompareWithWespeaker(*net, GetParam(), [&](const torch::Tensor& x) { return net->forward(x); });
}

INSTANTIATE_TEST_SUITE_P(WespeakerGoldenTest, EcapaGoldenTest,
                         ::testing::Values("ECAPA_TDNN_c512", "ECAPA_TDNN_GLOB_c512", "ECAPA_TDNN_c1024",
                                           "ECAPA_TDNN_GLOB_c1024"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                           return std::string(param_info.param);
                         });

}  // namespace
}  // namespace asv::nnet
