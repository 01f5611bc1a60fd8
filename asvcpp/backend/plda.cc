#include "asvcpp/backend/plda.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <unordered_map>

#include "asvcpp/backend/matrix_torch.h"
#include "asvcpp/backend/model_io.h"
#include "asvcpp/backend/scorer_torch.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"

#if ASV_BACKEND_HAVE_BLAS
// BLAS symmetric rank-k update, Fortran interface (every BLAS LibTorch links: OpenBLAS, MKL,
// reference BLAS); the two trailing arguments are the hidden lengths of the character arguments.
extern "C" void dsyrk_(const char* uplo, const char* trans, const int* n, const int* k, const double* alpha,
                       const double* a, const int* lda, const double* beta, double* c, const int* ldc,
                       std::size_t uplo_len, std::size_t trans_len);
#endif

namespace asv::backend {
namespace {

constexpr char kMagic[] = "ASVPLDA\0";
constexpr std::uint32_t kVersion = 1;
constexpr double kSingularRatio = 1e-10;

// Rows per block of the streamed scatter accumulation: 1024 x D doubles (4 MB at D = 512) stay in
// cache, instead of two float64 copies of the whole [N, D] input.
constexpr std::int64_t kBlockRows = 1024;

// scatter += B^T B, B = block [rows, dim] row-major float64. `scatter` [dim, dim] row-major; only
// its upper triangle (j >= i) is updated. dsyrk does half the multiply-adds of a general product.
void AddScatter(const double* block, std::int64_t rows, std::int64_t dim, double* scatter) {
#if ASV_BACKEND_HAVE_BLAS
  // Column-major view: block = A [dim, rows] (lda = dim), C = A A^T; its lower triangle in
  // column-major is the upper triangle in row-major.
  const int n = static_cast<int>(dim), k = static_cast<int>(rows);
  const double one = 1.0;
  dsyrk_("L", "N", &n, &k, &one, block, &n, &one, scatter, &n, 1, 1);
#else
  const torch::Tensor b = torch::from_blob(const_cast<double*>(block), {rows, dim}, torch::kFloat64);
  torch::from_blob(scatter, {dim, dim}, torch::kFloat64).addmm_(b.t(), b);
#endif
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
  // Pass 1: the global mean m (float64 sums), and the finiteness check.
  std::vector<double> mean(udim, 0.0);
  bool finite = true;
  for (std::int64_t r = 0; r < n; ++r) {
    const float* x = vectors.row(r);
    for (std::size_t d = 0; d < udim; ++d) {
      finite &= std::isfinite(x[d]);
      mean[d] += static_cast<double>(x[d]);
    }
  }
  if (!finite) throw DataError("PLDA training vectors contain NaN or infinite values");
  for (double& m : mean) m /= static_cast<double>(n);
  ASV_LOG(Info, "training PLDA on {} vectors of {} speakers, dimension {}", n, n_speakers, dim);
  // Pass 2, in blocks of centred float64 rows x - m: the total scatter T = sum (x - m)(x - m)^T
  // and the per-speaker sums of x - m. The within-class scatter is then
  // W = T - sum_s n_s (m_s - m)(m_s - m)^T, which equals the scatter of the speaker-mean-removed
  // rows that ASVtorch computes (the residuals' global mean is exactly zero).
  std::vector<double> total(udim * udim, 0.0);
  std::vector<double> sums(static_cast<std::size_t>(n_speakers) * udim, 0.0);
  std::vector<std::int64_t> counts(static_cast<std::size_t>(n_speakers), 0);
  std::vector<double> block(static_cast<std::size_t>(std::min(n, kBlockRows)) * udim);
  for (std::int64_t begin = 0; begin < n; begin += kBlockRows) {
    const std::int64_t rows = std::min(kBlockRows, n - begin);
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* x = vectors.row(begin + r);
      double* c = block.data() + static_cast<std::size_t>(r) * udim;
      const auto s = static_cast<std::size_t>(ids[static_cast<std::size_t>(begin + r)]);
      double* sum = sums.data() + s * udim;
      for (std::size_t d = 0; d < udim; ++d) {
        c[d] = static_cast<double>(x[d]) - mean[d];
        sum[d] += c[d];
      }
      ++counts[s];
    }
    AddScatter(block.data(), rows, dim, total.data());
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

// Throws DataError when the symmetric matrix `m` is not safely invertible.
void CheckInvertible(const torch::Tensor& m, const char* what, const Plda& plda) {
  const torch::Tensor ev = at::linalg_eigvalsh(m, "L");
  const double lo = ev.min().item<double>();
  const double hi = ev.max().item<double>();
  if (!(hi > 0) || !(lo > kSingularRatio * hi)) {
    throw DataError(fmt::format(
        "PLDA: {} is singular or not positive definite (eigenvalues from {:.3g} to {:.3g}); trained on {} vectors "
        "of {} speakers in dimension {}. Use more training data than dimensions and several vectors per speaker, "
        "reduce the dimension, or set a ridge",
        what, lo, hi, plda.n_vectors(), plda.n_speakers(), plda.dim()));
  }
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
  torch::NoGradGuard no_grad;
  torch::Tensor st = ToTensor(st_);
  const torch::Tensor sb = ToTensor(sb_);
  if (ridge > 0) st = st + torch::eye(d_full, torch::kFloat64) * (ridge * st.trace().item<double>() / static_cast<double>(d_full));
  CheckInvertible(st, "the total covariance St", *this);
  // Both matrices are symmetric positive definite once checked: Cholesky inverses (a third of
  // the work of LU inversion, and no less accurate for SPD matrices).
  const torch::Tensor lambda = at::cholesky_inverse(at::linalg_cholesky(st));
  torch::Tensor inner = st - sb.matmul(lambda).matmul(sb);
  inner = 0.5 * (inner + inner.t());
  CheckInvertible(inner, "St - Sb St^-1 Sb (the within-speaker part)", *this);
  const torch::Tensor gamma = at::cholesky_inverse(at::linalg_cholesky(inner));
  const torch::Tensor q = lambda - gamma;
  // P = Lambda Sb Gamma is symmetric (Gamma^-1 Lambda Sb = Sb Lambda Gamma^-1 = Sb - Sb Lambda Sb
  // Lambda Sb), so its SVD is its eigendecomposition with s = |eigenvalue| and U = the
  // eigenvectors: one symmetric eigensolver instead of an SVD (about half the time). Columns
  // are ordered by |eigenvalue|, descending, as the singular values.
  torch::Tensor p = lambda.matmul(sb).matmul(gamma);
  p = 0.5 * (p + p.t());
  auto [evals, evecs] = at::linalg_eigh(p, "L");
  const torch::Tensor abs_evals = evals.abs();
  const torch::Tensor order = abs_evals.argsort(/*dim=*/0, /*descending=*/true).slice(0, 0, plda_dim);
  const torch::Tensor uk = evecs.index_select(1, order);
  const torch::Tensor s = abs_evals.index_select(0, order);
  PldaScoringMatrices m;
  m.projection = ToMatrixD(uk);
  m.cross = DoublesOf(s);
  m.quadratic = ToMatrixD(uk.t().matmul(q).matmul(uk));
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
