// Probabilistic linear discriminant analysis (PLDA), two-covariance model, closed-form training
// and verification scoring (ASVtorch asvtorch/src/backend/plda.py, reference section 8.3).
//
// Model (Brümmer & de Villiers, "The speaker partitioning problem", Odyssey 2010; also Ioffe,
// "Probabilistic linear discriminant analysis", ECCV 2006, and Prince & Elder, "Probabilistic
// linear discriminant analysis for inferences about identity", ICCV 2007): an embedding is
// x = m + y + e with speaker variable y ~ N(0, Sb) and residual e ~ N(0, Sw). The model stores the
// total covariance St = Sb + Sw and the between-speaker covariance Sb.
//
// Closed-form training (ASVtorch train_closed_form):
//   Sw = covariance of the rows after subtracting each speaker's mean from that speaker's rows,
//   St = covariance of all rows, Sb = St - Sw.
//   Divisors: St always N - 1. Sw: N - 1 by default, as ASVtorch (WithinClassDivisor::kAsvtorch);
//   the unbiased within-class estimate divides by N - K (K speakers; kUnbiased).
//   Speakers may appear in any row order. Expects pre-processed vectors (VectorProcessor, e.g.
//   "cwl": centred, whitened, length-normalised).
//   Implementation (same values to rounding): float64 throughout; one pass for the speaker sums
//   (of x - x_0, shifted by the first row) and the mean, then the rows are centred in blocks of
//   4096 (both passes on up to 4 of LibTorch's intra-op threads) and only the total scatter
//   T = sum (x - m)(x - m)^T is accumulated (BLAS dsyrk: half the multiply-adds of a general
//   product); the within-class scatter follows as W = T - sum_s n_s (m_s - m)(m_s - m)^T. Extra
//   memory O(D^2 + K D) per pass-1 thread plus a 4096 x D block, no copy of the [N, D] input. Cost
//   about N D^2 / 2 multiply-adds.
//
// Scoring matrices for a PLDA dimension d (ASVtorch _compute_scoring_matrices), float64:
//   Lambda = St^-1,  Gamma = (St - Sb St^-1 Sb)^-1,  Q = Lambda - Gamma,  P = Lambda Sb Gamma,
//   SVD P = U diag(s) V^T,  l = s[:d],  U_d = U[:, :d],  Q^ = U_d^T Q U_d,
// and the verification score of embeddings a, b with a~ = U_d^T a, b~ = U_d^T b is
//   s(a, b) = a~^T Q^ a~ + b~^T Q^ b~ + 2 sum_k l_k a~_k b~_k,
// twice the two-covariance log-likelihood ratio log p(a, b | same) / p(a, b | different)
// without its constant term (for d = D). Scores are computed in float32.
// Implementation (LAPACK and BLAS called directly, float64). With St = Ls Ls^T (Cholesky) and
// B = Ls^-1 Sb Ls^-T, Gamma = Ls^-T (I - B^2)^-1 Ls^-1 and P = Ls^-T B (I - B^2)^-1 Ls^-1; by
// partial fractions ((I - B^2)^-1 = ((I - B)^-1 + (I + B)^-1) / 2, B (I - B^2)^-1 =
// ((I - B)^-1 - (I + B)^-1) / 2) and Ls (I -+ B) Ls^T = St -+ Sb:
//   Gamma = (Sw^-1 + (St + Sb)^-1) / 2,  P = (Sw^-1 - (St + Sb)^-1) / 2,  Sw = St - Sb,
// so the matrices need two symmetric positive definite inverses (Cholesky dpotrf of Sw and St + Sb,
// the factor's inverse by a recursive blocked triangular inversion, InvertLowerTriangular in
// blas.h, then L^-T L^-1 by dlauum) and no D x D product; St is factorised too (dpotrf). Each
// factorisation is checked (positive definite, reciprocal condition number above 1e-10;
// St - Sb St^-1 Sb = Ls (I - B^2) Ls^T is positive definite exactly when Sw and St + Sb are).
// P is symmetric, so U and s come from its
// symmetric eigendecomposition (dsytrd, dstedc; only the d wanted eigenvectors are transformed
// back, dormtr), s = |eigenvalue| sorted descending (equal to the SVD's; U up to the sign of each
// column and rotations within repeated values, neither of which changes a score);
// Q^ = U_d^T (Lambda - Gamma) U_d with Gamma = Sw^-1 - P and U_d^T P U_d = diag(eigenvalues):
// Q^ = (Ls^-1 U_d)^T (Ls^-1 U_d) - (Lw^-1 U_d)^T (Lw^-1 U_d) + diag(eigenvalues) (dtrsm; dtrmm
// with Sw's inverted factor Lw^-1, at hand from its inverse; two dsyrk). About 1.7 D^3
// multiply-adds plus the eigendecomposition (the formulas above with explicit inverses and
// products take about 6 D^3 plus an SVD). Cost O(D^3), independent of the number of trials.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "asvcpp/backend/scorer.h"
#include "asvcpp/base/matrix.h"

