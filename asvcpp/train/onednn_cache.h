// The bounds on LibTorch's two caches of CPU convolution kernels for asvcpp's processes: oneDNN's
// primitive cache (ONEDNN_PRIMITIVE_CACHE_CAPACITY, default 1024 primitives) and the LRU cache of
// convolution primitive descriptors of ideep, LibTorch's layer over oneDNN (LRU_CACHE_CAPACITY,
// default 1024 shapes), which emptying oneDNN's cache does not touch.
//
// Why: both caches keep an entry per input shape, and x-vector work meets new shapes all the time
// (each whole-utterance batch of validation, in-training evaluation and embedding extraction, and
// each training clip length), so at their defaults they hold hundreds of MB that training never
// reuses. asvrun keeps kOneDnnPrimitiveCacheCapacity primitives, enough for every primitive of a
// fixed-shape training step, and kIdeepCacheCapacity descriptors (a hit only saves creating one).
// Validation and embedding extraction run in a OneDnnPrimitiveCachePhase, which empties oneDNN's
// cache when it ends where oneDNN is a shared library (Debian's LibTorch), so that their
// whole-utterance shapes do not stay until training pushes them out. The measurements behind these
// choices: tools/bench/README.md, "Measurements behind the CPU memory bounds".
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
/// next use of each shape a new primitive (milliseconds for one of StandardNet's convolutions).
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
