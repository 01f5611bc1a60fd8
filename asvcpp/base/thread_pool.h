// Parallel loops over an index range with exception propagation.
//
//   ParallelFor        work items processed in any order by N threads.
//   ParallelForOrdered work items produced by N threads and consumed in index order by the
//                      calling thread (one writer), through a bounded reordering window; what
//                      is written does not depend on thread timing.
//
// In both, the first exception thrown by any callback stops the work: no new item is started,
// items already running finish, every thread is joined, and the exception is rethrown in the
// caller. Threads are started per call (work items here are utterances, milliseconds or more
// each, so a persistent pool would not pay off).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace asv::base {

/// `requested` clamped to [1, std::thread::hardware_concurrency()] (hardware_concurrency 0,
/// i.e. unknown, counts as 1).
int EffectiveThreads(int requested);

/// Calls fn(index, worker) once for every index in [0, n), on `threads` threads (clamped to
/// [1, n]; 1 runs inline in the caller). `worker` in [0, threads) identifies the calling thread,
/// e.g. to index per-thread scratch buffers. Items are handed out in increasing order, one at a
/// time. Rethrows the first exception (see the header comment).
void ParallelFor(std::size_t n, int threads, const std::function<void(std::size_t index, int worker)>& fn);

/// Computes produce(i) for i in [0, n) on `threads` worker threads and calls consume(i, value)
/// on the calling thread in increasing order of i. At most `window` (>= 1; 0 means 4·threads)
/// produced values wait for consumption, which bounds memory when the consumer is slower.
/// With threads <= 1 everything runs inline. Exceptions from produce or consume stop the work
/// and are rethrown here; consume is never called after an exception.
/// `T` must be move-constructible.
template <class T>
void ParallelForOrdered(std::size_t n, int threads, std::size_t window,
                        const std::function<T(std::size_t index)>& produce,
                        const std::function<void(std::size_t index, T&& value)>& consume) {
  if (threads <= 1 || n <= 1) {
    for (std::size_t i = 0; i < n; ++i) consume(i, produce(i));
    return;
  }
  if (static_cast<std::size_t>(threads) > n) threads = static_cast<int>(n);
  if (window == 0) window = 4 * static_cast<std::size_t>(threads);
  if (window < static_cast<std::size_t>(threads)) window = static_cast<std::size_t>(threads);

  std::mutex mutex;
  std::condition_variable produced;  // a slot was filled, or stop
  std::condition_variable space;     // a slot was freed, or stop
  std::vector<std::optional<T>> slots(window);
  std::size_t next_claim = 0;
  std::size_t next_consume = 0;
  bool stop = false;
  std::exception_ptr error;

  auto fail = [&](std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!error) error = std::move(e);
    stop = true;
    produced.notify_all();
    space.notify_all();
  };

  auto worker = [&] {
    for (;;) {
      std::size_t i = 0;
      {
        std::unique_lock<std::mutex> lock(mutex);
        space.wait(lock, [&] { return stop || next_claim >= n || next_claim < next_consume + window; });
        if (stop || next_claim >= n) return;
        i = next_claim++;
      }
      try {
        T value = produce(i);
        std::lock_guard<std::mutex> lock(mutex);
        slots[i % window].emplace(std::move(value));
        produced.notify_all();
      } catch (...) {
        fail(std::current_exception());
        return;
      }
    }
  };

  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  try {
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  } catch (...) {
    fail(std::current_exception());
  }

  for (std::size_t i = 0; i < n; ++i) {
    std::optional<T> value;
    {
      std::unique_lock<std::mutex> lock(mutex);
      produced.wait(lock, [&] { return stop || slots[i % window].has_value(); });
      if (stop) break;
      value = std::move(slots[i % window]);
      slots[i % window].reset();
      next_consume = i + 1;
      space.notify_all();
    }
    try {
      consume(i, std::move(*value));
    } catch (...) {
      fail(std::current_exception());
      break;
    }
  }
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace asv::base
