// LibTorch's exceptions rethrown as asvcpp's errors (torch_errors.h).
#include "asvcpp/train/torch_errors.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <new>
#include <string>

#include "asvcpp/base/error.h"

namespace asv::train {
namespace {

// What RethrowAsAsvError makes of the exception `fn` throws: (type, message).
template <class Fn>
std::pair<std::string, std::string> Rethrown(Fn fn) {
  try {
    try {
      fn();
    } catch (...) {
      RethrowAsAsvError("stage 5 (train)", "cpu", "lower network.minibatch_size");
    }
  } catch (const StageError& e) {
    return {"StageError", e.what()};
  } catch (const DataError& e) {
    return {"DataError", e.what()};
  } catch (const std::exception& e) {
    return {"other", e.what()};
  }
  return {"none", ""};
}

TEST(TorchErrorsTest, AFailedCpuAllocationIsAnOutOfMemoryWithAdvice) {
  // 2^50 floats (4 PiB): no machine has them, so LibTorch's CPU allocator fails.
  const auto [type, message] = Rethrown([] { (void)torch::empty({std::int64_t{1} << 50}); });
  EXPECT_EQ(type, "StageError");
  EXPECT_EQ(message.rfind("stage 5 (train) ran out of memory on cpu: ", 0), 0u) << message;
  EXPECT_NE(message.find("; lower network.minibatch_size"), std::string::npos) << message;
  EXPECT_TRUE(IsOutOfMemoryText(message));
}

TEST(TorchErrorsTest, OtherLibTorchErrorsLoseTheirBacktrace) {
  const auto [type, message] = Rethrown([] { (void)torch::ones({2, 3}).matmul(torch::ones({2, 3})); });
  EXPECT_EQ(type, "StageError");
  EXPECT_NE(message.find("cannot be multiplied"), std::string::npos) << message;
  EXPECT_EQ(message.find("Exception raised from"), std::string::npos) << message;  // LibTorch's C++ backtrace
  EXPECT_EQ(message.find("frame #"), std::string::npos) << message;
  EXPECT_FALSE(IsOutOfMemoryText(message));
}

TEST(TorchErrorsTest, BadAllocIsAnOutOfMemory) {
  const auto [type, message] = Rethrown([] { throw std::bad_alloc(); });
  EXPECT_EQ(type, "StageError");
  EXPECT_EQ(message,
            "stage 5 (train) ran out of memory on cpu: an allocation failed (std::bad_alloc); lower "
            "network.minibatch_size");
}

TEST(TorchErrorsTest, AsvcppErrorsPassUnchanged) {
  const auto [type, message] = Rethrown([] { throw DataError("wav.scp:3: no such file"); });
  EXPECT_EQ(type, "DataError");
  EXPECT_EQ(message, "wav.scp:3: no such file");
}

TEST(TorchErrorsTest, OutOfMemoryTexts) {
  EXPECT_TRUE(IsOutOfMemoryText("CUDA out of memory. Tried to allocate 2.00 GiB"));
  EXPECT_TRUE(IsOutOfMemoryText("DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 bytes"));
  EXPECT_TRUE(IsOutOfMemoryText("asvcpp caching CPU allocator: not enough memory"));
  EXPECT_FALSE(IsOutOfMemoryText("Expected more than 1 value per channel when training"));
}

}  // namespace
}  // namespace asv::train
