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
#include "tests/asvcpp/nnet/wespeaker_golden_util.h"
#include "tests/build_paths.h"

namespace asv::nnet {
namespace {

using nlohmann::json;

constexpr double kTolerance = 1e-5;

std::map<std::string, torch::Tensor> StateTensors(torch::nn::Module& m) {
  std::map<std::string, torch::Tensor> state;
  for (auto& p : m.named_parameters()) state[p.key()] = p.value();
  for (auto& b : m.named_buffers()) state[b.key()] = b.value();
  return state;
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
