// GPU tests (label gpu): built only in CUDA builds, skipped when no GPU is usable. One GPU is
// enough: the trainer on cuda:0 against the CPU, an NCCL group of one rank (the collectives and
// the reducer on device tensors), and the inference path of embedding extraction on the device.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "asvcpp/distributed/process_group.h"
#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/train/checkpoint_io.h"
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
  // Each parameter after one epoch (8 SGD steps) differs from the CPU's by rounding only: the two
  // devices sum in different orders, so compare the relative size of the difference (Frobenius
  // norms), not elementwise (a bias near zero has no relative precision to speak of).
  for (std::size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(pb[i].device().is_cuda());
    const auto diff = (pa[i] - pb[i].cpu()).norm().item<double>();
    const auto size = pa[i].norm().item<double>();
    std::cout << "parameter " << i << " " << pa[i].sizes() << ": |cpu - gpu| / |cpu| = " << diff / size
              << ", max |cpu - gpu| = " << (pa[i] - pb[i].cpu()).abs().max().item<double>() << "\n";
    // Plus an absolute floor of 1e-6 per element (RMS): a parameter that stays near zero (its
    // gradient vanishes behind a BatchNorm) differs by ~1e-8 against a norm of the same size.
    EXPECT_LE(diff, 1e-3 * size + 1e-6 * std::sqrt(static_cast<double>(pa[i].numel()))) << "parameter " << i;
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

// What `asvrun embed --device cuda` and stage 8 on a GPU run: nnet::InferenceEmbedding, which folds
// each BatchNorm of a ResNet into its convolution on the network's own device (in double there),
// and the plain forward pass of ECAPA-TDNN. Float32 math (no TF32), so the device differs from
// the CPU by summation order only.
TEST(GpuTest, InferenceEmbeddingOnTheGpuMatchesTheCpu) {
  ASV_REQUIRE_GPU();
  train::ApplyMathModes(/*allow_tf32=*/false);
  nnet::MarginHeadOptions head;
  struct Case {
    const char* model;
    std::int64_t channels;
    bool channels_last;
  };
  for (const Case c :
       {Case{"ResNet34", 8, false}, Case{"ResNet34", 8, true}, Case{"ECAPA_TDNN_GLOB_c512", 32, false}}) {
    torch::manual_seed(5);
    auto net = nnet::MakeMarginNet(c.model, 24, 16, 7, head, c.channels, c.channels_last);
    {
      torch::NoGradGuard no_grad;
      for (auto& b : net->named_buffers()) {  // BatchNorm statistics a trained network could have
        if (b.key().find("running_var") != std::string::npos) b.value().copy_(torch::rand_like(b.value()) + 0.2);
        if (b.key().find("running_mean") != std::string::npos) b.value().copy_(torch::randn_like(b.value()) * 0.3);
      }
    }
    net->eval();
    const torch::Tensor x = torch::randn({3, 123, 24});  // [batch, frames, feat_dim]
    const torch::Tensor on_cpu = nnet::InferenceEmbedding(*net)(x);
    net->to(torch::Device("cuda:0"));
    const torch::Tensor on_gpu = nnet::InferenceEmbedding(*net)(x.to(torch::Device("cuda:0")));
    EXPECT_TRUE(on_gpu.device().is_cuda()) << c.model;
    ASSERT_EQ(on_gpu.sizes(), on_cpu.sizes()) << c.model;
    const torch::Tensor got = on_gpu.cpu();
    const double relative = (got - on_cpu).abs().max().item<double>() / on_cpu.abs().max().item<double>();
    const double cosine = torch::cosine_similarity(got, on_cpu, 1).min().item<double>();
    std::cout << c.model << (c.channels_last ? " (channels-last)" : "") << ": max |gpu - cpu| / max |cpu| = "
              << relative << ", lowest cosine " << cosine << "\n";
    EXPECT_LT(relative, 1e-4) << c.model << " channels_last " << c.channels_last;
    EXPECT_GT(cosine, 0.99999) << c.model;
  }
  train::ApplyMathModes(true);
}

TEST(GpuTest, NcclGroupOfOneRank) {
  ASV_REQUIRE_GPU();
  distributed::StoreServer store(0);
  distributed::ProcessGroupOptions options;
  options.world.world_size = 1;
  options.world.master_port = store.port();
  options.world.store_hosted_externally = true;
  options.device = "cuda:0";
  auto group = distributed::ProcessGroup::Create(options);
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

std::filesystem::path TempFolder(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() / ("asv_gpu_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

train::TrainerOptions CheckpointingOptions(const std::filesystem::path& folder, int epochs) {
  auto o = SmallOptions("cuda:0");
  o.network.max_epochs = epochs;
  o.checkpoint_folder = folder / "networks";
  o.log_folder = folder / "logs";
  return o;
}

// cuDNN picks deterministic kernels and no autotuning, so that two runs of the same steps give
// the same bits; restored at the end of the test.
class DeterministicCudnn {
 public:
  DeterministicCudnn()
      : deterministic_(at::globalContext().deterministicCuDNN()), benchmark_(at::globalContext().benchmarkCuDNN()) {
    at::globalContext().setDeterministicCuDNN(true);
    at::globalContext().setBenchmarkCuDNN(false);
  }
  ~DeterministicCudnn() {
    at::globalContext().setDeterministicCuDNN(deterministic_);
    at::globalContext().setBenchmarkCuDNN(benchmark_);
  }

 private:
  bool deterministic_;
  bool benchmark_;
};

// A checkpoint written on a GPU holds the CUDA generator's state, and resuming on a GPU puts it
// back (whatever was drawn from the generator in between).
TEST(GpuTest, CheckpointCarriesAndRestoresTheCudaGeneratorState) {
  ASV_REQUIRE_GPU();
  const auto dir = TempFolder("cuda_rng");
  const auto data = train::testing::MakeSyntheticData({});
  {
    train::Trainer first(CheckpointingOptions(dir, 1), data);
    first.Train();
  }
  const auto meta = train::ReadCheckpointMeta(dir / "networks" / "epoch.1.pt");
  ASSERT_TRUE(meta.torch_cuda_rng_state.defined());
  const torch::Device gpu("cuda:0");
  auto options = CheckpointingOptions(dir, 2);
  options.network.resume_epoch = 1;
  train::Trainer second(options, data);
  torch::rand({1000}, torch::TensorOptions(gpu));  // moves the generator on
  EXPECT_FALSE(torch::equal(train::GetTorchCudaRngState(gpu), meta.torch_cuda_rng_state));
  EXPECT_EQ(second.Start().load_epoch, 1);
  EXPECT_TRUE(torch::equal(train::GetTorchCudaRngState(gpu), meta.torch_cuda_rng_state));
  std::filesystem::remove_all(dir);
}

// Two epochs straight and one epoch, then a resume for the second, end with the same bits on a
// GPU (deterministic cuDNN kernels).
TEST(GpuTest, ResumeOnTheGpuIsExact) {
  ASV_REQUIRE_GPU();
  const DeterministicCudnn deterministic;
  train::ApplyMathModes(/*allow_tf32=*/false);
  const auto straight_dir = TempFolder("straight");
  const auto split_dir = TempFolder("split");
  const auto data = train::testing::MakeSyntheticData({});
  train::Trainer straight(CheckpointingOptions(straight_dir, 2), data);
  const auto a = straight.Train();
  {
    train::Trainer first(CheckpointingOptions(split_dir, 1), data);
    first.Train();
  }
  auto options = CheckpointingOptions(split_dir, 2);
  options.network.resume_epoch = 1;
  train::Trainer second(options, data);
  const auto b = second.Train();
  ASSERT_EQ(a.epochs.size(), 2u);
  ASSERT_EQ(b.epochs.size(), 1u);
  EXPECT_EQ(b.epochs[0].loss, a.epochs[1].loss);
  EXPECT_EQ(b.epochs[0].accuracy, a.epochs[1].accuracy);
  const auto pa = straight.net().named_parameters();
  const auto pb = second.net().named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(torch::equal(pa[i].value(), pb[i].value())) << pa[i].key();
  }
  const auto ba = straight.net().named_buffers();
  const auto bb = second.net().named_buffers();
  ASSERT_EQ(ba.size(), bb.size());
  for (std::size_t i = 0; i < ba.size(); ++i) {
    EXPECT_TRUE(torch::equal(ba[i].value(), bb[i].value())) << ba[i].key();
  }
  train::ApplyMathModes(true);
  std::filesystem::remove_all(straight_dir);
  std::filesystem::remove_all(split_dir);
}

}  // namespace
}  // namespace asv
