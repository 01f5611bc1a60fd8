#include "asvcpp/backend/plda.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <unordered_map>

#include "asvcpp/backend/blas.h"
#include "asvcpp/backend/matrix_torch.h"
#include "asvcpp/backend/model_io.h"
#include "asvcpp/backend/scorer_torch.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/base/thread_pool.h"

namespace asv::backend {
namespace {

constexpr char kPldaMagic[] = "ASVPLDA\0";
constexpr std::uint32_t kPldaVersion = 1;
constexpr double kSingularRatio = 1e-10;

// Rows per block of the streamed scatter accumulation: 4096 x D doubles (16 MB at D = 512), few
// enough BLAS calls for its threads to pay off, instead of a float64 copy of the whole [N, D] input.
constexpr std::int64_t kBlockRows = 4096;

// Threads of the passes over the training vectors (LibTorch's intra-op count, at most this).
constexpr int kMaxPassThreads = 4;

// scatter += B^T B, B = block [rows, dim] row-major float64. `scatter` [dim, dim] row-major; only
// its upper triangle (j >= i) is updated. dsyrk does half the multiply-adds of a general product.
void AddScatter(const double* block, std::int64_t rows, std::int64_t dim, double* scatter) {
  // Column-major view: block = A [dim, rows] (lda = dim), C = A A^T; its lower triangle in
  // column-major is the upper triangle in row-major.
  const int n = static_cast<int>(dim), k = static_cast<int>(rows);
  const double one = 1.0;
  dsyrk_("L", "N", &n, &k, &one, block, &n, &one, scatter, &n, 1, 1);
}

// Copies the upper triangle of the row-major [dim, dim] `m` to its lower triangle.
void MirrorUpper(std::int64_t dim, double* m) {
  for (std::int64_t i = 0; i < dim; ++i) {
    for (std::int64_t j = 0; j < i; ++j) m[i * dim + j] = m[j * dim + i];
  }
}

Plda Train(const Matrix& vectors, const std::vector<std::int64_t>& ids, std::int64_t n_speakers,
           const PldaTrainOptions& options) {
  const std::int64_t n = vectors.rows();
  const std::int64_t dim = vectors.cols();
  if (n < 2 || dim < 1) throw DataError(fmt::format("PLDA training needs at least 2 vectors, got [{}, {}]", n, dim));
  if (options.within_class_divisor == WithinClassDivisor::kUnbiased && n - n_speakers < 1) {
    throw DataError(fmt::format(
        "PLDA training with the unbiased (N - K) within-class divisor needs more vectors ({}) than speakers ({})", n,
        n_speakers));
  }
  const auto udim = static_cast<std::size_t>(dim);
  // Pass 1, rows split among the intra-op threads: per-speaker sums of x - x_0 (float64; shifted by
  // the first row, so that the sums keep their precision however far the data lie from the
  // origin), the finiteness check, and the global mean m from them.
  std::vector<double> shift(vectors.row(0), vectors.row(0) + udim);
  // Both passes are memory-bound: a few threads are enough, and each one of pass 1 has its own
  // K x D sums (24 MB for VoxCeleb2's 5,994 speakers at D = 512).
  const int threads = std::clamp(at::get_num_threads(), 1, kMaxPassThreads);
  const std::size_t n_sums = static_cast<std::size_t>(n_speakers) * udim;
  std::vector<std::vector<double>> part_sums(static_cast<std::size_t>(threads));
  std::vector<char> part_finite(static_cast<std::size_t>(threads), 1);
  std::vector<std::int64_t> counts(static_cast<std::size_t>(n_speakers), 0);
  for (std::int64_t r = 0; r < n; ++r) ++counts[static_cast<std::size_t>(ids[static_cast<std::size_t>(r)])];
  const std::int64_t rows_per_part = (n + threads - 1) / threads;
  base::ParallelFor(static_cast<std::size_t>(threads), threads, [&](std::size_t part, int) {
    std::vector<double>& sums = part_sums[part];
    sums.assign(n_sums, 0.0);
    bool ok = true;
    const std::int64_t last = std::min(n, static_cast<std::int64_t>(part + 1) * rows_per_part);
    for (std::int64_t r = static_cast<std::int64_t>(part) * rows_per_part; r < last; ++r) {
      const float* x = vectors.row(r);
      double* sum = sums.data() + static_cast<std::size_t>(ids[static_cast<std::size_t>(r)]) * udim;
      for (std::size_t d = 0; d < udim; ++d) {
        ok &= std::isfinite(x[d]);
        sum[d] += static_cast<double>(x[d]) - shift[d];
      }
    }
    part_finite[part] = ok;
  });
  std::vector<double>& sums = part_sums[0];
  for (std::size_t part = 1; part < part_sums.size(); ++part) {
    for (std::size_t i = 0; i < n_sums; ++i) sums[i] += part_sums[part][i];
  }
  const bool finite = std::all_of(part_finite.begin(), part_finite.end(), [](char ok) { return ok != 0; });
  if (!finite) throw DataError("PLDA training vectors contain NaN or infinite values");
  std::vector<double> offset(udim, 0.0);  // m - x_0
  for (std::size_t s = 0; s < counts.size(); ++s) {
    for (std::size_t d = 0; d < udim; ++d) offset[d] += sums[s * udim + d];
  }
  std::vector<double> mean(udim);
  for (std::size_t d = 0; d < udim; ++d) {
    offset[d] /= static_cast<double>(n);
    mean[d] = shift[d] + offset[d];
  }
  ASV_LOG(Info, "training PLDA on {} vectors of {} speakers, dimension {}", n, n_speakers, dim);
  // Pass 2, in blocks of centred float64 rows x - m (centred on the same threads): the total
  // scatter T = sum (x - m)(x - m)^T. The within-class scatter is then
  // W = T - sum_s n_s (m_s - m)(m_s - m)^T, which equals the scatter of the speaker-mean-removed
  // rows that ASVtorch computes (the residuals' global mean is exactly zero).
  std::vector<double> total(udim * udim, 0.0);
  std::vector<double> block(static_cast<std::size_t>(std::min(n, kBlockRows)) * udim);
  for (std::int64_t begin = 0; begin < n; begin += kBlockRows) {
    const std::int64_t rows = std::min(kBlockRows, n - begin);
    const std::int64_t chunk = (rows + threads - 1) / threads;
    base::ParallelFor(static_cast<std::size_t>(threads), threads, [&](std::size_t part, int) {
      const std::int64_t first = static_cast<std::int64_t>(part) * chunk;
      const std::int64_t last = std::min(rows, first + chunk);
      for (std::int64_t r = first; r < last; ++r) {
        const float* x = vectors.row(begin + r);
        double* c = block.data() + static_cast<std::size_t>(r) * udim;
        for (std::size_t d = 0; d < udim; ++d) c[d] = static_cast<double>(x[d]) - mean[d];
      }
    });
    AddScatter(block.data(), rows, dim, total.data());
  }
  // Centred speaker sums n_s (m_s - m) = sum_s (x - x_0) - n_s (m - x_0).
  for (std::size_t s = 0; s < counts.size(); ++s) {
    const auto count = static_cast<double>(counts[s]);
    for (std::size_t d = 0; d < udim; ++d) sums[s * udim + d] -= count * offset[d];
  }
  // Between-speaker scatter sum_s n_s (m_s - m)(m_s - m)^T as the scatter of rows
  // sqrt(n_s) (m_s - m) = sum_s / sqrt(n_s).
  std::vector<double> between(udim * udim, 0.0);
  for (std::size_t s = 0; s < counts.size(); ++s) {
    const double scale = 1.0 / std::sqrt(static_cast<double>(counts[s]));
    for (std::size_t d = 0; d < udim; ++d) sums[s * udim + d] *= scale;
  }
  AddScatter(sums.data(), n_speakers, dim, between.data());
  MirrorUpper(dim, total.data());
  MirrorUpper(dim, between.data());
  const double within_divisor = options.within_class_divisor == WithinClassDivisor::kAsvtorch
                                    ? static_cast<double>(n - 1)
                                    : static_cast<double>(n - n_speakers);
  MatrixD st(dim, dim), sb(dim, dim);
  for (std::size_t i = 0; i < udim * udim; ++i) {
    const double sw = (total[i] - between[i]) / within_divisor;
    st.data()[i] = total[i] / static_cast<double>(n - 1);
    sb.data()[i] = st.data()[i] - sw;
  }
  return Plda(std::move(st), std::move(sb), n, n_speakers);
}

// Column-major [n, n] double matrices for LAPACK (the symmetric inputs read the same either way).
using Square = std::vector<double>;

// Eigenvalues of the symmetric [n, n] `a` (lower triangle read, destroyed), ascending (LAPACK
// dsyevd). Throws DataError when LAPACK fails.
std::vector<double> SymmetricEigenvalues(int n, Square* a) {
  std::vector<double> w(static_cast<std::size_t>(n));
  int info = 0, lwork = -1, liwork = -1, iwork_size = 0;
  double work_size = 0;
  dsyevd_("N", "L", &n, a->data(), &n, w.data(), &work_size, &lwork, &iwork_size, &liwork, &info, 1, 1);
  lwork = static_cast<int>(work_size);
  liwork = iwork_size;
  std::vector<double> work(static_cast<std::size_t>(std::max(lwork, 1)));
  std::vector<int> iwork(static_cast<std::size_t>(std::max(liwork, 1)));
  dsyevd_("N", "L", &n, a->data(), &n, w.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
  if (info != 0) throw DataError(fmt::format("PLDA: the symmetric eigendecomposition (LAPACK dsyevd) failed, info {}", info));
  return w;
}

// 1-norm (largest absolute column sum) of the symmetric [n, n] matrix whose lower triangle `a` holds.
double OneNormLower(int n, const Square& a) {
  const auto un = static_cast<std::size_t>(n);
  std::vector<double> col(un, 0.0);
  for (std::size_t j = 0; j < un; ++j) {
    col[j] += std::fabs(a[j * un + j]);
    for (std::size_t i = j + 1; i < un; ++i) {
      const double v = std::fabs(a[j * un + i]);
      col[j] += v;
      col[i] += v;
    }
  }
  return *std::max_element(col.begin(), col.end());
}

// The Cholesky factor L (lower triangle; m = L L^T, LAPACK dpotrf) of the symmetric [n, n] `m`
// (lower triangle read). Throws DataError naming `what` and the training set when `m` is not
// positive definite or its reciprocal condition number (LAPACK dpocon's 1-norm estimate) is
// <= 1e-10; the message gives the eigenvalue range.
Square CholeskyChecked(int n, const Square& m, const char* what, const Plda& plda) {
  Square l = m;
  const double norm = OneNormLower(n, m);
  int info = 0;
  dpotrf_("L", &n, l.data(), &n, &info, 1);
  double rcond = 0.0;
  if (info == 0) {
    std::vector<double> work(3 * static_cast<std::size_t>(n));
    std::vector<int> iwork(static_cast<std::size_t>(n));
    dpocon_("L", &n, l.data(), &n, &norm, &rcond, work.data(), iwork.data(), &info, 1);
  }
  if (info == 0 && rcond > kSingularRatio) return l;
  l = m;
  const std::vector<double> ev = SymmetricEigenvalues(n, &l);
  throw DataError(fmt::format(
      "PLDA: {} is singular or not positive definite (eigenvalues from {:.3g} to {:.3g}, reciprocal condition number "
      "{:.3g}); trained on {} vectors of {} speakers in dimension {}. Use more training data than dimensions and "
      "several vectors per speaker, reduce the dimension, or set a ridge",
      what, ev.front(), ev.back(), rcond, plda.n_vectors(), plda.n_speakers(), plda.dim()));
}

// The inverse of the symmetric positive definite [n, n] `m` (lower triangle read), lower triangle
// only, and, when `factor_inverse` is given, L^-1 there (lower triangle; m = L L^T): L from
// CholeskyChecked, L^-1 by InvertLowerTriangular, m^-1 = L^-T L^-1 by LAPACK dlauum (the steps
// of dpotri, with a faster triangular inverse). Throws as CholeskyChecked.
Square InverseChecked(int n, const Square& m, const char* what, const Plda& plda, Square* factor_inverse = nullptr) {
  Square inverse = CholeskyChecked(n, m, what, plda);
  InvertLowerTriangular(n, inverse.data(), n);
  if (factor_inverse != nullptr) *factor_inverse = inverse;
  int info = 0;
  dlauum_("L", &n, inverse.data(), &n, &info, 1);
  if (info != 0) throw DataError(fmt::format("PLDA: inverting {} (LAPACK dlauum) failed, info {}", what, info));
  return inverse;
}

// LAPACK workspace size from a query's answer.
int WorkSize(double query) { return std::max(1, static_cast<int>(query)); }

// The `count` eigenpairs of the symmetric [n, n] `a` (lower triangle read, destroyed) with the
// largest absolute eigenvalues, in descending order of |eigenvalue| (ties keep ascending order).
// Returns those eigenvalues (with their signs); `vectors` receives the eigenvectors as the columns
// of a column-major [n, count] matrix. The steps of LAPACK dsyevd (Householder tridiagonalisation
// dsytrd, divide and conquer dstedc for the tridiagonal's eigenvectors, dormtr to transform them
// back), except that only the `count` wanted eigenvectors are transformed back (2 n^2 count
// multiply-adds instead of 2 n^3). `a` is scaled by a power of two first (exact) so that no
// magnitude under- or overflows. Throws DataError when LAPACK fails.
std::vector<double> LargestEigenpairs(int n, int count, Square* a, Square* vectors) {
  const auto un = static_cast<std::size_t>(n);
  double largest = 0.0;
  for (std::size_t j = 0; j < un; ++j) {
    for (std::size_t i = j; i < un; ++i) largest = std::max(largest, std::fabs((*a)[j * un + i]));
  }
  const int exponent = largest > 0.0 ? std::ilogb(largest) : 0;
  for (std::size_t j = 0; j < un; ++j) {
    for (std::size_t i = j; i < un; ++i) (*a)[j * un + i] = std::ldexp((*a)[j * un + i], -exponent);
  }
  std::vector<double> diagonal(un), off(un), tau(un);
  int info = 0, lwork = -1, liwork = -1, iwork_query = 0;
  double query = 0.0;
  dsytrd_("L", &n, a->data(), &n, diagonal.data(), off.data(), tau.data(), &query, &lwork, &info, 1);
  lwork = WorkSize(query);
  std::vector<double> work(static_cast<std::size_t>(lwork));
  dsytrd_("L", &n, a->data(), &n, diagonal.data(), off.data(), tau.data(), work.data(), &lwork, &info, 1);
  if (info != 0) throw DataError(fmt::format("PLDA: tridiagonalising P (LAPACK dsytrd) failed, info {}", info));
  Square z(un * un);
  lwork = -1;
  dstedc_("I", &n, diagonal.data(), off.data(), z.data(), &n, &query, &lwork, &iwork_query, &liwork, &info, 1);
  lwork = WorkSize(query);
  liwork = std::max(1, iwork_query);
  work.resize(static_cast<std::size_t>(lwork));
  std::vector<int> iwork(static_cast<std::size_t>(liwork));
  dstedc_("I", &n, diagonal.data(), off.data(), z.data(), &n, work.data(), &lwork, iwork.data(), &liwork, &info, 1);
  if (info != 0) throw DataError(fmt::format("PLDA: the eigendecomposition of P (LAPACK dstedc) failed, info {}", info));
  // dstedc returns the eigenvalues in ascending order; pick the `count` largest in magnitude.
  std::vector<std::size_t> order(un);
  for (std::size_t i = 0; i < un; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return std::fabs(diagonal[x]) > std::fabs(diagonal[y]); });
  const auto uc = static_cast<std::size_t>(count);
  vectors->assign(un * uc, 0.0);
  std::vector<double> values(uc);
  for (std::size_t k = 0; k < uc; ++k) {
    std::copy_n(z.data() + order[k] * un, un, vectors->data() + k * un);
    values[k] = std::ldexp(diagonal[order[k]], exponent);
  }
  lwork = -1;
  dormtr_("L", "L", "N", &n, &count, a->data(), &n, tau.data(), vectors->data(), &n, &query, &lwork, &info, 1, 1, 1);
  lwork = WorkSize(query);
  work.resize(static_cast<std::size_t>(lwork));
  dormtr_("L", "L", "N", &n, &count, a->data(), &n, tau.data(), vectors->data(), &n, work.data(), &lwork, &info, 1, 1,
          1);
  if (info != 0) throw DataError(fmt::format("PLDA: transforming P's eigenvectors (LAPACK dormtr) failed, info {}", info));
  return values;
}

}  // namespace

Plda::Plda(MatrixD total_covariance, MatrixD between_covariance, std::int64_t n_vectors, std::int64_t n_speakers)
    : st_(std::move(total_covariance)), sb_(std::move(between_covariance)), n_vectors_(n_vectors), n_speakers_(n_speakers) {
  if (st_.rows() != st_.cols() || sb_.rows() != sb_.cols() || st_.rows() != sb_.rows()) {
    throw std::invalid_argument(fmt::format("PLDA: St [{}, {}] and Sb [{}, {}] must be square and of equal size",
                                            st_.rows(), st_.cols(), sb_.rows(), sb_.cols()));
  }
}

Plda Plda::TrainClosedForm(const Matrix& vectors, const std::vector<std::string>& speakers,
                           const PldaTrainOptions& options) {
  if (static_cast<std::int64_t>(speakers.size()) != vectors.rows()) {
    throw std::invalid_argument(fmt::format("PLDA training: {} vectors but {} speaker labels", vectors.rows(), speakers.size()));
  }
  std::unordered_map<std::string, std::int64_t> index;
  std::vector<std::int64_t> ids(speakers.size());
  for (std::size_t i = 0; i < speakers.size(); ++i) {
    ids[i] = index.emplace(speakers[i], static_cast<std::int64_t>(index.size())).first->second;
  }
  return Train(vectors, ids, static_cast<std::int64_t>(index.size()), options);
}

Plda Plda::TrainClosedForm(const Matrix& vectors, const std::vector<std::int64_t>& speakers,
                           const PldaTrainOptions& options) {
  if (static_cast<std::int64_t>(speakers.size()) != vectors.rows()) {
    throw std::invalid_argument(fmt::format("PLDA training: {} vectors but {} speaker labels", vectors.rows(), speakers.size()));
  }
  std::unordered_map<std::int64_t, std::int64_t> index;
  std::vector<std::int64_t> ids(speakers.size());
  for (std::size_t i = 0; i < speakers.size(); ++i) {
    ids[i] = index.emplace(speakers[i], static_cast<std::int64_t>(index.size())).first->second;
  }
  return Train(vectors, ids, static_cast<std::int64_t>(index.size()), options);
}

MatrixD Plda::within_covariance() const {
  MatrixD sw = st_;
  for (std::int64_t i = 0; i < sw.rows() * sw.cols(); ++i) sw.data()[i] -= sb_.data()[i];
  return sw;
}

PldaScoringMatrices Plda::ScoringMatrices(std::int64_t plda_dim, double ridge) const {
  const std::int64_t d_full = dim();
  if (d_full < 1) throw ConfigError("PLDA: the model is empty (not trained or loaded)");
  if (plda_dim < 1 || plda_dim > d_full) {
    throw ConfigError(fmt::format("backend.plda_dim must be in [1, {}] (the embedding dimension), got {}", d_full, plda_dim));
  }
  if (!(ridge >= 0.0) || !std::isfinite(ridge)) throw ConfigError(fmt::format("PLDA ridge must be >= 0, got {}", ridge));
  for (const MatrixD* m : {&st_, &sb_}) {
    if (!std::all_of(m->data(), m->data() + d_full * d_full, [](double v) { return std::isfinite(v); })) {
      throw DataError("PLDA: the model's covariances contain NaN or infinite values");
    }
  }
  // Column-major throughout (St and Sb are symmetric, so their row-major storage is the same).
  const int n = static_cast<int>(d_full);
  const int d = static_cast<int>(plda_dim);
  const auto un = static_cast<std::size_t>(n);
  const auto ud = static_cast<std::size_t>(d);
  Square st(st_.data(), st_.data() + un * un);
  if (ridge > 0) {
    double trace = 0.0;
    for (std::size_t i = 0; i < un; ++i) trace += st[i * un + i];
    for (std::size_t i = 0; i < un; ++i) st[i * un + i] += ridge * trace / static_cast<double>(n);
  }
  // With B = Ls^-1 Sb Ls^-T (St = Ls Ls^T), Gamma = Ls^-T (I - B^2)^-1 Ls^-1 and
  // P = Lambda Sb Gamma = Ls^-T B (I - B^2)^-1 Ls^-1; partial fractions, (I - B^2)^-1 =
  // ((I - B)^-1 + (I + B)^-1) / 2 and B (I - B^2)^-1 = ((I - B)^-1 - (I + B)^-1) / 2, and
  // Ls (I -+ B) Ls^T = St -+ Sb give
  //   Gamma = (Sw^-1 + (St + Sb)^-1) / 2,  P = (Sw^-1 - (St + Sb)^-1) / 2,  Sw = St - Sb:
  // two symmetric positive definite inverses and no products. St - Sb St^-1 Sb = Ls (I - B^2) Ls^T
  // is positive definite exactly when Sw and St + Sb are (|eigenvalues of B| < 1).
  Square within(un * un), plus(un * un);
  for (std::size_t i = 0; i < un * un; ++i) {
    within[i] = st[i] - sb_.data()[i];
    plus[i] = st[i] + sb_.data()[i];
  }
  // St's Cholesky factor checks St (first, so that the usual mistake, fewer vectors than
  // dimensions, is reported as such) and gives U_d^T Lambda U_d below.
  const Square ls = CholeskyChecked(n, st, "the total covariance St", *this);
  Square within_factor_inverse;  // Lw^-1, Sw = Lw Lw^T
  const Square within_inverse =
      InverseChecked(n, within, "the within-speaker covariance Sw = St - Sb", *this, &within_factor_inverse);
  const Square plus_inverse = InverseChecked(n, plus, "St + Sb", *this);
  // Lower triangle of P.
  Square p(un * un, 0.0);
  for (std::size_t j = 0; j < un; ++j) {
    for (std::size_t i = j; i < un; ++i) p[j * un + i] = 0.5 * (within_inverse[j * un + i] - plus_inverse[j * un + i]);
  }
  // P is symmetric, so its SVD is its eigendecomposition with s = |eigenvalue| and U = the
  // eigenvectors: U_d and l from the d eigenpairs of largest |eigenvalue|.
  Square u;
  const std::vector<double> evals = LargestEigenpairs(n, d, &p, &u);
  PldaScoringMatrices m;
  m.projection = MatrixD(d_full, plda_dim);
  m.cross.resize(ud);
  for (std::size_t k = 0; k < ud; ++k) {
    for (std::size_t i = 0; i < un; ++i) m.projection.data()[i * ud + k] = u[k * un + i];
    m.cross[k] = std::fabs(evals[k]);
  }
  // Q^ = U_d^T (Lambda - Gamma) U_d with Gamma = Sw^-1 - P and U_d^T P U_d = diag(evals):
  //   Q^ = (Ls^-1 U_d)^T (Ls^-1 U_d) - (Lw^-1 U_d)^T (Lw^-1 U_d) + diag(evals)
  // (dtrsm, dtrmm with the Lw^-1 at hand, two dsyrk); its lower triangle is used, so Q^ is symmetric.
  const double one = 1.0, zero = 0.0, minus_one = -1.0;
  Square v = u, qhat(ud * ud);
  dtrmm_("L", "L", "N", "N", &n, &d, &one, within_factor_inverse.data(), &n, v.data(), &n, 1, 1, 1, 1);
  dsyrk_("L", "T", &d, &n, &minus_one, v.data(), &n, &zero, qhat.data(), &d, 1, 1);
  v = u;
  dtrsm_("L", "L", "N", "N", &n, &d, &one, ls.data(), &n, v.data(), &n, 1, 1, 1, 1);
  dsyrk_("L", "T", &d, &n, &one, v.data(), &n, &one, qhat.data(), &d, 1, 1);
  for (std::size_t k = 0; k < ud; ++k) qhat[k * ud + k] += evals[k];
  m.quadratic = MatrixD(plda_dim, plda_dim);
  for (std::size_t j = 0; j < ud; ++j) {
    for (std::size_t i = j; i < ud; ++i) {
      m.quadratic.data()[i * ud + j] = m.quadratic.data()[j * ud + i] = qhat[j * ud + i];
    }
  }
  return m;
}

Scorer Plda::MakeScorer(std::int64_t plda_dim, double ridge) const {
  const PldaScoringMatrices m = ScoringMatrices(plda_dim, ridge);
  BilinearScorer::Parts parts;
  parts.name = fmt::format("plda(dim={})", plda_dim);
  // Plain conversions, no LibTorch operation: OpenMP workers spinning after one took the cores
  // from the BLAS threads of the next scoring matrices (at 2 threads St's Cholesky factorisation
  // ran in 5-10 ms instead of 2.3).
  parts.projection = ToFloatTensor(m.projection);
  parts.quadratic = ToFloatTensor(m.quadratic);
  MatrixD weights(1, plda_dim);
  for (std::size_t k = 0; k < m.cross.size(); ++k) weights.data()[k] = 2.0 * m.cross[k];
  parts.weights = ToFloatTensor(weights).reshape({plda_dim});
  return Scorer(std::make_shared<BilinearScorer>(std::move(parts)));
}

void Plda::Save(const std::filesystem::path& path) const {
  BinaryWriter w(std::string_view(kPldaMagic, 8), kPldaVersion);
  w.Int(n_vectors_);
  w.Int(n_speakers_);
  w.Matrix(st_);
  w.Matrix(sb_);
  w.WriteTo(path);
}

Plda Plda::Load(const std::filesystem::path& path) {
  BinaryReader r(path, std::string_view(kPldaMagic, 8), kPldaVersion);
  const std::int64_t n = r.Int();
  const std::int64_t k = r.Int();
  MatrixD st = r.Matrix();
  MatrixD sb = r.Matrix();
  r.ExpectEnd();
  if (st.rows() != st.cols() || sb.rows() != sb.cols() || st.rows() != sb.rows()) r.Fail("corrupt covariance shapes");
  return Plda(std::move(st), std::move(sb), n, k);
}

}  // namespace asv::backend
