#include "asvcpp/base/thread_pool.h"

#include <algorithm>
#include <atomic>

namespace asv::base {

int EffectiveThreads(int requested) {
  const int hardware = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::clamp(requested, 1, hardware);
}

void ParallelFor(std::size_t n, int threads, const std::function<void(std::size_t index, int worker)>& fn) {
  if (threads <= 1 || n <= 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  if (static_cast<std::size_t>(threads) > n) threads = static_cast<int>(n);

  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::exception_ptr error;

  auto worker = [&](int id) {
    while (!stop.load(std::memory_order_relaxed)) {
      const std::size_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        fn(i, id);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
        stop = true;
        return;
      }
    }
  };

  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  try {
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!error) error = std::current_exception();
    stop = true;
  }
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace asv::base
