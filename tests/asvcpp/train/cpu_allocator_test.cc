// The caching CPU allocator (cpu_allocator.h): size classes, installation and restoration of
// LibTorch's CPU allocator, reuse of freed blocks, best fit within 2x, the bound on cached bytes
// (least recently used blocks first) and its phases, tensors that outlive the scope, raw
// allocations, and the malloc heap given back when a phase ends.
#include "asvcpp/train/cpu_allocator.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace asv::train {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// A float tensor of exactly `bytes` bytes (a multiple of 4). Memory is mapped lazily, so large
// tensors cost nothing until written.
torch::Tensor Bytes(std::size_t bytes) { return torch::empty({static_cast<std::int64_t>(bytes / 4)}); }

// Allocates `count` tensors of `bytes` bytes, all alive at once, then frees them in order.
void Hold(int count, std::size_t bytes) {
  std::vector<torch::Tensor> tensors;
  for (int i = 0; i < count; ++i) tensors.push_back(Bytes(bytes));
}

TEST(CpuAllocatorTest, RoundsToFourSizeClassesPerOctave) {
  EXPECT_EQ(CachedBlockBytes(kMiB), kMiB);
  EXPECT_EQ(CachedBlockBytes(kMiB + 1), kMiB + kMiB / 4);
  EXPECT_EQ(CachedBlockBytes(2 * kMiB - 1), 2 * kMiB);
  EXPECT_EQ(CachedBlockBytes(3 * kMiB), 3 * kMiB);
  EXPECT_EQ(CachedBlockBytes(9 * kMiB), 10 * kMiB);
  // A [64, 512, 200] float activation (26,214,400 bytes = 25 MiB): octave 16 MiB, step 4 MiB.
  EXPECT_EQ(CachedBlockBytes(64 * 512 * 200 * 4), 28 * kMiB);
  for (std::size_t bytes = kMiB; bytes < 1024 * kMiB; bytes = bytes * 9 / 7 + 12345) {
    const std::size_t block = CachedBlockBytes(bytes);
    EXPECT_GE(block, bytes);
    EXPECT_LE(block, bytes + bytes / 4) << bytes;
    EXPECT_EQ(block % 4096, 0u) << bytes;
    if (bytes >= 8 * kMiB) {
      EXPECT_EQ(block % (2 * kMiB), 0u) << bytes;
    }
  }
}

TEST(CpuAllocatorTest, InstallsWhileAScopeLivesAndRestoresTheDefault) {
  c10::Allocator* before = c10::GetCPUAllocator();
  {
    CachingCpuAllocatorScope outer;
    c10::Allocator* installed = c10::GetCPUAllocator();
    EXPECT_NE(installed, before);
    {
      CachingCpuAllocatorScope inner;
      EXPECT_EQ(c10::GetCPUAllocator(), installed);
    }
    EXPECT_EQ(c10::GetCPUAllocator(), installed);  // still one scope alive
  }
  EXPECT_EQ(c10::GetCPUAllocator(), before);
  EXPECT_EQ(GetCpuAllocatorStats().cached_bytes, 0u);
}

TEST(CpuAllocatorTest, ReusesFreedBlocksAndKeepsSmallRequestsOut) {
  CachingCpuAllocatorScope scope;
  const auto start = GetCpuAllocatorStats();
  void* first = nullptr;
  {
    auto t = Bytes(8 * kMiB);
    first = t.data_ptr();
    const auto s = GetCpuAllocatorStats();
    EXPECT_EQ(s.allocations - start.allocations, 1u);
    EXPECT_EQ(s.maps - start.maps, 1u);
    EXPECT_EQ(s.in_use_bytes - start.in_use_bytes, 8 * kMiB);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % (2 * kMiB), 0u);  // huge-page aligned
  }
  EXPECT_EQ(GetCpuAllocatorStats().cached_bytes - start.cached_bytes, 8 * kMiB);
  {
    auto t = Bytes(7 * kMiB);  // class 7 MiB; the cached 8 MiB block is the best fit within 2x
    EXPECT_EQ(t.data_ptr(), first);
    t.fill_(2.5f);
    EXPECT_FLOAT_EQ(t.sum().item<float>(), 2.5f * static_cast<float>(7 * kMiB / 4));
    const auto s = GetCpuAllocatorStats();
    EXPECT_EQ(s.cache_hits - start.cache_hits, 1u);
    EXPECT_EQ(s.maps - start.maps, 1u);
  }
  {
    auto t = Bytes(3 * kMiB);  // the 8 MiB block would waste more than half: a new block
    EXPECT_NE(t.data_ptr(), first);
    EXPECT_EQ(GetCpuAllocatorStats().maps - start.maps, 2u);
  }
  {
    auto small = torch::ones({1000});  // 4 kB: LibTorch's default allocator
    EXPECT_EQ(GetCpuAllocatorStats().allocations - start.allocations, 3u);
    EXPECT_FLOAT_EQ(small.sum().item<float>(), 1000.0f);
  }
  EXPECT_EQ(ReleaseCachedCpuMemory(), 8 * kMiB + 3 * kMiB);
  EXPECT_EQ(GetCpuAllocatorStats().cached_bytes, 0u);
}

