// The dry run's memory verdicts (memory_check.h).
#include "asvcpp/recipe/memory_check.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <fstream>
#include <string>

namespace asv::recipe {
namespace {

MemoryNeed Need() {
  MemoryNeed n;
  n.stage = "stage 5 (train)";
  n.batch_key = "network.minibatch_size";
  n.global_batch = 128;
  n.examples = "segments of 200 frames";
  n.parameters = 6659936;
  n.model_bytes = 80ull << 20;
  // Early in the step the gradients of the parameters decide (20 MiB + 1 MiB per example), later the
  // activations (60 MiB per example).
  n.step = {{20.0 * (1 << 20), 1.0 * (1 << 20)}, {0, 60.0 * (1 << 20)}};
  return n;
}

TEST(MemoryCheckTest, FitsAndSaysHowMuch) {
  const auto v = CheckMemory(Need(), 2, {"cuda:0", 80ull << 30, "total memory less 1 GiB"});
  EXPECT_TRUE(v.fits);
  // 80 MiB + 64 x 60 MiB = 3920 MiB.
  EXPECT_EQ(v.line,
            "stage 5 (train): about 3.8 GiB per rank (64 segments of 200 frames per rank; the model's 6659936 "
            "parameters: 80.0 MiB of weights and optimizer state; up to 60.0 MiB more per example); cuda:0 has 80.0 "
            "GiB (total memory less 1 GiB)");
}

TEST(MemoryCheckTest, TooLargeNamesTheSettingAndTheLargestBatchThatFits) {
  // 2 GiB: (2048 - 80) / 60 = 32 segments per rank, 64 over two ranks.
  const auto v = CheckMemory(Need(), 2, {"cpu", 2ull << 30, "MemAvailable"});
  EXPECT_FALSE(v.fits);
  EXPECT_NE(v.line.find("; cpu has only 2.0 GiB (MemAvailable): at most 32 segments of 200 frames per rank fit, so "
                        "lower network.minibatch_size to at most 64"),
            std::string::npos)
      << v.line;
  // Not one example, or not even the model.
  EXPECT_NE(CheckMemory(Need(), 1, {"cpu", 120ull << 20, "MemAvailable"}).line.find("not even one example per rank"),
            std::string::npos);
  EXPECT_NE(CheckMemory(Need(), 1, {"cpu", 90ull << 20, "MemAvailable"}).line.find("not even one example per rank"),
            std::string::npos);
  EXPECT_NE(CheckMemory(Need(), 1, {"cpu", 50ull << 20, "MemAvailable"}).line.find("the model alone does not fit"),
            std::string::npos);
}

TEST(MemoryCheckTest, PeaksFromTheUpperEnvelope) {
  const double mib = 1 << 20;
  const std::vector<MemoryLine> lines = {
      {100 * mib, 1 * mib}, {0, 60 * mib}, {10 * mib, 0.5 * mib}, {5 * mib, 30 * mib}};
  EXPECT_DOUBLE_EQ(StepPeak(lines, 1), 101 * mib);
  EXPECT_DOUBLE_EQ(StepPeak(lines, 2), 120 * mib);
  EXPECT_DOUBLE_EQ(StepPeak(lines, 10), 600 * mib);
  // (10, 0.5) is below (100, 1) everywhere, (5, 30) below (0, 60) from 1 example on.
  const auto envelope = UpperEnvelope(lines);
  ASSERT_EQ(envelope.size(), 2u);
  EXPECT_DOUBLE_EQ(envelope[0].fixed, 100 * mib);
  EXPECT_DOUBLE_EQ(envelope[1].per_example, 60 * mib);
  for (std::int64_t b : {1, 2, 7, 1000}) EXPECT_DOUBLE_EQ(StepPeak(envelope, b), StepPeak(lines, b)) << b;
  EXPECT_EQ(MostExamplesWithin(lines, 600 * mib), 10);
  EXPECT_EQ(MostExamplesWithin(lines, 599 * mib), 9);
  EXPECT_EQ(MostExamplesWithin(lines, 99 * mib), 0);
}

TEST(MemoryCheckTest, UnknownMemoryAndNoEstimateNeverRefuse) {
  EXPECT_TRUE(CheckMemory(Need(), 1, {"cpu", 0, ""}).fits);
  MemoryNeed n = Need();
  n.estimated = false;
  n.note = "mfcc.conf: no such file";
  const auto v = CheckMemory(n, 1, {"cpu", 1, "MemAvailable"});
  EXPECT_TRUE(v.fits);
  EXPECT_EQ(v.line, "stage 5 (train): not estimated: mfcc.conf: no such file");
}

TEST(MemoryCheckTest, FormatBytesAndGpuReserve) {
  EXPECT_EQ(FormatBytes(100), "100 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(320ull << 20), "320.0 MiB");
  EXPECT_EQ(GpuMemory(3, 80ll << 30).bytes, 79ull << 30);
  EXPECT_EQ(GpuMemory(3, 80ll << 30).device, "cuda:3");
  EXPECT_EQ(GpuMemory(0, 512ll << 20).bytes, 0u);
}

// The least of what the kernel offers: here RLIMIT_AS (ulimit -v), lowered to VmSize + 256 MiB.
TEST(MemoryCheckTest, AddressSpaceLimitIsTheBound) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space and needs more while the limit holds";
#endif
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_AS, &saved), 0);
  std::uint64_t vm_kb = 0;
  {
    std::ifstream status("/proc/self/status");
    std::string key;
    while (status >> key) {
      if (key == "VmSize:") {
        status >> vm_kb;
        break;
      }
    }
  }
  ASSERT_GT(vm_kb, 0u);
  const std::uint64_t limit = vm_kb * 1024 + (256ull << 20);
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < limit) GTEST_SKIP() << "hard RLIMIT_AS below the test's";
  rlimit lowered = saved;
  lowered.rlim_cur = limit;
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &lowered), 0);
  const DeviceMemory m = AvailableCpuMemory(1);
  const DeviceMemory shared = AvailableCpuMemory(2);
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &saved), 0);
  EXPECT_EQ(m.source, "RLIMIT_AS (ulimit -v)");
  EXPECT_GT(m.bytes, 200ull << 20);  // VmSize grew little between the two readings
  EXPECT_LE(m.bytes, 256ull << 20);
  EXPECT_LE(shared.bytes, m.bytes / 2 + (1ull << 20));
}

}  // namespace
}  // namespace asv::recipe
