#include "asvcpp/train/cpu_allocator.h"

#include <sys/mman.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include "asvcpp/base/error.h"
#include "asvcpp/compat/torch_compat.h"

namespace asv::train {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

// Maps `bytes` (a multiple of the page size) of zeroed memory; 2 MiB aligned and advised for
// transparent huge pages when the block spans at least one huge page, so that the kernel faults
// it in with 512x fewer faults and the TLB holds it in fewer entries.
void* MapBlock(std::size_t bytes) {
  if (bytes < kHugePage) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  const std::size_t span = bytes + kHugePage;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHugePage - 1) & ~(std::uintptr_t{kHugePage} - 1);
  const std::size_t head = aligned - start;
  const std::size_t tail = span - head - bytes;
  if (head > 0) munmap(raw, head);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  void* p = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
  madvise(p, bytes, MADV_HUGEPAGE);  // advice only: ignored where THP is off
#endif
  return p;
}

class CachingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(std::size_t n) ASV_ALLOCATOR_ALLOCATE_CONST override {
    if (n < kMinCachedRequestBytes) return c10::GetDefaultCPUAllocator()->allocate(n);
    void* p = Get().Take(n);  // via Get(): allocate() is const in LibTorch 1.13
    return {p, p, &FreeBlock, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &RawFree; }

#if ASV_ALLOCATOR_HAS_COPY_DATA
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#endif

  // The one instance; never destroyed, so tensors freed during static destruction still find it.
  static CachingCpuAllocator& Get() {
    static auto* instance = new CachingCpuAllocator();
    return *instance;
  }