TEST(CpuAllocatorTest, BoundsTheCacheToTwiceThePeakLeastRecentlyUsedFirst) {
  CachingCpuAllocatorScope scope;
  ReleaseCachedCpuMemory();
  const auto start = GetCpuAllocatorStats();
  // The cache may hold max(kMinCacheBytes, 2 x peak bytes in use since the last release).
  ASSERT_EQ(start.phase_peak_in_use_bytes, start.in_use_bytes);
  ASSERT_EQ(start.in_use_bytes, 0u);
  Hold(3, 64 * kMiB);  // peak 192 MiB: limit 384 MiB; cached 192 MiB
  Hold(6, 30 * kMiB);  // class 32 MiB; a 64 MiB block would waste more than half: 6 new blocks
  auto s = GetCpuAllocatorStats();
  EXPECT_EQ(s.cached_bytes, 384 * kMiB);
  EXPECT_EQ(s.unmaps - start.unmaps, 0u);
  Hold(12, 15 * kMiB);  // class 16 MiB, 12 new blocks: 576 MiB cached > 384 MiB
  s = GetCpuAllocatorStats();
  EXPECT_EQ(s.cached_bytes, 384 * kMiB) << "the three 64 MiB blocks, freed first, are unmapped";
  EXPECT_EQ(s.unmaps - start.unmaps, 3u);
  EXPECT_EQ(s.maps - start.maps, 21u);
  EXPECT_EQ(s.phase_peak_in_use_bytes, 192 * kMiB);
  EXPECT_EQ(s.peak_in_use_bytes, std::max<std::size_t>(start.peak_in_use_bytes, 192 * kMiB));
  Hold(1, 30 * kMiB);  // a cached 32 MiB block
  Hold(1, 60 * kMiB);  // no 64 MiB block left: mapped
  s = GetCpuAllocatorStats();
  EXPECT_EQ(s.maps - start.maps, 22u);
  EXPECT_EQ(s.cache_hits - start.cache_hits, 1u);
  ReleaseCachedCpuMemory();
}

TEST(CpuAllocatorTest, ReleaseRestartsThePeakThatBoundsTheCache) {
  CachingCpuAllocatorScope scope;
  ReleaseCachedCpuMemory();
  const auto start = GetCpuAllocatorStats();
  // A validation-like phase: a 384 MiB working set, so the bound is 768 MiB until the release.
  Hold(1, 384 * kMiB);
  auto s = GetCpuAllocatorStats();
  EXPECT_EQ(s.phase_peak_in_use_bytes, 384 * kMiB);
  EXPECT_EQ(s.cached_bytes, 384 * kMiB);
  auto survivor = Bytes(2 * kMiB);  // in use across the release: the new phase starts from it
  EXPECT_EQ(ReleaseCachedCpuMemory(), 384 * kMiB);
  s = GetCpuAllocatorStats();
  EXPECT_EQ(s.phase_peak_in_use_bytes, 2 * kMiB);
  EXPECT_GE(s.peak_in_use_bytes, 384 * kMiB);  // the lifetime peak is kept
  // A training-like phase: peak 2 + 192 MiB, bound 388 MiB. Blocks of three sizes (480 MiB) would
  // all stay cached under the old bound of 768 MiB; under the new one two 64 MiB blocks go.
  Hold(3, 64 * kMiB);
  Hold(6, 30 * kMiB);  // class 32 MiB: new blocks (a 64 MiB one would waste more than half)
  Hold(6, 15 * kMiB);  // class 16 MiB: new blocks
  s = GetCpuAllocatorStats();
  EXPECT_EQ(s.phase_peak_in_use_bytes, 194 * kMiB);
  EXPECT_EQ(s.maps - start.maps, 2u + 3u + 6u + 6u);  // 384 MiB and the survivor, then the phase
  EXPECT_EQ(s.unmaps - start.unmaps, 1u + 2u) << "the 384 MiB block at the release, two 64 MiB blocks now";
  EXPECT_EQ(s.cached_bytes, 64 * kMiB + 6 * 32 * kMiB + 6 * 16 * kMiB);
  survivor = torch::Tensor();
  ReleaseCachedCpuMemory();
}

