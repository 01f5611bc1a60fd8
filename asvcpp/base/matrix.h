// A minimal dense row-major matrix used to pass features and embeddings between modules that do
// not need LibTorch (features, Kaldi I/O, back-end inputs). Rows are frames or vectors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "asvcpp/base/check.h"

namespace asv {

/// Dense row-major matrix of shape [rows, cols].
template <class T>
class MatrixT {
 public:
  MatrixT() = default;
  /// [rows, cols] filled with `fill`.
  MatrixT(std::int64_t rows, std::int64_t cols, T fill = T{})
      : rows_(rows), cols_(cols), data_(static_cast<std::size_t>(rows * cols), fill) {
    ASV_CHECK(rows >= 0 && cols >= 0);
  }

  std::int64_t rows() const noexcept { return rows_; }
  std::int64_t cols() const noexcept { return cols_; }
  bool empty() const noexcept { return rows_ == 0 || cols_ == 0; }

  T* data() noexcept { return data_.data(); }
  const T* data() const noexcept { return data_.data(); }
  T* row(std::int64_t r) noexcept { return data_.data() + r * cols_; }
  const T* row(std::int64_t r) const noexcept { return data_.data() + r * cols_; }
  T& operator()(std::int64_t r, std::int64_t c) noexcept { return data_[static_cast<std::size_t>(r * cols_ + c)]; }
  const T& operator()(std::int64_t r, std::int64_t c) const noexcept {
    return data_[static_cast<std::size_t>(r * cols_ + c)];
  }

  /// Changes the shape; existing values are kept in row-major order, new ones are T{}.
  void Resize(std::int64_t rows, std::int64_t cols) {
    ASV_CHECK(rows >= 0 && cols >= 0);
    rows_ = rows;
    cols_ = cols;
    data_.resize(static_cast<std::size_t>(rows * cols));
  }

  friend bool operator==(const MatrixT& a, const MatrixT& b) {
    return a.rows_ == b.rows_ && a.cols_ == b.cols_ && a.data_ == b.data_;
  }

 private:
  std::int64_t rows_ = 0;
  std::int64_t cols_ = 0;
  std::vector<T> data_;
};

using Matrix = MatrixT<float>;
using MatrixD = MatrixT<double>;

}  // namespace asv
