// GPU tests (label gpu): built only in CUDA builds, skipped when no GPU is usable. One GPU is
// enough: the trainer on cuda:0 against the CPU, and an NCCL group of one rank (the collectives
// and the reducer on device tensors).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "asvcpp/dist/process_group.h"
#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/train/gradient_reducer.h"
#include "asvcpp/train/precision.h"
#include "asvcpp/train/trainer.h"
#include "tests/asvcpp/train/synthetic_data.h"

namespace asv {
namespace {

#define ASV_REQUIRE_GPU()                                                  \
  do {                                                                     \
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no usable GPU";      \
  } while (false)

train::TrainerOptions SmallOptions(const std::string& device) {
  auto o = train::testing::SmallTrainerOptions();
  o.network.max_epochs = 1;
  o.dataloader_workers = 1;
  o.device = device;
  return o;
}

TEST(GpuTest, OneEpochOnTheGpuMatchesTheCpu) {
  ASV_REQUIRE_GPU();
  train::ApplyMathModes(/*allow_tf32=*/false);  // float32 matmuls, comparable with the CPU
  const auto data = train::testing::MakeSyntheticData({});
  train::Trainer cpu(SmallOptions("cpu"), data);
  train::Trainer gpu(SmallOptions("cuda:0"), data);
  const auto a = cpu.Train();
  const auto b = gpu.Train();
  ASSERT_EQ(a.epochs.size(), 1u);
  ASSERT_EQ(b.epochs.size(), 1u);
  EXPECT_NEAR(a.epochs[0].loss, b.epochs[0].loss, 1e-3 * std::abs(a.epochs[0].loss));
  const auto pa = cpu.net().parameters();
  const auto pb = gpu.net().parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(pb[i].device().is_cuda());
    EXPECT_TRUE(torch::allclose(pa[i], pb[i].cpu(), 1e-3, 1e-4)) << "parameter " << i;
  }
  train::ApplyMathModes(true);
}

TEST(GpuTest, Bf16TrainingOnTheGpuKeepsFloat32Weights) {
  ASV_REQUIRE_GPU();
  const auto data = train::testing::MakeSyntheticData({});
  auto options = SmallOptions("cuda:0");
  options.precision = train::Precision::kBFloat16;
  train::Trainer trainer(options, data);
  const auto result = trainer.Train();
  ASSERT_EQ(result.epochs.size(), 1u);
  EXPECT_TRUE(std::isfinite(result.epochs[0].loss));
  for (const auto& p : trainer.net().parameters()) EXPECT_EQ(p.scalar_type(), torch::kFloat32);
}

TEST(GpuTest, NcclGroupOfOneRank) {
  ASV_REQUIRE_GPU();
  dist::StoreServer store(0);
  dist::GroupOptions options;
  options.world.world_size = 1;
  options.world.master_port = store.port();
  options.world.store_hosted_externally = true;
  options.device = "cuda:0";
  auto group = dist::Group::Create(options);
  auto reducer = group->reducer();
  EXPECT_EQ(reducer->AllReduceSum({1.5, -2.0}), (std::vector<double>{1.5, -2.0}));
  EXPECT_TRUE(reducer->BroadcastFlag(true));
  torch::nn::Linear linear(4, 3);
  linear->to(torch::Device("cuda:0"));
  reducer->SyncModel(*linear);
  const auto params = linear->parameters();
  reducer->BeginBackward(true);
  linear->forward(torch::ones({2, 4}, torch::Device("cuda:0"))).sum().backward();
  const auto before = params[0].grad().clone();
  reducer->ReduceGradients(params);
  EXPECT_TRUE(torch::allclose(before, params[0].grad()));
  reducer->Barrier();
}

}  // namespace
}  // namespace asv
