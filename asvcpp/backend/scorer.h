// Pairwise scoring functions for embeddings: PLDA (plda.h: Plda::MakeScorer) and cosine.
//
// A Scorer is a cheap, copyable handle (shared, immutable state). Every scorer has the form
//   s(a, b) = sum_k w_k a~_k b~_k + h(a) + h(b),
// where a~ is a per-vector transform and h a per-vector term (PLDA: a~ = U_d^T a, h(a) = a~^T Q^ a~,
// w = 2 l; cosine: a~ = a / |a|, h = 0, w = 1), so each vector is transformed once and scoring is
// one matrix product (all-vs-all) or one row-wise product (pairs). Bulk arithmetic is float32 on
// the CPU. Tensor-level entry points: scorer_torch.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "asvcpp/base/matrix.h"

namespace asv::backend {

class TensorScorer;  // scorer_torch.h

class Scorer {
 public:
  /// Throws std::invalid_argument when `impl` is null.
  explicit Scorer(std::shared_ptr<const TensorScorer> impl);

  /// "plda(dim=200)", "cosine".
  std::string name() const;
  /// Expected embedding dimension, or -1 when any dimension is accepted (cosine).
  std::int64_t dim() const;

  /// Scores of every left vector against every right vector.
  /// left [n1, D], right [n2, D] -> [n1, n2]. Throws std::invalid_argument on a dimension mismatch.
  Matrix ScoreAllVsAll(const Matrix& left, const Matrix& right) const;

  /// Scores of row i of `left` against row i of `right`: [n, D], [n, D] -> [n].
  /// Throws std::invalid_argument when the shapes differ or do not fit dim().
  std::vector<float> ScorePairs(const Matrix& left, const Matrix& right) const;

  const TensorScorer& impl() const { return *impl_; }

 private:
  std::shared_ptr<const TensorScorer> impl_;
};

/// Cosine similarity a.b / (|a| |b|), clamped to [-1, 1] (float32 rounding could step outside).
/// A zero vector scores 0 against everything. Input need not be length-normalised.
Scorer MakeCosineScorer();

}  // namespace asv::backend
