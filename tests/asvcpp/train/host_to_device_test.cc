#include "asvcpp/train/host_to_device.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace asv::train {
namespace {

TEST(HostToDeviceTest, CpuDeviceGetsTheSameTensor) {
  const auto x = torch::arange(12, torch::kFloat32).reshape({3, 4});
  const auto y = HostToDevice(x, torch::Device(torch::kCPU));
  EXPECT_EQ(y.data_ptr(), x.data_ptr());  // no copy on the CPU
}

TEST(HostToDeviceTest, CudaCopyIsCompleteAndIndependentOfTheHostBuffer) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const torch::Device cuda(torch::kCUDA, 0);
  // A large batch, so the copy is still queued when the host buffer changes.
  std::vector<float> buffer(64 * 30 * 400);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<float>(i % 1009);
  const auto host = torch::from_blob(buffer.data(), {64, 30, 400}, torch::kFloat32);
  const auto expected = host.clone();
  // Busy the stream first, so the asynchronous copy waits behind other work.
  auto busy = torch::randn({2048, 2048}, torch::TensorOptions().device(cuda));
  for (int i = 0; i < 8; ++i) busy = busy.matmul(busy).tanh();
  const auto on_device = HostToDevice(host, cuda);
  std::fill(buffer.begin(), buffer.end(), -1.0f);  // the caller's buffer may be reused at once
  EXPECT_TRUE(on_device.is_cuda());
  EXPECT_EQ(on_device.sizes(), expected.sizes());
  EXPECT_TRUE(torch::equal(on_device.cpu(), expected));
  const auto labels = HostToDevice(torch::tensor(std::vector<std::int64_t>{3, 1, 2}, torch::kInt64), cuda);
  EXPECT_EQ(labels.scalar_type(), torch::kInt64);
  EXPECT_TRUE(torch::equal(labels.cpu(), torch::tensor(std::vector<std::int64_t>{3, 1, 2}, torch::kInt64)));
}

}  // namespace
}  // namespace asv::train
