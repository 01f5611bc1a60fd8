#include "asvcpp/train/sgd.h"

#include <algorithm>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "asvcpp/base/error.h"
#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/settings/settings.h"

namespace asv::train {
namespace {

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

void ExpectMatchesTorchOptimSgd(bool nesterov) {
  torch::manual_seed(30);
  auto w1 = torch::randn({4, 3}).requires_grad_(true);
  auto b1 = torch::randn({4}).requires_grad_(true);
  auto w2 = w1.detach().clone().requires_grad_(true);
  auto b2 = b1.detach().clone().requires_grad_(true);
  const auto x = torch::randn({8, 3});
  const auto y = torch::randn({8, 4});

  std::vector<SgdParamGroup> groups(2);
  groups[0] = {{"b"}, {b1}, 0.05, 0.0};
  groups[1] = {{"w"}, {w1}, 0.05, 0.01};
  Sgd ours(std::move(groups), 0.9, nesterov);

  std::vector<torch::optim::OptimizerParamGroup> torch_groups;
  torch_groups.emplace_back(std::vector<torch::Tensor>{b2},
                            std::make_unique<torch::optim::SGDOptions>(
                                torch::optim::SGDOptions(0.05).momentum(0.9).nesterov(nesterov)));
  torch_groups.emplace_back(
      std::vector<torch::Tensor>{w2},
      std::make_unique<torch::optim::SGDOptions>(
          torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(0.01).nesterov(nesterov)));
  torch::optim::SGD reference(std::move(torch_groups), torch::optim::SGDOptions(0.05));

  for (int step = 0; step < 6; ++step) {
    ours.ZeroGrad();
    (torch::matmul(x, w1.t()) + b1 - y).pow(2).sum().backward();
    ours.Step();
    reference.zero_grad();
    (torch::matmul(x, w2.t()) + b2 - y).pow(2).sum().backward();
    reference.step();
    ASSERT_TRUE(torch::allclose(w1, w2, 1e-6, 1e-7)) << "step " << step;
    ASSERT_TRUE(torch::allclose(b1, b2, 1e-6, 1e-7)) << "step " << step;
  }
  const auto buffers = ours.MomentumBuffers();
  ASSERT_EQ(buffers.size(), 2u);
  EXPECT_EQ(buffers[0].first, "b");
  EXPECT_TRUE(buffers[1].second.defined());
  EXPECT_THROW(ours.SetMomentumBuffer("nope", torch::zeros({4})), DataError);
  EXPECT_THROW(ours.SetMomentumBuffer("b", torch::zeros({5})), DataError);
}

TEST(SgdTest, MatchesTorchOptimSgdStepForStep) {
  ExpectMatchesTorchOptimSgd(false);
}

// WeSpeaker's recipes train with Nesterov momentum (torch.optim.SGD(nesterov=True)).
TEST(SgdTest, NesterovMatchesTorchOptimSgdStepForStep) {
  ExpectMatchesTorchOptimSgd(true);
  std::vector<SgdParamGroup> groups(1);
  groups[0] = {{"w"}, {torch::zeros({2}, torch::requires_grad())}, 0.1, 0.0};
  EXPECT_THROW(Sgd(groups, 0.0, true), std::invalid_argument);
}

// Several parameters in one group, one of which gets its first gradient only at step 2 and none
// at step 4: the multi-tensor step must skip it, start its momentum buffer late and keep the
// others' buffers, as torch.optim.SGD does per parameter.
TEST(SgdTest, ParametersWithoutGradientAreSkippedAndStartTheirMomentumLate) {
  torch::manual_seed(31);
  std::vector<torch::Tensor> ours_params;
  std::vector<torch::Tensor> ref_params;
  for (const auto& shape : {std::vector<int64_t>{4, 3}, {4}, {4, 4}}) {
    ours_params.push_back(torch::randn(shape).requires_grad_(true));
    ref_params.push_back(ours_params.back().detach().clone().requires_grad_(true));
  }
  const auto x = torch::randn({8, 3});
  const auto y = torch::randn({8, 4});
  auto loss = [&](const std::vector<torch::Tensor>& p, int step) {
    auto h = torch::matmul(x, p[0].t()) + p[1];
    if (step >= 2 && step != 4) h = torch::matmul(h, p[2]);  // p[2]: no gradient at steps 0, 1, 4
    return (h - y).pow(2).sum();
  };

  std::vector<SgdParamGroup> groups(1);
  groups[0] = {{"w", "b", "v"}, ours_params, 0.01, 0.001};
  Sgd ours(std::move(groups), 0.9);
  const auto v_start = ours_params[2].detach().clone();
  torch::optim::SGD reference(ref_params, torch::optim::SGDOptions(0.01).momentum(0.9).weight_decay(0.001));

  for (int step = 0; step < 6; ++step) {
    ours.ZeroGrad();
    loss(ours_params, step).backward();
    ours.Step();
    for (auto& p : ref_params) p.mutable_grad() = torch::Tensor();  // zero_grad(set_to_none=True)
    loss(ref_params, step).backward();
    reference.step();
    for (std::size_t i = 0; i < ours_params.size(); ++i) {
      ASSERT_TRUE(torch::allclose(ours_params[i], ref_params[i], 1e-6, 1e-7)) << "step " << step << " param " << i;
    }
    const bool v_has_buffer = ours.MomentumBuffers()[2].second.defined();
    EXPECT_EQ(v_has_buffer, step >= 2) << "step " << step;
    if (step < 2) {
      EXPECT_TRUE(torch::equal(ours_params[2], v_start)) << "step " << step;
    }
  }
  EXPECT_FALSE(torch::equal(ours_params[2], v_start));
}

TEST(SgdTest, WeightDecayGroupsFollowTheSkiplist) {
  settings::NetworkSettings s;
  s.network_class = "StandardResSeNet";
  s.frame_layer_size = 32;
  s.stat_size = 32;
  s.embedding_size = 16;
  s.ser = 4;
  auto net = nnet::MakeXvectorNet(s, 30, 5);
  const auto groups = WeightDecayGroups(*net, {"batchnorm"}, 0.1, 0.001);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].weight_decay, 0.0);
  EXPECT_EQ(groups[1].weight_decay, 0.001);
  for (const auto& n : groups[0].names) EXPECT_NE(n.find("batchnorm"), std::string::npos) << n;
  for (const auto& n : groups[1].names) EXPECT_EQ(n.find("batchnorm"), std::string::npos) << n;
  EXPECT_TRUE(Contains(groups[0].names, "tdnn_layers.0.batchnorm.weight"));
  EXPECT_TRUE(Contains(groups[0].names, "tdnn_layers.1.se.linear_relu_bn.batchnorm.bias"));
  EXPECT_TRUE(Contains(groups[0].names, "utterance_layers.0.batchnorm.weight"));
  // As in ASVtorch, the residual layers' fc_norm/cnn_norm DO get weight decay.
  EXPECT_TRUE(Contains(groups[1].names, "tdnn_layers.1.fc_norm.weight"));
  EXPECT_TRUE(Contains(groups[1].names, "tdnn_layers.0.cnn.weight"));
  EXPECT_TRUE(Contains(groups[1].names, "utterance_layers.1.weight"));
  EXPECT_EQ(groups[0].params.size() + groups[1].params.size(), net->parameters().size());

  const auto with_norms = WeightDecayGroups(*net, {"batchnorm", "_norm"}, 0.1, 0.001);
  EXPECT_TRUE(Contains(with_norms[0].names, "tdnn_layers.1.fc_norm.weight"));
}

}  // namespace
}  // namespace asv::train
