// Batch preparation off the training thread: a bounded, ordered prefetch queue filled by worker
// threads (`computing.network_dataloader_workers`), and the functions that assemble host batches
// from a data::FeatureSource. No LibTorch here: batches are plain float buffers that the trainer wraps
// in tensors.
#pragma once

#include <any>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "asvcpp/train/epoch_sampler.h"
#include "asvcpp/data/feature_source.h"

namespace asv::train {

/// A batch in host memory, ready for the network.
struct HostBatch {
  std::int64_t batch = 0;            ///< utterances / clips
  std::int64_t feat_dim = 0;         ///< F
  std::int64_t frames = 0;           ///< T (the same for every item)
  std::vector<float> features;       ///< [batch, feat_dim, frames], row-major (network layout)
  std::vector<std::int64_t> labels;  ///< speaker labels (empty when not known)
  std::vector<int> utterances;       ///< source utterance of each item
  /// What a device transform needs besides the buffer (train/device_batch.h), e.g. the
  /// augmentation draws of each item; empty for feature batches.
  std::any extra;
};

/// The clips of `batch` (epoch_sampler.h): item i = frames [start, start + L) of its utterance,
/// transposed to [F, L]; labels = clip speakers. `utterance_map` maps the sampler's utterance
/// indices to source indices (empty: identity). Throws DataError from the source.
HostBatch LoadTrainingBatch(const data::FeatureSource& source, const EpochBatch& batch,
                            const std::vector<int>& utterance_map = {});

/// The first `frames` frames of each of `utterances` (test-time batching); `labels` (may be
/// empty) are copied as they are. Throws DataError from the source.
HostBatch LoadTestBatch(const data::FeatureSource& source, const std::vector<int>& utterances, std::int64_t frames,
                        const std::vector<std::int64_t>& labels = {});

/// Produces items 0..count-1 with `produce(index)` on `workers` threads, at most `capacity`
/// items ahead of the consumer, and hands them out in index order. workers == 0 produces each
/// item in Next() on the calling thread. An exception thrown by `produce` is rethrown by Next().
/// The destructor stops and joins the workers (items not yet consumed are dropped).
template <class T>
class Prefetcher {
 public:
  Prefetcher(std::size_t count, std::function<T(std::size_t)> produce, int workers, std::size_t capacity)
      : count_(count), produce_(std::move(produce)), capacity_(capacity < 1 ? 1 : capacity) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { Work(); });
  }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;
  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    space_.notify_all();
    for (auto& t : threads_) t.join();
  }

  /// The next item in index order, or nullopt after the last. Blocks while it is being
  /// prepared; that time accumulates in wait_seconds().
  std::optional<T> Next() {
    if (consumed_ == count_) return std::nullopt;
    const auto start = std::chrono::steady_clock::now();
    if (threads_.empty()) {
      std::optional<T> item(produce_(consumed_++));
      wait_seconds_ += Seconds(start);
      return item;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    ready_cv_.wait(lock, [&] { return error_ || ready_.count(consumed_) > 0; });
    if (error_) std::rethrow_exception(error_);
    auto node = ready_.extract(consumed_);
    ++consumed_;
    lock.unlock();
    space_.notify_all();
    wait_seconds_ += Seconds(start);
    return std::optional<T>(std::move(node.mapped()));
  }

  /// Total time Next() spent waiting for items (seconds).
  double wait_seconds() const { return wait_seconds_; }

 private:
  static double Seconds(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  void Work() {
    while (true) {
      std::size_t index = 0;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        space_.wait(lock, [&] { return stop_ || error_ || claimed_ == count_ || claimed_ < consumed_ + capacity_; });
        if (stop_ || error_ || claimed_ == count_) return;
        index = claimed_++;
      }
      try {
        T item = produce_(index);
        std::lock_guard<std::mutex> lock(mutex_);
        ready_.emplace(index, std::move(item));
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
      ready_cv_.notify_all();
    }
  }

  const std::size_t count_;
  std::function<T(std::size_t)> produce_;
  const std::size_t capacity_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable space_;     // workers wait for room in the window
  std::condition_variable ready_cv_;  // the consumer waits for its item
  std::map<std::size_t, T> ready_;
  std::size_t claimed_ = 0;
  std::size_t consumed_ = 0;  // written by the consumer under mutex_ (threaded) or alone
  bool stop_ = false;
  std::exception_ptr error_;
  double wait_seconds_ = 0;
};

}  // namespace asv::train
