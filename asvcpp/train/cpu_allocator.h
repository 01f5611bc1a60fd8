// A caching allocator for LibTorch's large CPU tensors during training and extraction.
//
// Why: LibTorch's default CPU allocator is malloc. A training step of StandardNet allocates and
// frees the same set of activation and gradient tensors (tens to hundreds of MB each) again and
// again. glibc serves blocks above its mmap threshold (at most 32 MiB) with a fresh mmap every
// time, so the kernel zero-fills every page of them on every step, and keeps smaller freed blocks
// in its heap, where varying clip lengths fragment it (measurements: tools/bench/README.md,
// "Measurements behind the CPU memory bounds"). This allocator keeps freed blocks of >= 1 MiB and
// hands them out again (best fit within 2x the request), allocating new ones with mmap in
// 2 MiB-aligned, transparent-huge-page advised regions; smaller requests go to LibTorch's default
// allocator. The memory it keeps is bounded: when a freed block makes the cached bytes exceed
// max(kMinCacheBytes, 2 x the peak of the bytes in use), the blocks unused for longest are
// unmapped. (Serving each request from a block within 2x means the blocks one step needs in turn
// fit in twice its peak; a bound of 1x would unmap and map blocks again on every step.) The same
// idea as PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp), without block
// splitting.
//
//   {
//     asv::train::CachingCpuAllocatorScope scope;  // GetCPUAllocator() is the caching one
//     ... train ...
//   }  // default allocator again; cached free blocks unmapped
//
// Scopes nest and may be created by several objects (each Trainer holds one); the allocator is
// installed while at least one scope is alive. Work with other shapes inside a scope (validation
// and embedding extraction between training epochs) runs in a CpuAllocatorPhase: the training
// steps' cached blocks are unmapped while it runs and mapped again, with the same sizes, when it
// ends; the blocks mapped for the phase are unmapped then, so that blocks cut for whole-utterance
// batches do not stay cached through the next epoch. Tensors that outlive every scope are freed by
// it directly (unmapped) when LibTorch releases them. Thread-safe (one mutex; LibTorch allocates a
// few hundred large blocks per training step). A request the kernel cannot map even after the
// cache is given back throws c10::Error, as LibTorch's own allocator does. No LibTorch in this
// header.
#pragma once

#include <cstddef>
#include <cstdint>

namespace asv::train {

/// Byte counts and event counters of the caching CPU allocator since the process started.
struct CpuAllocatorStats {
  std::size_t in_use_bytes = 0;       ///< large blocks handed out and not yet freed
  std::size_t peak_in_use_bytes = 0;  ///< maximum of in_use_bytes
  /// maximum of in_use_bytes in the current phase: since the last ReleaseCachedCpuMemory(), and
  /// back to its earlier value (or in_use_bytes, if larger) when a CpuAllocatorPhase ends
  std::size_t phase_peak_in_use_bytes = 0;
  std::size_t cached_bytes = 0;       ///< freed large blocks kept for reuse
  std::uint64_t allocations = 0;      ///< large requests served
  std::uint64_t cache_hits = 0;       ///< ... of them from a cached block
  std::uint64_t maps = 0;             ///< new blocks mapped from the kernel
  std::uint64_t unmaps = 0;           ///< blocks given back to the kernel
};

/// While alive (and while any other scope is), LibTorch's CPU allocator (c10::GetCPUAllocator,
/// used by torch::empty and every CPU operator) is the caching allocator. The first scope
/// installs it and remembers the allocator it replaces; the last one restores that allocator
/// and unmaps the cached free blocks. Not for use while another thread creates tensors at the
/// moment the first scope starts or the last one ends (the trainer creates it before its
/// loader threads and ends it after they have joined).
///
/// Throws StageError if LibTorch keeps a different allocator after installation (another
/// library registered one with a higher priority).
class CachingCpuAllocatorScope {
 public:
  CachingCpuAllocatorScope();
  ~CachingCpuAllocatorScope();
  CachingCpuAllocatorScope(const CachingCpuAllocatorScope&) = delete;
  CachingCpuAllocatorScope& operator=(const CachingCpuAllocatorScope&) = delete;
};

/// While alive, marks work whose tensor shapes differ from those of the work around it (validation
/// or embedding extraction on whole utterances between training epochs). Its constructor unmaps
/// the cached free blocks, so that the phase does not keep the surrounding work's blocks resident
/// beside its own, and remembers their sizes; its destructor unmaps the cached blocks mapped
/// during the phase and maps blocks of the remembered sizes again (not resident until written),
/// so that the work that follows finds the cache it had (the training steps' blocks, cut for the
/// largest minibatch, fit every clip length; blocks cut for whatever lengths come first would
/// not), and returns the cache's bound to the peak before the phase (or to the bytes now in use,
/// if more). It then gives the malloc heap's free pages back (TrimMallocHeap): the phase's smaller
/// allocations, freed below ones still alive, would stay resident. Phases nest.
/// Without a live CachingCpuAllocatorScope only the trim remains (no block is cached then).
/// Never throws; when the kernel refuses a block at the end, the rest is left out.
class CpuAllocatorPhase {
 public:
  CpuAllocatorPhase();
  ~CpuAllocatorPhase();
  CpuAllocatorPhase(const CpuAllocatorPhase&) = delete;
  CpuAllocatorPhase& operator=(const CpuAllocatorPhase&) = delete;

 private:
  std::uint64_t token_;
};

/// Current counters (a consistent snapshot).
CpuAllocatorStats GetCpuAllocatorStats();

/// Unmaps every cached free block now (blocks in use stay) and starts a new phase: from now on the
/// cache's bound, max(kMinCacheBytes, 2 x phase_peak_in_use_bytes), follows the peak of the bytes
/// in use from the current in_use_bytes on, so that a phase with a larger working set (validation
/// on whole utterances) does not let the next one (training on clips) keep twice that cached.
/// Returns the bytes given back. Thread-safe.
std::size_t ReleaseCachedCpuMemory();

/// Gives the free memory of the C library's malloc heaps back to the kernel: glibc's
/// malloc_trim(0), which releases the whole free pages anywhere in each arena (glibc >= 2.8), not
/// only at its top, where free() alone shrinks a heap. Costs a walk over the free chunks and a
/// madvise per chunk given back (milliseconds); pages given back cost a page fault when used again.
/// Returns true if memory was released; false, doing nothing, where the C library is not glibc.
/// Never throws. Thread-safe (glibc locks each arena in turn).
bool TrimMallocHeap();

/// Requests of at least this many bytes are cached; smaller ones go to LibTorch's default
/// allocator (glibc keeps small blocks well).
inline constexpr std::size_t kMinCachedRequestBytes = std::size_t{1} << 20;

/// The cache may always keep this many free bytes, however small the peak of the bytes in use.
inline constexpr std::size_t kMinCacheBytes = std::size_t{256} << 20;

/// The block size a request of `bytes` (>= kMinCachedRequestBytes) is rounded up to: four size
/// classes per power of two (at most 25 % more than asked), a multiple of 2 MiB from 8 MiB on
/// (huge-page granularity). Exposed for tests.
std::size_t CachedBlockBytes(std::size_t bytes);

}  // namespace asv::train
