// Streaming selection of the N largest values of a sequence (internal to asv_backend; no
// LibTorch): what adaptive s-norm (score_norm.h) keeps of each embedding's cohort scores.
//
// The values arrive in pieces (one score tile after another). A buffer of `capacity` >= N values
// and a threshold are kept: a value is appended only when it exceeds the threshold, so once the
// threshold has risen nearly every score costs one comparison. When the buffer is full,
// std::nth_element moves its N largest values to the front, the rest is dropped and the threshold
// becomes the smallest value kept (the N-th largest so far). A value equal to the threshold is
// dropped: N values >= it are already kept, so the multiset of the N largest values (all that
// the mean and standard deviation depend on) is unchanged. Cost: O(length) comparisons plus
// O(capacity) per compaction; with capacity 2N and values in random order there are about
// N ln(length / N) appends in all.
// With SSE2 (every x86-64), blocks of 16 values are first tested by their maximum: one comparison
// rejects a block. The first `capacity` values are kept unconditionally; values must not be NaN
// (cohort scores of finite embeddings are finite).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace asv::backend {

class TopNSelector {
 public:
  /// Keeps the `top_n` largest values, in `buffer` ([capacity] floats, owned by the caller).
  /// Throws std::invalid_argument unless 1 <= top_n <= capacity; compaction needs
  /// capacity > top_n unless no more than top_n values arrive.
  TopNSelector(std::int64_t top_n, float* buffer, std::int64_t capacity)
      : top_n_(top_n), buffer_(buffer), capacity_(capacity) {
    if (top_n < 1 || capacity < top_n) throw std::invalid_argument("TopNSelector: need 1 <= top_n <= capacity");
  }

  /// Offers values[0..n). Throws std::logic_error when the buffer is full and capacity == top_n.
  void Add(const float* values, std::int64_t n) {
    float threshold = threshold_;
    std::int64_t size = size_;
    std::int64_t j = 0;
    // Until the buffer is first full every value is kept (also -inf ones).
    for (; j < n && size < capacity_; ++j) buffer_[size++] = values[j];
    auto offer = [&](float v) {
      if (!(v > threshold)) return;
      if (size == capacity_) {
        size_ = size;
        Compact();
        size = size_;
        threshold = threshold_;
        if (!(v > threshold)) return;
      }
      buffer_[size++] = v;
    };
#if defined(__SSE2__)
    // Blocks of 16 values: one comparison of their maximum rejects the whole block.
    for (; j + 16 <= n; j += 16) {
      const float* p = values + j;
      const __m128 mx = _mm_max_ps(_mm_max_ps(_mm_loadu_ps(p), _mm_loadu_ps(p + 4)),
                                   _mm_max_ps(_mm_loadu_ps(p + 8), _mm_loadu_ps(p + 12)));
      if (_mm_movemask_ps(_mm_cmpgt_ps(mx, _mm_set1_ps(threshold))) == 0) continue;
      for (int k = 0; k < 16; ++k) offer(p[k]);
    }
#endif
    for (; j < n; ++j) offer(values[j]);
    size_ = size;
    seen_ += n;
  }

  /// Values offered so far.
  std::int64_t seen() const { return seen_; }

  /// Mean and population standard deviation (divisor top_n) of the top_n largest values offered,
  /// in float64 (two passes). Reorders the buffer. Throws std::logic_error when fewer than top_n
  /// values were offered.
  void MeanStd(double* mean, double* std) {
    if (size_ < top_n_) throw std::logic_error("TopNSelector: fewer values than top_n");
    const float* top = buffer_;
    if (size_ > top_n_) {
      std::nth_element(buffer_, buffer_ + (size_ - top_n_), buffer_ + size_);
      top = buffer_ + (size_ - top_n_);
    }
    double sum = 0;
    for (std::int64_t k = 0; k < top_n_; ++k) sum += top[k];
    const double m = sum / static_cast<double>(top_n_);
    double sq = 0;
    for (std::int64_t k = 0; k < top_n_; ++k) sq += (top[k] - m) * (top[k] - m);
    *mean = m;
    *std = std::sqrt(sq / static_cast<double>(top_n_));
  }

  /// Sorts the kept top_n values into out[0..top_n) in descending order (for tests). Throws as
  /// MeanStd.
  void TopValues(float* out) {
    if (size_ < top_n_) throw std::logic_error("TopNSelector: fewer values than top_n");
    std::nth_element(buffer_, buffer_ + (size_ - top_n_), buffer_ + size_);
    std::copy(buffer_ + (size_ - top_n_), buffer_ + size_, out);
    std::sort(out, out + top_n_, [](float a, float b) { return a > b; });
  }

 private:
  void Compact() {
    if (capacity_ == top_n_) throw std::logic_error("TopNSelector: buffer full with capacity == top_n");
    const std::int64_t drop = size_ - top_n_;
    std::nth_element(buffer_, buffer_ + drop, buffer_ + size_);
    std::move(buffer_ + drop, buffer_ + size_, buffer_);
    size_ = top_n_;
    threshold_ = buffer_[0];  // the smallest value kept (nth_element's pivot)
  }

  std::int64_t top_n_;
  float* buffer_;
  std::int64_t capacity_;
  std::int64_t size_ = 0;
  std::int64_t seen_ = 0;
  float threshold_ = -std::numeric_limits<float>::infinity();
};

}  // namespace asv::backend
