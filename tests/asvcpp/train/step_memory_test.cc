// The dry run's measurement of a training step's memory (step_memory.h) against a real step.
#include "asvcpp/train/step_memory.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>

#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/settings/settings.h"
#include "asvcpp/train/cpu_allocator.h"

namespace asv::train {
namespace {

TEST(StepMemoryTest, PredictsTheActivationsOfALargerStep) {
  torch::manual_seed(0);
  settings::NetworkSettings network;  // ASVtorch's StandardNet: 512-channel TDNN, 1500-dim statistics
  auto net = nnet::MakeXvectorNet(network, 30, 50);
  const auto buffers_before = net->buffers().front().clone();

  const StepMemory m = MeasureStepMemory(*net, 30, 200, /*optimizer_slots=*/1);
  std::int64_t parameters = 0;
  for (const auto& p : net->parameters()) parameters += p.numel();
  EXPECT_EQ(m.parameters, parameters);
  EXPECT_EQ(m.model_bytes, static_cast<std::uint64_t>(parameters) * 4 * 2);  // weights, momentum
  EXPECT_EQ(m.frames, 200);
  ASSERT_FALSE(m.step.empty());
  const auto peak = [](const StepMemory& s, double examples) {
    double p = 0;
    for (const auto& l : s.step) p = std::max(p, l.fixed + examples * l.per_example);
    return p;
  };
  // The parameters' gradients are part of every step.
  EXPECT_GE(peak(m, 1), 4.0 * static_cast<double>(parameters));
  // The network is left as it was: BatchNorm statistics restored, no gradients.
  EXPECT_TRUE(torch::equal(net->buffers().front(), buffers_before));
  for (const auto& p : net->parameters()) EXPECT_FALSE(p.grad().defined());

  // A real step of 32 clips of 200 frames, measured by the caching allocator (blocks of >= 1 MiB,
  // rounded up by at most 25 %; the activations of this batch are that large): its peak is the
  // estimate's within 25 %.
  CachingCpuAllocatorScope scope;
  ReleaseCachedCpuMemory();
  const std::size_t before = GetCpuAllocatorStats().in_use_bytes;
  {
    const auto x = torch::randn({32, 30, 200});
    const auto y = torch::randint(50, {32}, torch::kInt64);
    torch::nn::functional::cross_entropy(net->Logits(x, y), y).backward();
  }
  const double measured = static_cast<double>(GetCpuAllocatorStats().phase_peak_in_use_bytes - before);
  const double estimated = peak(m, 32);
  EXPECT_GT(measured / estimated, 0.8) << measured << " vs " << estimated;
  EXPECT_LT(measured / estimated, 1.25) << measured << " vs " << estimated;

  // Twice the frames: the part that grows with the examples doubles.
  const StepMemory longer = MeasureStepMemory(*net, 30, 400, 1);
  const double growth = peak(m, 1000) - peak(m, 0);
  EXPECT_NEAR(peak(longer, 1000) - peak(longer, 0), 2 * growth, 0.02 * growth);
}

}  // namespace
}  // namespace asv::train