  void Activate() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (scopes_++ > 0) return;
    previous_ = c10::GetCPUAllocator();
    c10::SetCPUAllocator(this, /*priority=*/0);
    if (c10::GetCPUAllocator() != this) {
      --scopes_;
      throw StageError(
          "could not install asvcpp's caching CPU allocator: LibTorch keeps another allocator registered with a "
          "higher priority");
    }
  }

  void Deactivate() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--scopes_ > 0) return;
    c10::SetCPUAllocator(previous_, /*priority=*/0);
    ReleaseLocked();
  }

  std::size_t Release() {
    std::lock_guard<std::mutex> lock(mutex_);
    return ReleaseLocked();
  }

  CpuAllocatorStats Stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  // Starts a phase: unmaps the cached blocks (their sizes and map numbers are kept for EndPhase)
  // and returns the phase's token.
  std::uint64_t BeginPhase() {
    std::lock_guard<std::mutex> lock(mutex_);
    Phase phase{next_phase_token_++, stats_.maps, stats_.phase_peak_in_use_bytes, {}};
    for (const auto& block : lru_) {
      phase.saved.push_back({block.bytes, block.map_number});
      Unmap(block.start, block.bytes);
    }
    lru_.clear();
    by_size_.clear();
    stats_.cached_bytes = 0;
    phases_.push_back(std::move(phase));
    return phases_.back().token;
  }

  // Ends the phase `token`: unmaps the cached blocks it mapped, maps blocks of the sizes cached
  // when it began again (untouched, so not resident until used; least recently used order kept)
  // and sets the phase peak back to max(its value before the phase, bytes in use).
  void EndPhase(std::uint64_t token) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto phase = std::find_if(phases_.begin(), phases_.end(), [token](const Phase& p) { return p.token == token; });
    if (phase == phases_.end()) return;
    for (auto it = lru_.begin(); it != lru_.end();) {
      if (it->map_number < phase->first_map) {
        ++it;
        continue;
      }
      stats_.cached_bytes -= it->bytes;
      Unmap(it->start, it->bytes);
      by_size_.erase(it->by_size);
      it = lru_.erase(it);
    }
    for (const auto& saved : phase->saved) {
      void* p = MapBlock(saved.bytes);
      if (p == nullptr) break;  // the cache is an optimisation: the work maps what it needs
      ++stats_.maps;
      lru_.push_back(CachedBlock{p, saved.bytes, saved.map_number, {}});
      lru_.back().by_size = by_size_.emplace(saved.bytes, std::prev(lru_.end()));
      stats_.cached_bytes += saved.bytes;
    }
    stats_.phase_peak_in_use_bytes = std::max(phase->previous_peak, stats_.in_use_bytes);
    phases_.erase(phase);
  }

 private:
  void* Take(std::size_t n) {
    const std::size_t want = CachedBlockBytes(n);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.allocations;
      // Best fit: the smallest cached block that holds the request, if it wastes at most half.
      auto it = by_size_.lower_bound(want);
      if (it != by_size_.end() && it->first / 2 <= n) {
        const std::size_t bytes = it->first;
        void* p = it->second->start;
        const std::uint64_t map_number = it->second->map_number;
        lru_.erase(it->second);
        by_size_.erase(it);
        stats_.cached_bytes -= bytes;
        ++stats_.cache_hits;
        MarkInUse(p, bytes, map_number);
        return p;
      }
    }
    void* p = MapBlock(want);  // outside the lock: the kernel call is the slow part
    if (p == nullptr) {
      // Give the cache back and try once more before failing as LibTorch's default does.
      Release();
      p = MapBlock(want);
      TORCH_CHECK(p != nullptr, "asvcpp caching CPU allocator: not enough memory: you tried to allocate ", n,
                  " bytes (", std::strerror(errno), ")");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    MarkInUse(p, want, stats_.maps++);
    return p;
  }

  void MarkInUse(void* p, std::size_t bytes, std::uint64_t map_number) {
    blocks_.emplace(p, Block{bytes, map_number});
    stats_.in_use_bytes += bytes;
    stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
    stats_.phase_peak_in_use_bytes = std::max(stats_.phase_peak_in_use_bytes, stats_.in_use_bytes);
  }

  // Returns true if `p` was one of our blocks.
  bool Give(void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(p);
    if (it == blocks_.end()) return false;
    const auto [bytes, map_number] = it->second;
    blocks_.erase(it);
    stats_.in_use_bytes -= bytes;
    if (scopes_ == 0) {
      Unmap(p, bytes);
      return true;
    }
    lru_.push_front(CachedBlock{p, bytes, map_number, {}});
    lru_.front().by_size = by_size_.emplace(bytes, lru_.begin());
    stats_.cached_bytes += bytes;
    // Keep the cache bounded; the blocks unused for longest go first.
    const std::size_t limit = std::max(kMinCacheBytes, 2 * stats_.phase_peak_in_use_bytes);
    while (stats_.cached_bytes > limit && !lru_.empty()) {
      const CachedBlock& oldest = lru_.back();
      stats_.cached_bytes -= oldest.bytes;
      Unmap(oldest.start, oldest.bytes);
      by_size_.erase(oldest.by_size);
      lru_.pop_back();
    }
    return true;
  }

  std::size_t ReleaseLocked() {
    std::size_t released = 0;
    for (const auto& block : lru_) {
      Unmap(block.start, block.bytes);
      released += block.bytes;
    }
    lru_.clear();
    by_size_.clear();
    stats_.cached_bytes = 0;
    stats_.phase_peak_in_use_bytes = stats_.in_use_bytes;
    return released;
  }

  void Unmap(void* p, std::size_t bytes) {
    munmap(p, bytes);
    ++stats_.unmaps;
  }

  static void FreeBlock(void* p) { Get().Give(p); }

  // raw_allocate() hands out small blocks of the default allocator too; those come back here.
  static void RawFree(void* p) {
    if (!Get().Give(p)) c10::GetDefaultCPUAllocator()->raw_deleter()(p);
  }

  std::mutex mutex_;
  int scopes_ = 0;
  c10::Allocator* previous_ = nullptr;
  struct Block {
    std::size_t bytes;
    std::uint64_t map_number;  // stats_.maps before it was mapped: which phase mapped it
  };
  std::unordered_map<void*, Block> blocks_;  // in use: start -> block
  // Cached blocks, most recently freed first, and the same blocks by size (for best fit).
  struct CachedBlock {
    void* start;
    std::size_t bytes;
    std::uint64_t map_number;
    std::multimap<std::size_t, std::list<CachedBlock>::iterator>::iterator by_size;
  };
  std::list<CachedBlock> lru_;
  struct Phase {
    std::uint64_t token;
    std::uint64_t first_map;      // stats_.maps when it began: blocks numbered from here are its own
    std::size_t previous_peak;    // stats_.phase_peak_in_use_bytes when it began
    struct Saved {
      std::size_t bytes;
      std::uint64_t map_number;
    };
    std::vector<Saved> saved;     // the blocks cached when it began, most recently used first
  };
  std::vector<Phase> phases_;     // live phases, innermost last
  std::uint64_t next_phase_token_ = 0;
  std::multimap<std::size_t, std::list<CachedBlock>::iterator> by_size_;
  CpuAllocatorStats stats_;
};

}  // namespace

std::size_t CachedBlockBytes(std::size_t bytes) {
  std::size_t octave = kMinCachedRequestBytes;
  while (octave <= bytes / 2) octave *= 2;  // largest power of two <= bytes
  const std::size_t step = octave / 4;
  return (bytes + step - 1) / step * step;
}

CachingCpuAllocatorScope::CachingCpuAllocatorScope() { CachingCpuAllocator::Get().Activate(); }

CachingCpuAllocatorScope::~CachingCpuAllocatorScope() { CachingCpuAllocator::Get().Deactivate(); }

CpuAllocatorPhase::CpuAllocatorPhase() : token_(CachingCpuAllocator::Get().BeginPhase()) {}

CpuAllocatorPhase::~CpuAllocatorPhase() {
  CachingCpuAllocator::Get().EndPhase(token_);
  TrimMallocHeap();
}

bool TrimMallocHeap() {
#if defined(__GLIBC__)
  return ::malloc_trim(0) != 0;
#else
  return false;
#endif
}

CpuAllocatorStats GetCpuAllocatorStats() { return CachingCpuAllocator::Get().Stats(); }

std::size_t ReleaseCachedCpuMemory() { return CachingCpuAllocator::Get().Release(); }

}  // namespace asv::train
