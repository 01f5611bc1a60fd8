#include "asvcpp/train/onednn_cache.h"

#include <dlfcn.h>
#include <malloc.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace asv::train {
namespace {

// oneDNN reads its capacity once per process, so each case runs in a child process that
// re-executes this test binary (GoogleTest's "threadsafe" death-test style: the child starts
// afresh, with no primitive created yet). The child prints the capacity oneDNN reports.
class OneDnnPrimitiveCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    // Only a shared oneDNN (Debian's LibTorch) can be asked for its capacity; the torch wheel
    // links it statically with hidden symbols. Looked up without calling it: the call would
    // create the cache in the child before the case under test.
    if (::dlsym(RTLD_DEFAULT, "dnnl_get_primitive_cache_capacity") == nullptr) {
      GTEST_SKIP() << "this LibTorch's oneDNN does not export dnnl_get_primitive_cache_capacity";
    }
    if (std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY") != nullptr ||
        std::getenv("DNNL_PRIMITIVE_CACHE_CAPACITY") != nullptr) {
      GTEST_SKIP() << "the environment sets oneDNN's primitive cache capacity already";
    }
  }
};

// Runs a convolution (LibTorch sends float32 CPU convolutions of this size to oneDNN), then
// prints the capacity and exits 0.
[[noreturn]] void ConvolveAndReport() {
  torch::NoGradGuard no_grad;
  const auto y = torch::conv1d(torch::randn({4, 30, 300}), torch::randn({64, 30, 5}), {}, 1, 2);
  const auto capacity = OneDnnPrimitiveCacheCapacity();
  std::fprintf(stderr, "shape %ld, capacity %d\n", static_cast<long>(y.size(2)), capacity ? *capacity : -1);
  std::exit(0);
}

TEST_F(OneDnnPrimitiveCacheTest, BoundGivesTheCacheAsvrunsCapacity) {
  EXPECT_EXIT(
      {
        if (!BoundOneDnnPrimitiveCache()) std::exit(2);
        ConvolveAndReport();
      },
      ::testing::ExitedWithCode(0),
      "shape 300, capacity " + std::to_string(kOneDnnPrimitiveCacheCapacity) + "\n");
  EXPECT_EXIT(
      {
        if (!BoundOneDnnPrimitiveCache(0)) std::exit(2);
        ConvolveAndReport();
      },
      ::testing::ExitedWithCode(0), "shape 300, capacity 0\n");
}

TEST_F(OneDnnPrimitiveCacheTest, WithoutTheBoundOneDnnKeepsItsDefault) {
  // What the bound changes: oneDNN's own default is a cache of 1,024 primitives.
  EXPECT_EXIT(ConvolveAndReport(), ::testing::ExitedWithCode(0), "shape 300, capacity 1024\n");
}

TEST_F(OneDnnPrimitiveCacheTest, TheUsersSettingWins) {
  EXPECT_EXIT(
      {
        ::setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "7", 1);
        if (BoundOneDnnPrimitiveCache()) std::exit(2);
        ConvolveAndReport();
      },
      ::testing::ExitedWithCode(0), "capacity 7\n");
  EXPECT_EXIT(
      {
        ::setenv("DNNL_PRIMITIVE_CACHE_CAPACITY", "5", 1);
        if (BoundOneDnnPrimitiveCache(0)) std::exit(2);
        ConvolveAndReport();
      },
      ::testing::ExitedWithCode(0), "capacity 5\n");
}

TEST(OneDnnPrimitiveCache, ClearEmptiesTheCacheAndKeepsItsCapacity) {
  // The number of cached primitives is asked from oneDNN's internal
  // dnnl::impl::get_primitive_cache_size(int*) (exported by Debian's libdnnl.so.2).
  using GetSize = int (*)(int*);
  void* symbol = ::dlsym(RTLD_DEFAULT, "_ZN4dnnl4impl24get_primitive_cache_sizeEPi");
  if (!OneDnnPrimitiveCacheCapacity()) {
    EXPECT_FALSE(ClearOneDnnPrimitiveCache());  // nothing to call: says so
    GTEST_SKIP() << "this LibTorch's oneDNN does not export its cache functions";
  }
  if (symbol == nullptr) GTEST_SKIP() << "this oneDNN does not export get_primitive_cache_size";
  const auto size = [&] {
    int n = -1;
    EXPECT_EQ(reinterpret_cast<GetSize>(symbol)(&n), 0);
    return n;
  };
  const int capacity = *OneDnnPrimitiveCacheCapacity();
  if (capacity < 2) GTEST_SKIP() << "the environment sets a cache of " << capacity << " primitives";
  {
    const OneDnnPrimitiveCachePhase phase;
    torch::NoGradGuard no_grad;
    for (const std::int64_t frames : {300, 301}) {
      const auto y = torch::conv1d(torch::randn({4, 30, frames}), torch::randn({64, 30, 5}), {}, 1, 2);
      ASSERT_EQ(y.size(2), frames);
    }
    EXPECT_GE(size(), 2);  // a convolution primitive for each length at least
  }
  EXPECT_EQ(size(), 0);
  EXPECT_EQ(OneDnnPrimitiveCacheCapacity(), capacity);
  EXPECT_TRUE(ClearOneDnnPrimitiveCache());  // an empty cache again
  EXPECT_EQ(size(), 0);
}