namespace asv::backend {

/// Divisor of the within-class covariance Sw.
enum class WithinClassDivisor {
  kAsvtorch,  ///< N - 1 (ASVtorch; the default, so that results match ASVtorch's).
  kUnbiased,  ///< N - K, the unbiased pooled within-class estimate.
};

struct PldaTrainOptions {
  WithinClassDivisor within_class_divisor = WithinClassDivisor::kAsvtorch;
};

/// The matrices PLDA scoring uses for one plda_dim (see the file comment).
struct PldaScoringMatrices {
  MatrixD projection;         ///< U_d, [D, d].
  std::vector<double> cross;  ///< l, [d]: the d largest singular values of P, descending.
  MatrixD quadratic;          ///< Q^, [d, d].
};

class Plda {
 public:
  Plda() = default;
  /// A model from its covariances, each [D, D]. Throws std::invalid_argument when the shapes
  /// differ or are not square.
  Plda(MatrixD total_covariance, MatrixD between_covariance, std::int64_t n_vectors = 0, std::int64_t n_speakers = 0);

  /// Closed-form training. vectors: [N, D]; speakers: [N] speaker label of each row.
  /// Throws std::invalid_argument when the lengths differ; DataError when N < 2, K < 1,
  /// N - K < 1 with kUnbiased, or a value is not finite. Trains even when St is singular (e.g.
  /// N - 1 < D); MakeScorer then reports it.
  static Plda TrainClosedForm(const Matrix& vectors, const std::vector<std::string>& speakers,
                              const PldaTrainOptions& options = {});
  /// Same with integer speaker ids (any values; only equality matters).
  static Plda TrainClosedForm(const Matrix& vectors, const std::vector<std::int64_t>& speakers,
                              const PldaTrainOptions& options = {});

  /// Embedding dimension D (0 for a default-constructed model).
  std::int64_t dim() const { return st_.rows(); }
  const MatrixD& total_covariance() const { return st_; }    ///< St, [D, D].
  const MatrixD& between_covariance() const { return sb_; }  ///< Sb, [D, D].
  MatrixD within_covariance() const;                         ///< Sw = St - Sb, [D, D].
  std::int64_t n_vectors() const { return n_vectors_; }      ///< N of training (0 if unknown).
  std::int64_t n_speakers() const { return n_speakers_; }    ///< K of training (0 if unknown).

  /// Scoring matrices for plda_dim d in [1, D]. `ridge` >= 0: when > 0, ridge * trace(St) / D is
  /// added to the diagonal of St (equivalently of Sw) before the inversions; default 0 = exact
  /// ASVtorch formulas.
  /// Throws ConfigError when d is outside [1, D] or ridge < 0; DataError when St or Sb holds a
  /// value that is not finite, or when St, Sw = St - Sb or St + Sb (checked in that order; the
  /// last two are positive definite exactly when St - Sb St^-1 Sb is) is not positive definite or
  /// is ill-conditioned (Cholesky fails, or LAPACK dpocon's 1-norm estimate of the reciprocal
  /// condition number is <= 1e-10; for a symmetric positive definite matrix about the ratio of
  /// its smallest to its largest eigenvalue), typically because there are fewer training vectors
  /// than dimensions, or speakers with one vector each; the message gives the eigenvalue range
  /// and suggests a smaller dimension, more data or a ridge.
  PldaScoringMatrices ScoringMatrices(std::int64_t plda_dim, double ridge = 0.0) const;

  /// A Scorer for ScoreTrials / ScoreAllVsAll (scorer.h), built from ScoringMatrices(). Throws as
  /// ScoringMatrices.
  Scorer MakeScorer(std::int64_t plda_dim, double ridge = 0.0) const;

  /// Binary file (model_io.h, magic "ASVPLDA\0"): D, N, K, St, Sb. Atomic; DataError on failure.
  void Save(const std::filesystem::path& path) const;
  /// Throws DataError naming the path when it is missing, not a PLDA file, or corrupt.
  static Plda Load(const std::filesystem::path& path);

 private:
  MatrixD st_;
  MatrixD sb_;
  std::int64_t n_vectors_ = 0;
  std::int64_t n_speakers_ = 0;
};

}  // namespace asv::backend
