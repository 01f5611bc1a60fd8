#include "asvcpp/backend/plda.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include "asvcpp/backend/matrix_torch.h"
#include "asvcpp/backend/model_io.h"
#include "asvcpp/backend/scorer_torch.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"

namespace asv::backend {
namespace {

constexpr char kMagic[] = "ASVPLDA\0";
constexpr std::uint32_t kVersion = 1;
constexpr double kSingularRatio = 1e-10;

Plda Train(const Matrix& vectors, const std::vector<std::int64_t>& ids, std::int64_t n_speakers,
           const PldaTrainOptions& options) {
  torch::NoGradGuard no_grad;
  const std::int64_t n = vectors.rows();
  const std::int64_t dim = vectors.cols();
  if (n < 2 || dim < 1) throw DataError(fmt::format("PLDA training needs at least 2 vectors, got [{}, {}]", n, dim));
  if (options.within_class_divisor == WithinClassDivisor::kUnbiased && n - n_speakers < 1) {
    throw DataError(fmt::format(
        "PLDA training with the unbiased (N - K) within-class divisor needs more vectors ({}) than speakers ({})", n,
        n_speakers));
  }
  const torch::Tensor x = ViewTensor(vectors).to(torch::kFloat64);
  if (!torch::isfinite(x).all().item<bool>()) throw DataError("PLDA training vectors contain NaN or infinite values");
  ASV_LOG(Info, "training PLDA on {} vectors of {} speakers, dimension {}", n, n_speakers, dim);
  const torch::Tensor id = torch::from_blob(const_cast<std::int64_t*>(ids.data()), {n}, torch::kInt64);
  // One N x D x D product: the total scatter T = Xc^T Xc, and the within-class scatter from it as
  // W = T - sum_s n_s (m_s - m)(m_s - m)^T, which equals the scatter of the speaker-mean-removed
  // rows that ASVtorch computes (the residuals' global mean is exactly zero).
  const torch::Tensor xc = x - x.mean(0);
  torch::Tensor total = xc.t().matmul(xc);
  total = 0.5 * (total + total.t());
  const torch::Tensor sums = torch::zeros({n_speakers, dim}, torch::kFloat64).index_add_(0, id, xc);
  const torch::Tensor counts =
      torch::zeros({n_speakers}, torch::kFloat64).index_add_(0, id, torch::ones({n}, torch::kFloat64));
  const torch::Tensor centred_means = sums / counts.unsqueeze(1);  // m_s - m
  torch::Tensor between = (centred_means * counts.unsqueeze(1)).t().matmul(centred_means);
  between = 0.5 * (between + between.t());
  const double within_divisor = options.within_class_divisor == WithinClassDivisor::kAsvtorch
                                    ? static_cast<double>(n - 1)
                                    : static_cast<double>(n - n_speakers);
  const torch::Tensor sw = (total - between) / within_divisor;
  const torch::Tensor st = total / static_cast<double>(n - 1);
  return Plda(ToMatrixD(st), ToMatrixD(st - sw), n, n_speakers);
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
  const torch::Tensor lambda = at::linalg_inv(st);
  torch::Tensor inner = st - sb.matmul(lambda).matmul(sb);
  inner = 0.5 * (inner + inner.t());
  CheckInvertible(inner, "St - Sb St^-1 Sb (the within-speaker part)", *this);
  const torch::Tensor gamma = at::linalg_inv(inner);
  const torch::Tensor q = lambda - gamma;
  const torch::Tensor p = lambda.matmul(sb).matmul(gamma);
  auto [u, s, vh] = at::linalg_svd(p, /*full_matrices=*/false);
  const torch::Tensor uk = u.slice(1, 0, plda_dim);
  PldaScoringMatrices m;
  m.projection = ToMatrixD(uk);
  m.cross = DoublesOf(s.slice(0, 0, plda_dim));
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