TEST(CpuAllocatorTest, APhaseSetsTheCacheAsideAndGivesItBackWhenItEnds) {
  CachingCpuAllocatorScope scope;
  ReleaseCachedCpuMemory();
  const auto start = GetCpuAllocatorStats();
  ASSERT_EQ(start.in_use_bytes, 0u);
  Hold(3, 64 * kMiB);  // the training steps' blocks: phase peak 192 MiB
  Hold(1, 30 * kMiB);  // class 32 MiB (a 64 MiB block would waste more than half), used last
  {
    const CpuAllocatorPhase validation;
    auto s = GetCpuAllocatorStats();
    EXPECT_EQ(s.cached_bytes, 0u) << "the training blocks are not resident during the phase";
    EXPECT_EQ(s.unmaps - start.unmaps, 4u);
    Hold(2, 192 * kMiB);  // phase peak 384 MiB
    Hold(3, 60 * kMiB);   // class 64 MiB, new blocks: a 192 MiB block would waste more than half
    s = GetCpuAllocatorStats();
    EXPECT_EQ(s.phase_peak_in_use_bytes, 384 * kMiB);
    EXPECT_EQ(s.cached_bytes, 2 * 192 * kMiB + 3 * 64 * kMiB);
    EXPECT_EQ(s.maps - start.maps, 4u + 5u);
  }
  auto s = GetCpuAllocatorStats();
  EXPECT_EQ(s.cached_bytes, 3 * 64 * kMiB + 32 * kMiB) << "the phase's blocks are gone, the earlier sizes back";
  EXPECT_EQ(s.unmaps - start.unmaps, 4u + 5u);
  EXPECT_EQ(s.maps - start.maps, 4u + 5u + 4u);
  EXPECT_EQ(s.phase_peak_in_use_bytes, 192 * kMiB);
  Hold(3, 64 * kMiB);  // the training steps find blocks of their sizes again
  Hold(1, 17 * kMiB);  // class 20 MiB: the restored 32 MiB block
  s = GetCpuAllocatorStats();
  EXPECT_EQ(s.maps - start.maps, 13u);
  EXPECT_EQ(s.cache_hits - start.cache_hits, 4u);
  {
    // The least recently used order is kept: over the bound, the 64 MiB blocks go before the
    // 32 MiB one (used last).
    const CpuAllocatorPhase extraction;
    EXPECT_EQ(GetCpuAllocatorStats().phase_peak_in_use_bytes, 192 * kMiB);
  }
  Hold(1, 192 * kMiB);  // new; freed: 416 MiB cached > max(256, 2 x 192) MiB: one 64 MiB block goes
  s = GetCpuAllocatorStats();
  EXPECT_EQ(s.cached_bytes, 2 * 64 * kMiB + 32 * kMiB + 192 * kMiB);
  Hold(1, 17 * kMiB);
  EXPECT_EQ(GetCpuAllocatorStats().cache_hits - start.cache_hits, 5u) << "the 32 MiB block stayed";
  ReleaseCachedCpuMemory();
}

