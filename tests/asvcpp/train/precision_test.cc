// The autocast guard (CPU; CUDA when available) against LibTorch's
// autocast behaviour, bf16 training against fp32 training, and the TF32 context flags.
#include "asvcpp/train/precision.h"

#include <cmath>
#include <cstdio>

#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "asvcpp/base/error.h"
#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/train/trainer.h"
#include "tests/asvcpp/train/synthetic_data.h"

namespace asv::train {
namespace {

// The dtype of a Linear layer's output and of a matmul on `device`.
std::pair<torch::Dtype, torch::Dtype> OutputTypes(torch::nn::Linear& linear, const torch::Device& device) {
  const auto x = torch::randn({4, 8}, torch::TensorOptions().device(device));
  return {linear->forward(x).scalar_type(), torch::matmul(x, x.t()).scalar_type()};
}

void ExpectAutocastOn(const std::string& device_name) {
  SCOPED_TRACE(device_name);
  const torch::Device device(device_name);
  torch::manual_seed(3);
  torch::nn::Linear linear(8, 3);
  linear->to(device);
  using Types = std::pair<torch::Dtype, torch::Dtype>;
  const Types fp32{torch::kFloat32, torch::kFloat32};
  const Types bf16{torch::kBFloat16, torch::kBFloat16};
  EXPECT_EQ(OutputTypes(linear, device), fp32);
  {
    const AutocastGuard outer(Precision::kBFloat16, device_name);
    EXPECT_EQ(OutputTypes(linear, device), bf16);
    {
      const AutocastGuard inner(Precision::kBFloat16, device_name);
      EXPECT_EQ(OutputTypes(linear, device), bf16);
    }
    EXPECT_EQ(OutputTypes(linear, device), bf16);  // The inner guard restored "on", not "off".
    {
      const AutocastGuard noop(Precision::kFloat32, device_name);
      EXPECT_EQ(OutputTypes(linear, device), bf16);  // fp32 changes nothing, also inside.
    }
    // Losses stay float32 under autocast.
    const auto logits = linear->forward(torch::randn({4, 8}, torch::TensorOptions().device(device)));
    const auto labels = torch::tensor({0, 1, 2, 0}, torch::TensorOptions().dtype(torch::kLong).device(device));
    EXPECT_EQ(torch::nn::functional::cross_entropy(logits, labels).scalar_type(), torch::kFloat32);
  }
  EXPECT_EQ(OutputTypes(linear, device), fp32);
  EXPECT_EQ(linear->weight.scalar_type(), torch::kFloat32);

  // The cast cache is cleared when the outermost guard ends: a weight changed in place between two
  // guarded forwards is seen by the second one (a stale bfloat16 copy would give the old output).
  // A convolution, because autocast caches casts of leaf weights only, and Linear's weight reaches
  // the cast as a (never cached) transposed view.
  torch::nn::Conv1d conv(torch::nn::Conv1dOptions(8, 3, 1));
  conv->to(device);
  const auto x = torch::randn({2, 8, 5}, torch::TensorOptions().device(device));
  torch::Tensor before;
  {
    const AutocastGuard guard(Precision::kBFloat16, device_name);
    before = conv->forward(x);
  }
  EXPECT_EQ(before.scalar_type(), torch::kBFloat16);
  {
    torch::NoGradGuard no_grad;
    conv->weight.add_(1.0);
  }
  torch::Tensor after;
  {
    const AutocastGuard guard(Precision::kBFloat16, device_name);
    after = conv->forward(x);
  }
  const auto expected = before.to(torch::kFloat32) + x.sum(1, /*keepdim=*/true);
  EXPECT_TRUE(torch::allclose(after.to(torch::kFloat32), expected, /*rtol=*/0.05, /*atol=*/0.1))
      << "before\n"
      << before << "\nafter\n"
      << after;
}

TEST(PrecisionTest, AutocastGuardOnCpu) {
  ExpectAutocastOn("cpu");
}

TEST(PrecisionTest, AutocastGuardOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  ExpectAutocastOn("cuda:0");
}

TEST(PrecisionTest, AutocastGuardChecksTheDeviceOnlyForBf16) {
  EXPECT_NO_THROW(AutocastGuard(Precision::kFloat32, "mps"));
  EXPECT_THROW(AutocastGuard(Precision::kBFloat16, "mps"), ConfigError);
  EXPECT_THROW(AutocastGuard(Precision::kBFloat16, "cudax"), ConfigError);
}

TEST(PrecisionTest, ApplyMathModesSetsTheTf32Flags) {
  auto& context = at::globalContext();
  const bool cublas = context.allowTF32CuBLAS();
  const bool cudnn = context.allowTF32CuDNN();
  ApplyMathModes(true);
  EXPECT_TRUE(context.allowTF32CuBLAS());
  EXPECT_TRUE(context.allowTF32CuDNN());
  ApplyMathModes(false);
  EXPECT_FALSE(context.allowTF32CuBLAS());
  EXPECT_FALSE(context.allowTF32CuDNN());
  context.setAllowTF32CuBLAS(cublas);
  context.setAllowTF32CuDNN(cudnn);
}

// The small StandardNet of trainer_test.cc: 8 minibatches of 16 clips per epoch.
TrainerOptions PrecisionOptions(Precision precision, const std::string& device) {
  TrainerOptions o = testing::SmallTrainerOptions();
  o.network.max_epochs = 2;
  o.dataloader_workers = 1;
  o.precision = precision;
  o.device = device;
  return o;
}

void ExpectBf16TrainingCloseToFp32(const std::string& device) {
  SCOPED_TRACE(device);
  const auto data = testing::MakeSyntheticData({});
  Trainer fp32(PrecisionOptions(Precision::kFloat32, device), data);
  Trainer bf16(PrecisionOptions(Precision::kBFloat16, device), data);
  const auto a = fp32.Train();
  const auto b = bf16.Train();
  ASSERT_EQ(a.epochs.size(), 2u);
  ASSERT_EQ(b.epochs.size(), 2u);
  bool any_difference = false;
  for (std::size_t e = 0; e < a.epochs.size(); ++e) {
    const double fp32_loss = a.epochs[e].loss;
    const double bf16_loss = b.epochs[e].loss;
    std::printf("epoch %zu loss: fp32 %.6f, bf16 %.6f\n", e + 1, fp32_loss, bf16_loss);
    ASSERT_TRUE(std::isfinite(bf16_loss));
    EXPECT_NEAR(bf16_loss, fp32_loss, 0.05 * fp32_loss) << "epoch " << e + 1;
    any_difference = any_difference || bf16_loss != fp32_loss;
  }
  EXPECT_TRUE(any_difference) << "bf16 training gave exactly the fp32 losses: autocast had no effect";
  EXPECT_LT(b.epochs.back().loss, b.epochs.front().loss);
  for (const auto& p : bf16.net().named_parameters()) {
    EXPECT_EQ(p.value().scalar_type(), torch::kFloat32) << p.key();
  }
  for (const auto& p : bf16.net().named_buffers()) {
    if (p.value().is_floating_point()) {
      EXPECT_EQ(p.value().scalar_type(), torch::kFloat32) << p.key();
    }
  }
  // Validation runs in float32 after the guarded forward passes.
  const auto validation = bf16.Validate();
  EXPECT_TRUE(std::isfinite(validation.validation_loss));
}

TEST(PrecisionTest, Bf16TrainingOnCpuIsCloseToFp32) {
  ExpectBf16TrainingCloseToFp32("cpu");
}

TEST(PrecisionTest, Bf16TrainingOnCudaIsCloseToFp32) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  ExpectBf16TrainingCloseToFp32("cuda:0");
}

}  // namespace
}  // namespace asv::train
