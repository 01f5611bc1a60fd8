// The bound on oneDNN's primitive cache for asvcpp's processes.
//
// Why: LibTorch runs CPU convolutions through oneDNN, which compiles a primitive (JIT kernels)
// for every input shape and keeps the last ONEDNN_PRIMITIVE_CACHE_CAPACITY of them (default
// 1024). A convolution primitive of StandardNet's size holds ~2.3 MB (brgconv with its brgemm
// kernels; two 512-channel layers on 85 input lengths: +385 MB), and x-vector work meets new
// shapes all the time: each whole-utterance batch of validation, in-training evaluation and
// embedding extraction, and each training clip length (a training step of StandardNet uses 21
// primitives, so ASVtorch's default 200-400-frame clips need ~4,200 and the cache misses anyway).
// With the default cache, stage 5 of the demo kept ~255 MB more after its first evaluation, and
// with 200-400-frame clips its RSS rose by ~370 MB over three epochs (issue 5, case 6); the bound
// could reach ~2.3 GB. asvrun's capacity of 128 primitives still holds every primitive of a
// fixed-shape training step (StandardNet at 200 frames, 2 threads: 7,800 frames/s with the cache,
// 7,500-7,640 without it: a brgconv primitive takes 3-4 ms to create), and bounds the cache to
// ~300 MB of StandardNet's primitives. Validation and embedding extraction run in a
// OneDnnPrimitiveCachePhase, which empties the cache when it ends where oneDNN is a shared
// library (Debian's LibTorch), so that their whole-utterance shapes do not stay until training
// pushes them out.
//
// LibTorch keeps a second cache beside oneDNN's: ideep, its layer over oneDNN, remembers the
// primitive descriptor of each convolution shape in an LRU cache of LRU_CACHE_CAPACITY entries
// (default 1024), which emptying oneDNN's cache does not touch. A descriptor of StandardNet's
// size holds 56-88 KB (heaptrack of demo stage 5: ~40 MB allocated in the first in-training
// evaluation's dnnl_primitive_desc_iterator_create still live in the next epoch); at the default,
// ~12 KB per shape for a 30-channel convolution until 1,024 shapes (a probe with Debian's
// LibTorch 1.13: +12.6 MB, then flat; +0.3 MB with a capacity of 16; the torch 2.11 wheel ~22 KB
// per shape, +22 MB, and +0.5 MB with 16). A hit only saves creating the descriptor: a fixed-shape
// training step runs as fast with a capacity of 1 (StandardNet, 200 frames, 2 threads: 7,322-
// 7,736 frames/s against 7,425-7,597 at the default), so asvrun bounds it to 64 (BoundIdeepCache).
//
// No LibTorch in this header.
#pragma once

#include <optional>

namespace asv::train {

/// The capacity asvrun gives oneDNN's primitive cache (number of primitives; see the file comment).
inline constexpr int kOneDnnPrimitiveCacheCapacity = 128;

/// Sets the environment variable ONEDNN_PRIMITIVE_CACHE_CAPACITY to `capacity` (number of
/// primitives, >= 0) unless the user has set it or its older name DNNL_PRIMITIVE_CACHE_CAPACITY,
/// whose value then stays in effect. oneDNN reads the variable once, when the process creates its
/// first primitive, so call this at the start of main(), before any LibTorch CPU operator and
/// before other threads start (setenv is not thread-safe). Returns true if it set the variable.
/// Throws std::invalid_argument for a negative capacity.
bool BoundOneDnnPrimitiveCache(int capacity = kOneDnnPrimitiveCacheCapacity);

/// The capacity asvrun gives ideep's LRU cache of convolution descriptors (number of shapes; see
/// the file comment).
inline constexpr int kIdeepCacheCapacity = 64;

/// Sets the environment variable LRU_CACHE_CAPACITY (read by the ideep inside LibTorch, for its
/// cache of convolution primitive descriptors) to `capacity` (number of entries, >= 0) unless the
/// user has set it, whose value then stays in effect. ideep reads it once, at its first CPU
/// convolution: call this at the start of main(), as BoundOneDnnPrimitiveCache. Returns true if
/// it set the variable. Throws std::invalid_argument for a negative capacity.
bool BoundIdeepCache(int capacity = kIdeepCacheCapacity);

/// The capacity of oneDNN's primitive cache in this process (number of primitives), as oneDNN's
/// dnnl_get_primitive_cache_capacity reports it; nullopt where oneDNN is not a shared library this
/// process can see (the torch wheel links it statically with hidden symbols). Querying creates
/// the cache: after this call the environment variable has no effect any more.
std::optional<int> OneDnnPrimitiveCacheCapacity();

/// Empties oneDNN's primitive cache, keeping its capacity (dnnl_set_primitive_cache_capacity(0),
/// then the capacity again), where oneDNN is a shared library; returns false and does nothing
/// where it is not (see OneDnnPrimitiveCacheCapacity) or when oneDNN reports an error. Costs the
/// next use of each shape a new primitive (3-4 ms for one of StandardNet's convolutions).
/// Thread-safe as far as oneDNN's cache is (it locks), but primitives another thread is creating
/// at the same moment may stay cached.
bool ClearOneDnnPrimitiveCache();

/// Work with shapes of its own (validation, embedding extraction) runs inside a phase: when the
/// phase ends, ClearOneDnnPrimitiveCache() drops the primitives compiled for it (and the
/// training step's, which the next step compiles again).
class OneDnnPrimitiveCachePhase {
 public:
  OneDnnPrimitiveCachePhase() = default;
  ~OneDnnPrimitiveCachePhase() { ClearOneDnnPrimitiveCache(); }
  OneDnnPrimitiveCachePhase(const OneDnnPrimitiveCachePhase&) = delete;
  OneDnnPrimitiveCachePhase& operator=(const OneDnnPrimitiveCachePhase&) = delete;
};

}  // namespace asv::train