TEST(CpuAllocatorTest, BlocksInUseAcrossAPhaseStayWithTheirOwners) {
  CachingCpuAllocatorScope scope;
  ReleaseCachedCpuMemory();
  const auto start = GetCpuAllocatorStats();
  torch::Tensor weights = Bytes(4 * kMiB);  // mapped before the phase, in use throughout
  torch::Tensor result;
  {
    const CpuAllocatorPhase extraction;
    result = Bytes(8 * kMiB);  // mapped in the phase, still in use when it ends
  }
  auto s = GetCpuAllocatorStats();
  EXPECT_EQ(s.in_use_bytes - start.in_use_bytes, 12 * kMiB);
  EXPECT_EQ(s.unmaps - start.unmaps, 0u);
  result.fill_(1.0f);
  weights.fill_(2.0f);
  EXPECT_FLOAT_EQ(result.sum().item<float>(), static_cast<float>(2 * kMiB));
  EXPECT_FLOAT_EQ(weights.sum().item<float>(), static_cast<float>(2 * kMiB));
  result = torch::Tensor();
  weights = torch::Tensor();
  EXPECT_EQ(GetCpuAllocatorStats().cached_bytes, 12 * kMiB);
  ReleaseCachedCpuMemory();
}

TEST(CpuAllocatorTest, TensorsOutlivingTheScopeAreUnmappedWhenFreed) {
  torch::Tensor survivor;
  std::uint64_t unmaps = 0;
  {
    CachingCpuAllocatorScope scope;
    survivor = Bytes(4 * kMiB);
    unmaps = GetCpuAllocatorStats().unmaps;
  }
  const auto in_use = GetCpuAllocatorStats().in_use_bytes;
  survivor = torch::Tensor();
  const auto s = GetCpuAllocatorStats();
  EXPECT_EQ(in_use - s.in_use_bytes, 4 * kMiB);
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.unmaps - unmaps, 1u);
}

TEST(CpuAllocatorTest, RawAllocationsOfBothSizesComeBack) {
  CachingCpuAllocatorScope scope;
  ReleaseCachedCpuMemory();
  c10::Allocator* allocator = c10::GetCPUAllocator();
  void* large = allocator->raw_allocate(2 * kMiB);
  void* small = allocator->raw_allocate(100);
  ASSERT_NE(large, nullptr);
  ASSERT_NE(small, nullptr);
  static_cast<char*>(small)[99] = 1;
  allocator->raw_deallocate(small);  // not ours: LibTorch's default deleter
  allocator->raw_deallocate(large);
  EXPECT_EQ(GetCpuAllocatorStats().cached_bytes, 2 * kMiB);
  ReleaseCachedCpuMemory();
}

// Resident memory of this process in bytes (/proc/self/statm, second field, in pages).
std::size_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t size_pages = 0;
  std::size_t resident_pages = 0;
  statm >> size_pages >> resident_pages;
  return resident_pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

TEST(CpuAllocatorTest, APhaseGivesTheHeapsFreedPagesBackWhenItEnds) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "TrimMallocHeap needs glibc's malloc_trim";
#endif
  TrimMallocHeap();  // whatever earlier tests left
  // 2,048 blocks of 64 KiB (below glibc's mmap threshold: they come from the heap, as a phase's
  // allocations under the threshold do), written; then every other one freed: 64 MiB of free chunks, each between
  // two blocks still alive, which free() cannot give back (not at the top of the heap).
  constexpr std::size_t kBlock = std::size_t{64} << 10;
  std::vector<char*> blocks;
  for (int i = 0; i < 2048; ++i) {
    blocks.push_back(static_cast<char*>(std::malloc(kBlock)));
    ASSERT_NE(blocks.back(), nullptr);
    std::memset(blocks.back(), i & 0xff, kBlock);
  }
  for (std::size_t i = 0; i < blocks.size(); i += 2) std::free(blocks[i]);
  const std::size_t freed_but_resident = ResidentBytes();
  { const CpuAllocatorPhase phase; }  // no caching scope: only the trim
  const std::size_t after_phase = ResidentBytes();
  // Each free chunk gives back its whole pages: 15 of the 16 of a 64 KiB block or more.
  EXPECT_GT(freed_but_resident, after_phase + 56 * kMiB) << freed_but_resident << " -> " << after_phase;
  for (std::size_t i = 1; i < blocks.size(); i += 2) {
    EXPECT_EQ(blocks[i][kBlock - 1], static_cast<char>(i & 0xff));  // the blocks alive are intact
    std::free(blocks[i]);
  }
}

TEST(CpuAllocatorTest, TrainingArithmeticIsUnchanged) {
  torch::manual_seed(3);
  const auto a = torch::randn({512, 1024});
  const auto b = torch::randn({1024, 700});
  const auto reference = torch::matmul(a, b);
  CachingCpuAllocatorScope scope;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(torch::equal(torch::matmul(a, b), reference));
}

}  // namespace
}  // namespace asv::train
