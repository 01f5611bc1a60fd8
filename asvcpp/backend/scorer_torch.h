// Tensor-level interface of the scorers (scorer.h). Include only from code that uses LibTorch.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace asv::backend {

/// Per-vector data of a scorer, computed once per embedding (see scorer.h).
struct PreparedVectors {
  torch::Tensor vectors;     ///< [n, d] float32, the transformed vectors a~.
  torch::Tensor self_terms;  ///< [n] float32, h(a); undefined when the scorer has none.

  std::int64_t size() const { return vectors.size(0); }
  /// Rows `index` ([m], int64) of both fields.
  PreparedVectors Select(const torch::Tensor& index) const;
  /// Rows [begin, end).
  PreparedVectors Slice(std::int64_t begin, std::int64_t end) const;
};

class TensorScorer {
 public:
  virtual ~TensorScorer() = default;
  virtual std::string name() const = 0;
  /// Expected input dimension D, or -1 for any.
  virtual std::int64_t dim() const = 0;
  /// [n, D] float CPU tensor -> prepared vectors. Throws std::invalid_argument on a wrong D or a
  /// tensor that is not on the CPU.
  virtual PreparedVectors Prepare(const torch::Tensor& vectors) const = 0;
  /// [n1, n2] float32 scores (a new tensor; AllVsAllInto).
  torch::Tensor AllVsAll(const PreparedVectors& left, const PreparedVectors& right) const;
  /// Writes the [n1, n2] scores, row-major, to out[0 .. n1 * n2) (a caller's buffer, e.g. the
  /// Matrix a score matrix is returned in: no copy). Throws std::invalid_argument when the
  /// prepared dimensions differ or the vectors are not on the CPU.
  virtual void AllVsAllInto(const PreparedVectors& left, const PreparedVectors& right, float* out) const = 0;
  /// [n] float32 scores of row i against row i (both of size n).
  virtual torch::Tensor Pairs(const PreparedVectors& left, const PreparedVectors& right) const = 0;
  /// [n] float32 scores of prepared[left_index[i]] against prepared[right_index[i]] (indices
  /// [n] int64). Default: Pairs of the gathered rows; scorers may avoid the gather.
  virtual torch::Tensor IndexedPairs(const PreparedVectors& prepared, const torch::Tensor& left_index,
                                     const torch::Tensor& right_index) const;
};

/// The generic diagonal-bilinear scorer of scorer.h: s = sum_k w_k a~_k b~_k + h(a) + h(b), with
/// a~ = a P (projection [D, d], or unit-length a when `normalise`), h(a) = a~^T Q a~ (when Q is
/// defined) and w (or 1 when undefined). Exposed for PLDA (plda.cc) and tests.
class BilinearScorer : public TensorScorer {
 public:
  struct Parts {
    std::string name;
    torch::Tensor projection;  ///< [D, d] float32 or undefined (then d = D and no projection).
    bool normalise = false;    ///< Length-normalise inputs first (cosine).
    torch::Tensor quadratic;   ///< [d, d] float32 or undefined (h = 0).
    torch::Tensor weights;     ///< [d] float32 or undefined (w = 1).
    bool clamp_unit = false;   ///< Clamp scores to [-1, 1] (cosine).
  };
  explicit BilinearScorer(Parts parts);
  std::string name() const override { return parts_.name; }
  std::int64_t dim() const override;
  PreparedVectors Prepare(const torch::Tensor& vectors) const override;
  void AllVsAllInto(const PreparedVectors& left, const PreparedVectors& right, float* out) const override;
  torch::Tensor Pairs(const PreparedVectors& left, const PreparedVectors& right) const override;
  /// Direct loop over the index pairs (no gathered copies), parallel over trials.
  torch::Tensor IndexedPairs(const PreparedVectors& prepared, const torch::Tensor& left_index,
                             const torch::Tensor& right_index) const override;

 private:
  Parts parts_;
};

}  // namespace asv::backend