// ideep's cache of convolution descriptors, measured as heap memory (glibc's count of bytes in
// use) that stays after convolutions of 300 new lengths; oneDNN's own cache is off in the child
// (capacity 0), so only ideep's descriptors can stay. Prints the kilobytes kept, exits 0 when
// they are below `max_kb` and above `min_kb`, 3 otherwise.
[[noreturn]] void ConvolveManyShapesAndReport(long min_kb, long max_kb) {
  torch::NoGradGuard no_grad;
  const auto weight = torch::randn({64, 30, 5});
  const auto in_use = [] {
    const auto info = ::mallinfo2();
    return static_cast<long>((info.uordblks + info.hblkhd) / 1024);
  };
  torch::conv1d(torch::randn({2, 30, 200}), weight);  // LibTorch's and oneDNN's one-time state
  const long before = in_use();
  for (std::int64_t frames = 201; frames <= 500; ++frames) torch::conv1d(torch::randn({2, 30, frames}), weight);
  const long kept = in_use() - before;
  std::fprintf(stderr, "kept %ld KB\n", kept);
  std::exit(kept > min_kb && kept < max_kb ? 0 : 3);
}

class IdeepCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    if (!torch::hasMKLDNN()) GTEST_SKIP() << "this LibTorch runs convolutions without oneDNN";
    for (const char* name : {"LRU_CACHE_CAPACITY", "ONEDNN_PRIMITIVE_CACHE_CAPACITY", "DNNL_PRIMITIVE_CACHE_CAPACITY"}) {
      if (std::getenv(name) != nullptr) GTEST_SKIP() << "the environment sets " << name;
    }
  }
};

TEST_F(IdeepCacheTest, BoundKeepsFewDescriptors) {
  // Bounded to 4 entries: the 300 lengths keep at most a few descriptors (~12 KB each).
  EXPECT_EXIT(
      {
        if (!BoundOneDnnPrimitiveCache(0) || !BoundIdeepCache(4)) std::exit(2);
        ConvolveManyShapesAndReport(-1, 1024);
      },
      ::testing::ExitedWithCode(0), "kept -?[0-9]+ KB");
}

TEST_F(IdeepCacheTest, WithoutTheBoundEveryShapeStays) {
  // What the bound changes: ideep's default of 1,024 entries keeps a descriptor for each of
  // the 300 lengths (~3.6 MB), although oneDNN caches no primitive.
  EXPECT_EXIT(
      {
        if (!BoundOneDnnPrimitiveCache(0)) std::exit(2);
        ConvolveManyShapesAndReport(2048, 1L << 20);
      },
      ::testing::ExitedWithCode(0), "kept [0-9]+ KB");
}

TEST_F(IdeepCacheTest, TheUsersSettingWins) {
  EXPECT_EXIT(
      {
        ::setenv("LRU_CACHE_CAPACITY", "1024", 1);
        if (BoundIdeepCache(4) || !BoundOneDnnPrimitiveCache(0)) std::exit(2);
        ConvolveManyShapesAndReport(2048, 1L << 20);
      },
      ::testing::ExitedWithCode(0), "kept [0-9]+ KB");
}

TEST(OneDnnPrimitiveCache, NegativeCapacityIsRejected) {
  EXPECT_THROW(BoundOneDnnPrimitiveCache(-1), std::invalid_argument);
  EXPECT_THROW(BoundIdeepCache(-1), std::invalid_argument);
}

}  // namespace
}  // namespace asv::train
