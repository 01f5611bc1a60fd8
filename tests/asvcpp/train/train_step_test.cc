#include "asvcpp/train/train_step.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/settings/settings.h"

namespace asv::train {
namespace {

struct StepFixture {
  StepFixture() {
    torch::manual_seed(3);
    settings::NetworkSettings ns;
    ns.frame_layer_size = 16;
    ns.stat_size = 16;
    ns.embedding_size = 8;
    net = nnet::MakeXvectorNet(ns, /*feat_dim=*/6, /*n_speakers=*/4);
    std::vector<std::string> skiplist(ns.weight_decay_skiplist.begin(), ns.weight_decay_skiplist.end());
    optimizer = std::make_unique<Sgd>(WeightDecayGroups(*net, skiplist, 0.1, 0.0), 0.0);
    net->train();
    features = torch::randn({4, 6, 30});
    labels = torch::tensor(std::vector<std::int64_t>{0, 1, 2, 3}, torch::kInt64);
  }
  std::vector<torch::Tensor> Copy() const {
    std::vector<torch::Tensor> out;
    for (const auto& p : net->parameters()) out.push_back(p.detach().clone());
    return out;
  }
  nnet::XvectorNet net{nullptr};
  std::unique_ptr<Sgd> optimizer;
  torch::Tensor features, labels;
};

// Interval 2: the first minibatch only accumulates (half) gradients, the second adds its half,
// steps and zeroes them; the result equals one step on the mean of the two losses.
TEST(TrainStepTest, AccumulatesOverTheIntervalThenStepsOnce) {
  StepFixture a;
  TrainStep step(a.net.ptr(), *a.optimizer, std::make_shared<NoOpReducer>(), "cpu", Precision::kFloat32);
  const auto before = a.Copy();
  EXPECT_FALSE(step.Run(a.features, a.labels, 2, false));
  const auto after_first = a.Copy();
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(torch::equal(before[i], after_first[i]));
  bool any_gradient = false;
  for (const auto& p : a.net->parameters())
    any_gradient |= p.grad().defined() && p.grad().abs().sum().item<double>() > 0;
  EXPECT_TRUE(any_gradient);
  EXPECT_FALSE(step.Run(a.features, a.labels, 2, true));
  for (const auto& p : a.net->parameters()) {
    EXPECT_TRUE(!p.grad().defined() || p.grad().abs().sum().item<double>() == 0.0);
  }

  // The same two minibatches (identical here) as one step of interval 1 on the same data: the
  // mean of two equal losses is the loss, so the parameters agree to rounding.
  StepFixture b;
  TrainStep single(b.net.ptr(), *b.optimizer, std::make_shared<NoOpReducer>(), "cpu", Precision::kFloat32);
  single.Run(b.features, b.labels, 1, true);
  const auto pa = a.net->parameters();
  const auto pb = b.net->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::allclose(pa[i], pb[i], 1e-5, 1e-6)) << i;
  EXPECT_FALSE(torch::equal(pa[0], before[0]));

  // Readings: the loss of each minibatch, read when due (every StepReadings::kReadInterval).
  const auto readings = step.readings().Read();
  ASSERT_EQ(readings.size(), 2u);
  EXPECT_GT(readings[0].loss, 0.0);
  EXPECT_EQ(readings[0].loss, readings[1].loss);  // the first step did not change the network
  EXPECT_LE(readings[0].correct, 4.0);
}

TEST(TrainStepTest, ReadingsAreDueEveryReadInterval) {
  StepFixture a;
  TrainStep step(a.net.ptr(), *a.optimizer, std::make_shared<NoOpReducer>(), "cpu", Precision::kFloat32);
  for (std::size_t i = 1; i < StepReadings::kReadInterval; ++i) EXPECT_FALSE(step.Run(a.features, a.labels, 1, true));
  EXPECT_TRUE(step.Run(a.features, a.labels, 1, true));
  EXPECT_EQ(step.readings().Read().size(), StepReadings::kReadInterval);
}

}  // namespace
}  // namespace asv::train
