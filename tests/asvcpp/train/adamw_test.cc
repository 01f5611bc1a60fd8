#include "asvcpp/train/adamw.h"

#include <stdexcept>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "asvcpp/base/error.h"

namespace asv::train {
namespace {

// Two groups (learning rate and decoupled weight decay of their own) against LibTorch's
// torch::optim::AdamW (the C++ port of torch.optim.AdamW), step for step.
TEST(AdamWTest, MatchesTorchOptimAdamWStepForStep) {
  torch::manual_seed(31);
  auto w1 = torch::randn({4, 3}).requires_grad_(true);
  const auto w_start = w1.detach().clone();
  auto b1 = torch::randn({4}).requires_grad_(true);
  auto w2 = w1.detach().clone().requires_grad_(true);
  auto b2 = b1.detach().clone().requires_grad_(true);
  const auto x = torch::randn({8, 3});
  const auto y = torch::randn({8, 4});

  std::vector<ParamGroup> groups(2);
  groups[0] = {{"b"}, {b1}, 0.05, 0.0};
  groups[1] = {{"w"}, {w1}, 0.02, 0.1};
  AdamWOptions o;
  o.beta1 = 0.8;
  o.beta2 = 0.95;
  o.eps = 1e-6;
  AdamW ours(std::move(groups), o);
  EXPECT_EQ(ours.name(), "AdamW");

  std::vector<torch::optim::OptimizerParamGroup> torch_groups;
  torch_groups.emplace_back(std::vector<torch::Tensor>{b2},
                            std::make_unique<torch::optim::AdamWOptions>(
                                torch::optim::AdamWOptions(0.05).betas({0.8, 0.95}).eps(1e-6).weight_decay(0.0)));
  torch_groups.emplace_back(std::vector<torch::Tensor>{w2},
                            std::make_unique<torch::optim::AdamWOptions>(
                                torch::optim::AdamWOptions(0.02).betas({0.8, 0.95}).eps(1e-6).weight_decay(0.1)));
  torch::optim::AdamW reference(std::move(torch_groups), torch::optim::AdamWOptions(0.05));

  for (int step = 0; step < 8; ++step) {
    ours.ZeroGrad();
    (torch::matmul(x, w1.t()) + b1 - y).pow(2).sum().backward();
    ours.Step();
    reference.zero_grad();
    (torch::matmul(x, w2.t()) + b2 - y).pow(2).sum().backward();
    reference.step();
    ASSERT_TRUE(torch::allclose(w1, w2, 1e-6, 1e-7)) << "step " << step;
    ASSERT_TRUE(torch::allclose(b1, b2, 1e-6, 1e-7)) << "step " << step;
  }
  EXPECT_GT((w1 - w_start).abs().max().item<double>(), 0.05);  // the steps moved the weights
}

// The state written by State() and restored with SetState continues the same trajectory.
TEST(AdamWTest, RestoredStateContinuesExactly) {
  torch::manual_seed(32);
  auto w = torch::randn({5}).requires_grad_(true);
  auto v = w.detach().clone().requires_grad_(true);
  const auto target = torch::randn({5});
  AdamW a({{{"w"}, {w}, 0.1, 0.01}});
  auto loss = [&](const torch::Tensor& p) { return (p - target).pow(2).sum(); };
  for (int i = 0; i < 3; ++i) {
    a.ZeroGrad();
    loss(w).backward();
    a.Step();
  }
  {
    torch::NoGradGuard no_grad;
    v.copy_(w);
  }
  AdamW b({{{"w"}, {v}, 0.1, 0.01}});
  const auto state = a.State();
  ASSERT_EQ(state.size(), 3u);  // exp_avg, exp_avg_sq, step
  for (const auto& s : state) b.SetState(s.param, s.key, s.value);
  EXPECT_EQ(state[2].value.item<double>(), 3.0);
  for (int i = 0; i < 3; ++i) {
    a.ZeroGrad();
    loss(w).backward();
    a.Step();
    b.ZeroGrad();
    loss(v).backward();
    b.Step();
    ASSERT_TRUE(torch::equal(w, v)) << "step " << i;
  }
  EXPECT_THROW(b.SetState("nope", "exp_avg", torch::zeros({5})), DataError);
  EXPECT_THROW(b.SetState("w", "exp_avg", torch::zeros({4})), DataError);
  EXPECT_THROW(b.SetState("w", "momentum_buffer", torch::zeros({5})), DataError);
}

TEST(AdamWTest, InvalidOptionsAreRefused) {
  auto w = torch::zeros({2}).requires_grad_(true);
  AdamWOptions bad;
  bad.beta1 = 1.0;
  EXPECT_THROW(AdamW({{{"w"}, {w}, 0.1, 0.0}}, bad), std::invalid_argument);
  bad = {};
  bad.eps = -1;
  EXPECT_THROW(AdamW({{{"w"}, {w}, 0.1, 0.0}}, bad), std::invalid_argument);
  EXPECT_THROW(AdamW({{{"w", "x"}, {w}, 0.1, 0.0}}), std::invalid_argument);
}

}  // namespace
}  // namespace asv::train
