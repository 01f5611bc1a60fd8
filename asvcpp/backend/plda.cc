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

constexpr char kMagic[] = "ASVPLDA\0";
constexpr std::uint32_t kVersion = 1;
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

// Eigenvalues of the symmetric [n, n] `a` (lower triangle read), ascending (LAPACK dsyevd,
// divide and conquer). With vectors, `a` is overwritten by the eigenvectors (column k belongs to
// eigenvalue k); without, its lower triangle is destroyed. Throws DataError when LAPACK fails.
std::vector<double> SymmetricEigen(int n, Square* a, bool vectors) {
  const char* jobz = vectors ? "V" : "N";
  std::vector<double> w(static_cast<std::size_t>(n));
  int info = 0, lwork = -1, liwork = -1, iwork_size = 0;
  double work_size = 0;
  dsyevd_(jobz, "L", &n, a->data(), &n, w.data(), &work_size, &lwork, &iwork_size, &liwork, &info, 1, 1);
  lwork = static_cast<int>(work_size);
  liwork = iwork_size;
  std::vector<double> work(static_cast<std::size_t>(std::max(lwork, 1)));
  std::vector<int> iwork(static_cast<std::size_t>(std::max(liwork, 1)));
  dsyevd_(jobz, "L", &n, a->data(), &n, w.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
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
  const std::vector<double> ev = SymmetricEigen(n, &l, /*vectors=*/false);
  throw DataError(fmt::format(
      "PLDA: {} is singular or not positive definite (eigenvalues from {:.3g} to {:.3g}, reciprocal condition number "
      "{:.3g}); trained on {} vectors of {} speakers in dimension {}. Use more training data than dimensions and "
      "several vectors per speaker, reduce the dimension, or set a ridge",
      what, ev.front(), ev.back(), rcond, plda.n_vectors(), plda.n_speakers(), plda.dim()));
}

// B <- op(L)^-1 B (side "L") or B op(L)^-1 (side "R"): triangular solve with the lower-triangular
// [n, n] L (LAPACK/BLAS dtrsm); B is column-major [rows, cols] with leading dimension rows.
void SolveLower(const char* side, const char* trans, const Square& l, int n, int rows, int cols, double* b) {
  const double one = 1.0;
  dtrsm_(side, "L", trans, "N", &rows, &cols, &one, l.data(), &n, b, &rows, 1, 1, 1, 1);
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
  // Lambda = St^-1 = Ls^-T Ls^-1 with St = Ls Ls^T.
  const Square ls = CholeskyChecked(n, st, "the total covariance St", *this);
  // A = Ls^-1 Sb, so Sb Lambda Sb = A^T A (one symmetric rank-n update) and
  // Gamma^-1 = St - Sb St^-1 Sb = St - A^T A = Lg Lg^T.
  Square a(sb_.data(), sb_.data() + un * un);
  SolveLower("L", "N", ls, n, n, n, a.data());
  Square within = std::move(st);
  const double one = 1.0, minus_one = -1.0, zero = 0.0;
  dsyrk_("L", "T", &n, &n, &minus_one, a.data(), &n, &one, within.data(), &n, 1, 1);
  const Square lg = CholeskyChecked(n, within, "St - Sb St^-1 Sb (the within-speaker part)", *this);
  // P = Lambda Sb Gamma = Ls^-T A Lg^-T Lg^-1: three triangular solves, no explicit inverse.
  Square p = std::move(a);
  SolveLower("R", "T", lg, n, n, n, p.data());
  SolveLower("R", "N", lg, n, n, n, p.data());
  SolveLower("L", "T", ls, n, n, n, p.data());
  // P is symmetric (Gamma^-1 Lambda Sb = Sb Lambda Gamma^-1 = Sb - Sb Lambda Sb Lambda Sb), so its
  // SVD is its eigendecomposition with s = |eigenvalue| and U = the eigenvectors: one symmetric
  // eigensolver instead of an SVD. Symmetrised against rounding; dsyevd reads the lower triangle.
  for (std::size_t j = 0; j < un; ++j) {
    for (std::size_t i = j + 1; i < un; ++i) p[j * un + i] = 0.5 * (p[j * un + i] + p[i * un + j]);
  }
  const std::vector<double> evals = SymmetricEigen(n, &p, /*vectors=*/true);
  // Columns ordered by |eigenvalue|, descending, as the singular values.
  std::vector<std::size_t> order(un);
  for (std::size_t i = 0; i < un; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return std::fabs(evals[x]) > std::fabs(evals[y]); });
  Square u(un * ud);
  PldaScoringMatrices m;
  m.projection = MatrixD(d_full, plda_dim);
  m.cross.resize(ud);
  for (std::size_t k = 0; k < ud; ++k) {
    const double* column = p.data() + order[k] * un;
    std::copy(column, column + un, u.data() + k * un);
    for (std::size_t i = 0; i < un; ++i) m.projection.data()[i * ud + k] = column[i];
    m.cross[k] = std::fabs(evals[order[k]]);
  }
  // Q^ = U^T (Lambda - Gamma) U = (Ls^-1 U)^T (Ls^-1 U) - (Lg^-1 U)^T (Lg^-1 U).
  Square q(ud * ud);
  Square v = u;
  SolveLower("L", "N", ls, n, n, d, v.data());
  dsyrk_("L", "T", &d, &n, &one, v.data(), &n, &zero, q.data(), &d, 1, 1);
  v = std::move(u);
  SolveLower("L", "N", lg, n, n, d, v.data());
  dsyrk_("L", "T", &d, &n, &minus_one, v.data(), &n, &one, q.data(), &d, 1, 1);
  m.quadratic = MatrixD(plda_dim, plda_dim);
  for (std::size_t j = 0; j < ud; ++j) {
    for (std::size_t i = j; i < ud; ++i) {
      m.quadratic.data()[i * ud + j] = m.quadratic.data()[j * ud + i] = q[j * ud + i];
    }
  }
  return m;
}

Scorer Plda::MakeScorer(std::int64_t plda_dim, double ridge) const {
  const PldaScoringMatrices m = ScoringMatrices(plda_dim, ridge);
  BilinearScorer::Parts parts;
  parts.name = fmt::format("plda(dim={})", plda_dim);
  parts.projection = ToTensor(m.projection).to(torch::kFloat32);
  parts.quadratic = ToTensor(m.quadratic).to(torch::kFloat32);
  parts.weights = (2.0 * torch::tensor(m.cross, torch::kFloat64)).to(torch::kFloat32);
  return Scorer(std::make_shared<BilinearScorer>(std::move(parts)));
}

void Plda::Save(const std::filesystem::path& path) const {
  BinaryWriter w(std::string_view(kMagic, 8), kVersion);
  w.Int(n_vectors_);
  w.Int(n_speakers_);
  w.Matrix(st_);
  w.Matrix(sb_);
  w.WriteTo(path);
}

Plda Plda::Load(const std::filesystem::path& path) {
  BinaryReader r(path, std::string_view(kMagic, 8), kVersion);
  const std::int64_t n = r.Int();
  const std::int64_t k = r.Int();
  MatrixD st = r.Matrix();
  MatrixD sb = r.Matrix();
  r.ExpectEnd();
  if (st.rows() != st.cols() || sb.rows() != sb.cols() || st.rows() != sb.rows()) r.Fail("corrupt covariance shapes");
  return Plda(std::move(st), std::move(sb), n, k);
}

}  // namespace asv::backend
