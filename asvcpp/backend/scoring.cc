// Scorer handles, the generic bilinear scorer (cosine, PLDA), trial scoring and adaptive s-norm.
#include "asvcpp/backend/scoring.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "asvcpp/backend/blas.h"
#include "asvcpp/backend/matrix_torch.h"
#include "asvcpp/backend/score_norm.h"
#include "asvcpp/backend/scorer_torch.h"
#include "asvcpp/backend/top_n.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/base/thread_pool.h"

namespace asv::backend {
namespace {

// The products of the scorers are accumulated in double precision and rounded to float once
// (GemmRowMajorDouble): a score, a projected vector or a self term is then a function of its own
// rows alone, not of how many rows are multiplied at once. A float sgemm's blocking and kernels
// change the order of its sums with the shape (OpenBLAS 0.3.21: the same pair scored in a 16 x 16
// and in a 30 x 40 product differs by an ulp in about a fifth of the entries), so a trial scored
// with a list's other trials would differ from the same trial scored alone (`asvrun verify`);
// rounded double sums agree but for values within ~1e-16 of a float rounding boundary. The price:
// about 4x the time of sgemm for the product (4700 x 4700 x 512: 0.25 s -> 1.07 s at 2 threads).
std::vector<double> DoubleCopy(const float* p, std::int64_t count) {
  return std::vector<double>(p, p + count);
}

// Rows of an all-vs-all product computed at once: at most this many double scores (32 MB).
constexpr std::int64_t kProductBlockEntries = std::int64_t{1} << 22;

torch::Tensor IndexTensor(const std::vector<std::int64_t>& v) {
  return torch::from_blob(const_cast<std::int64_t*>(v.data()), {static_cast<std::int64_t>(v.size())}, torch::kInt64)
      .clone();
}

// Rows `rows` of `m` as a [rows.size(), cols] float32 tensor (a plain copy loop; see Prepare).
torch::Tensor GatherRows(const Matrix& m, const std::vector<std::int64_t>& rows) {
  torch::Tensor out = torch::empty({static_cast<std::int64_t>(rows.size()), m.cols()}, torch::kFloat32);
  float* dst = out.data_ptr<float>();
  for (const std::int64_t r : rows) dst = std::copy(m.row(r), m.row(r) + m.cols(), dst);
  return out;
}

void CheckInput(const torch::Tensor& x, std::int64_t dim, const std::string& name) {
  if (x.dim() != 2) throw std::invalid_argument(fmt::format("{}: expected [n, dim] vectors, got {} dimensions", name, x.dim()));
  if (dim >= 0 && x.size(1) != dim) {
    throw std::invalid_argument(fmt::format("{}: vectors have dimension {}, the scorer expects {}", name, x.size(1), dim));
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// PreparedVectors, BilinearScorer

PreparedVectors PreparedVectors::Select(const torch::Tensor& index) const {
  PreparedVectors p;
  p.vectors = vectors.index_select(0, index);
  if (self_terms.defined()) p.self_terms = self_terms.index_select(0, index);
  return p;
}

PreparedVectors PreparedVectors::Slice(std::int64_t begin, std::int64_t end) const {
  PreparedVectors p;
  p.vectors = vectors.slice(0, begin, end);
  if (self_terms.defined()) p.self_terms = self_terms.slice(0, begin, end);
  return p;
}

BilinearScorer::BilinearScorer(Parts parts) : parts_(std::move(parts)) {
  // The CPU loops below read the parts as contiguous float32 arrays.
  for (torch::Tensor* t : {&parts_.projection, &parts_.quadratic, &parts_.weights}) {
    if (t->defined()) *t = t->to(torch::kCPU, torch::kFloat32).contiguous();
  }
  const std::int64_t d = parts_.projection.defined() ? parts_.projection.size(1) : -1;
  if (parts_.quadratic.defined() && d >= 0 && (parts_.quadratic.size(0) != d || parts_.quadratic.size(1) != d)) {
    throw std::invalid_argument("BilinearScorer: quadratic term does not match the projection");
  }
  if (parts_.weights.defined() && d >= 0 && parts_.weights.size(0) != d) {
    throw std::invalid_argument("BilinearScorer: weights do not match the projection");
  }
}

std::int64_t BilinearScorer::dim() const {
  return parts_.projection.defined() ? parts_.projection.size(0) : -1;
}

// Prepare and AllVsAll are dgemm calls (DoubleCopy above) and plain single-threaded loops (the
// loops are O(n d) and O(n1 n2), the products O(n d^2) and O(n1 n2 d)). No LibTorch operation runs
// between the products: each one is an OpenMP region whose workers keep spinning after it and took
// the cores from the BLAS's own threads (all-vs-all scoring of 1000 x 1000 PLDA vectors took 25 ms
// at 2 threads against 16 ms at 1; 9-11 ms at 2 with sgemm).
PreparedVectors BilinearScorer::Prepare(const torch::Tensor& vectors) const {
  torch::NoGradGuard no_grad;
  CheckInput(vectors, dim(), parts_.name);
  if (!vectors.device().is_cpu()) {
    throw std::invalid_argument(fmt::format("{}: vectors must be on the CPU", parts_.name));
  }
  const std::int64_t n = vectors.size(0);
  torch::Tensor v = vectors.to(torch::kFloat32).contiguous();
  if (parts_.normalise) {
    v = v.clone();
    const std::int64_t dim_in = v.size(1);
    float* p = v.data_ptr<float>();
    for (std::int64_t i = 0; i < n; ++i, p += dim_in) {
      double sum_sq = 0;
      for (std::int64_t k = 0; k < dim_in; ++k) sum_sq += static_cast<double>(p[k]) * p[k];
      const auto norm = static_cast<float>(std::sqrt(sum_sq));
      if (norm == 0) continue;  // A zero vector stays zero (its scores are 0).
      for (std::int64_t k = 0; k < dim_in; ++k) p[k] /= norm;
    }
  }
  if (parts_.projection.defined()) {
    const std::int64_t dim_in = parts_.projection.size(0), d = parts_.projection.size(1);
    const std::vector<double> vd = DoubleCopy(v.data_ptr<float>(), n * dim_in);
    const std::vector<double> pd = DoubleCopy(parts_.projection.data_ptr<float>(), dim_in * d);
    std::vector<double> product(static_cast<std::size_t>(n * d));
    GemmRowMajorDouble(false, n, d, dim_in, vd.data(), dim_in, pd.data(), d, product.data(), d);
    torch::Tensor out = torch::empty({n, d}, torch::kFloat32);
    std::copy(product.begin(), product.end(), out.data_ptr<float>());
    v = out;
  }
  PreparedVectors prepared;
  prepared.vectors = v;
  if (parts_.quadratic.defined()) {
    // h_i = v_i^T Q v_i: one product V Q, then a dot product per row, all in double.
    const std::int64_t d = v.size(1);
    const std::vector<double> vd = DoubleCopy(v.data_ptr<float>(), n * d);
    const std::vector<double> qd = DoubleCopy(parts_.quadratic.data_ptr<float>(), d * d);
    std::vector<double> vq(static_cast<std::size_t>(n * d));
    GemmRowMajorDouble(false, n, d, d, vd.data(), d, qd.data(), d, vq.data(), d);
    prepared.self_terms = torch::empty({n}, torch::kFloat32);
    const double* a = vd.data();
    const double* b = vq.data();
    float* h = prepared.self_terms.data_ptr<float>();
    for (std::int64_t i = 0; i < n; ++i, a += d, b += d) {
      double sum = 0;
      for (std::int64_t k = 0; k < d; ++k) sum += a[k] * b[k];
      h[i] = static_cast<float>(sum);
    }
  }
  return prepared;
}

torch::Tensor TensorScorer::AllVsAll(const PreparedVectors& left, const PreparedVectors& right) const {
  torch::Tensor s = torch::empty({left.size(), right.size()}, torch::kFloat32);
  AllVsAllInto(left, right, s.data_ptr<float>());
  return s;
}

void BilinearScorer::AllVsAllInto(const PreparedVectors& left, const PreparedVectors& right, float* out) const {
  torch::NoGradGuard no_grad;
  if (!left.vectors.device().is_cpu() || !right.vectors.device().is_cpu()) {
    throw std::invalid_argument(fmt::format("{}: prepared vectors must be on the CPU", parts_.name));
  }
  const std::int64_t d = left.vectors.size(1);
  if (right.vectors.size(1) != d) {
    throw std::invalid_argument(
        fmt::format("{}: prepared vectors of dimension {} and {}", parts_.name, d, right.vectors.size(1)));
  }
  const std::int64_t n1 = left.size(), n2 = right.size();
  const torch::Tensor l = left.vectors.to(torch::kFloat32).contiguous();
  const torch::Tensor r = right.vectors.to(torch::kFloat32).contiguous();
  std::vector<double> ld = DoubleCopy(l.data_ptr<float>(), n1 * d);
  if (parts_.weights.defined()) {
    const float* w = parts_.weights.data_ptr<float>();
    for (std::int64_t i = 0; i < n1 * d; i += d) {
      for (std::int64_t k = 0; k < d; ++k) ld[static_cast<std::size_t>(i + k)] *= w[k];
    }
  }
  const std::vector<double> rd = DoubleCopy(r.data_ptr<float>(), n2 * d);
  // s_ij = (h_i + h_j) + lw_i . r_j, in double, rounded once.
  torch::Tensor hl_t, hr_t;
  if (left.self_terms.defined()) {
    hl_t = left.self_terms.to(torch::kFloat32).contiguous();
    hr_t = right.self_terms.to(torch::kFloat32).contiguous();
  }
  const float* hl = hl_t.defined() ? hl_t.data_ptr<float>() : nullptr;
  const float* hr = hr_t.defined() ? hr_t.data_ptr<float>() : nullptr;
  const std::int64_t block =
      std::max<std::int64_t>(1, std::min(n1, kProductBlockEntries / std::max<std::int64_t>(1, n2)));
  std::vector<double> product(static_cast<std::size_t>(block * n2));
  for (std::int64_t i0 = 0; i0 < n1; i0 += block) {
    const std::int64_t rows = std::min(block, n1 - i0);
    GemmRowMajorDouble(true, rows, n2, d, ld.data() + i0 * d, d, rd.data(), d, product.data(), n2);
    for (std::int64_t i = 0; i < rows; ++i) {
      const double* p = product.data() + i * n2;
      float* row = out + (i0 + i) * n2;
      if (hl != nullptr) {
        const double h = hl[i0 + i];
        for (std::int64_t j = 0; j < n2; ++j) row[j] = static_cast<float>((h + hr[j]) + p[j]);
      } else {
        for (std::int64_t j = 0; j < n2; ++j) row[j] = static_cast<float>(p[j]);
      }
    }
  }
  if (parts_.clamp_unit) {
    for (std::int64_t i = 0; i < n1 * n2; ++i) out[i] = std::min(1.0f, std::max(-1.0f, out[i]));
  }
}

torch::Tensor BilinearScorer::Pairs(const PreparedVectors& left, const PreparedVectors& right) const {
  torch::NoGradGuard no_grad;
  if (left.size() != right.size()) {
    throw std::invalid_argument(fmt::format("{}: {} left but {} right vectors", parts_.name, left.size(), right.size()));
  }
  // In double, rounded once, as AllVsAllInto: a pair scores the same by either.
  torch::Tensor lw = left.vectors.to(torch::kFloat64);
  if (parts_.weights.defined()) lw = lw * parts_.weights.to(torch::kFloat64);
  torch::Tensor s = (lw * right.vectors.to(torch::kFloat64)).sum(1);
  if (left.self_terms.defined()) {
    s = (left.self_terms.to(torch::kFloat64) + right.self_terms.to(torch::kFloat64)) + s;
  }
  s = s.to(torch::kFloat32);
  if (parts_.clamp_unit) s.clamp_(-1.0, 1.0);
  return s;
}

torch::Tensor TensorScorer::IndexedPairs(const PreparedVectors& prepared, const torch::Tensor& left_index,
                                         const torch::Tensor& right_index) const {
  return Pairs(prepared.Select(left_index), prepared.Select(right_index));
}

torch::Tensor BilinearScorer::IndexedPairs(const PreparedVectors& prepared, const torch::Tensor& left_index,
                                           const torch::Tensor& right_index) const {
  torch::NoGradGuard no_grad;
  const torch::Tensor v = prepared.vectors.to(torch::kCPU, torch::kFloat32).contiguous();
  const torch::Tensor h = prepared.self_terms.defined() ? prepared.self_terms.to(torch::kCPU, torch::kFloat32).contiguous()
                                                        : torch::Tensor();
  const torch::Tensor w = parts_.weights.defined() ? parts_.weights.to(torch::kCPU, torch::kFloat32).contiguous()
                                                   : torch::ones({v.size(1)}, torch::kFloat32);
  const torch::Tensor li = left_index.to(torch::kCPU, torch::kInt64).contiguous();
  const torch::Tensor ri = right_index.to(torch::kCPU, torch::kInt64).contiguous();
  if (li.numel() != ri.numel()) throw std::invalid_argument("IndexedPairs: index lengths differ");
  const std::int64_t n = li.numel();
  const std::int64_t d = v.size(1);
  const std::int64_t rows = v.size(0);
  const float* vp = v.data_ptr<float>();
  const float* wp = w.data_ptr<float>();
  const float* hp = h.defined() ? h.data_ptr<float>() : nullptr;
  const std::int64_t* lp = li.data_ptr<std::int64_t>();
  const std::int64_t* rp = ri.data_ptr<std::int64_t>();
  for (std::int64_t t = 0; t < n; ++t) {
    if (lp[t] < 0 || lp[t] >= rows || rp[t] < 0 || rp[t] >= rows) throw std::out_of_range("IndexedPairs: index out of range");
  }
  torch::Tensor out = torch::empty({n}, torch::kFloat32);
  float* op = out.data_ptr<float>();
  const bool clamp = parts_.clamp_unit;
  at::parallel_for(0, n, 4096, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) {
      const float* a = vp + lp[t] * d;
      const float* b = vp + rp[t] * d;
      // Four partial sums of double products: independent chains for the CPU; rounded once, as
      // AllVsAllInto, so that a pair scores the same by either.
      double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      std::int64_t k = 0;
      for (; k + 4 <= d; k += 4) {
        s0 += static_cast<double>(a[k]) * wp[k] * b[k];
        s1 += static_cast<double>(a[k + 1]) * wp[k + 1] * b[k + 1];
        s2 += static_cast<double>(a[k + 2]) * wp[k + 2] * b[k + 2];
        s3 += static_cast<double>(a[k + 3]) * wp[k + 3] * b[k + 3];
      }
      for (; k < d; ++k) s0 += static_cast<double>(a[k]) * wp[k] * b[k];
      double s = (s0 + s1) + (s2 + s3);
      if (hp != nullptr) s += static_cast<double>(hp[lp[t]]) + static_cast<double>(hp[rp[t]]);
      float f = static_cast<float>(s);
      if (clamp) f = std::min(1.0f, std::max(-1.0f, f));
      op[t] = f;
    }
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Scorer

Scorer::Scorer(std::shared_ptr<const TensorScorer> impl) : impl_(std::move(impl)) {
  if (!impl_) throw std::invalid_argument("Scorer: null implementation");
}

std::string Scorer::name() const { return impl_->name(); }
std::int64_t Scorer::dim() const { return impl_->dim(); }

Matrix Scorer::ScoreAllVsAll(const Matrix& left, const Matrix& right) const {
  if (left.cols() != right.cols()) {
    throw std::invalid_argument(fmt::format("{}: left vectors have dimension {}, right ones {}", name(), left.cols(), right.cols()));
  }
  const PreparedVectors l = impl_->Prepare(ViewTensor(left)), r = impl_->Prepare(ViewTensor(right));
  Matrix scores(left.rows(), right.rows());
  impl_->AllVsAllInto(l, r, scores.data());
  return scores;
}

std::vector<float> Scorer::ScorePairs(const Matrix& left, const Matrix& right) const {
  if (left.rows() != right.rows() || left.cols() != right.cols()) {
    throw std::invalid_argument(fmt::format("{}: pair scoring needs equal shapes, got [{}, {}] and [{}, {}]", name(),
                                            left.rows(), left.cols(), right.rows(), right.cols()));
  }
  return ToFloatVector(impl_->Pairs(impl_->Prepare(ViewTensor(left)), impl_->Prepare(ViewTensor(right))));
}

Scorer MakeCosineScorer() {
  BilinearScorer::Parts parts;
  parts.name = "cosine";
  parts.normalise = true;
  parts.clamp_unit = true;
  return Scorer(std::make_shared<BilinearScorer>(std::move(parts)));
}

// ---------------------------------------------------------------------------------------------
// Trial scoring

void ScoringOptions::Validate() const {
  if (max_all_vs_all_score_count < 1) {
    throw ConfigError(fmt::format("backend.max_all_vs_all_score_count must be >= 1, got {}", max_all_vs_all_score_count));
  }
  if (pairwise_scoring_chunk_size < 1) {
    throw ConfigError(fmt::format("backend.pairwise_scoring_chunk_size must be >= 1, got {}", pairwise_scoring_chunk_size));
  }
}

std::vector<TrialIndex> IndexTrials(const eval::TrialList& trials, const std::vector<std::string>& ids) {
  std::unordered_map<std::string, std::int64_t> row_of;
  row_of.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (!row_of.emplace(ids[i], static_cast<std::int64_t>(i)).second) {
      throw DataError(fmt::format("embedding id '{}' appears twice (rows {} and {})", ids[i], row_of[ids[i]], i));
    }
  }
  std::vector<TrialIndex> out(trials.size());
  auto find = [&](const std::string& id, std::size_t t) {
    const auto it = row_of.find(id);
    if (it == row_of.end()) {
      throw DataError(fmt::format("{}:{}: no embedding for '{}'", trials.path, trials.line.empty() ? 0 : trials.line[t], id));
    }
    return it->second;
  };
  for (std::size_t t = 0; t < trials.size(); ++t) out[t] = {find(trials.left[t], t), find(trials.right[t], t)};
  return out;
}

std::vector<float> ScoreTrials(const Scorer& scorer, const Matrix& embeddings, const std::vector<TrialIndex>& trials,
                               const ScoringOptions& options) {
  return ScoreTrials(scorer, embeddings, trials, options, ScoringStrategy::kAuto);
}

std::vector<float> ScoreTrials(const Scorer& scorer, const Matrix& embeddings, const std::vector<TrialIndex>& trials,
                               const ScoringOptions& options, ScoringStrategy strategy) {
  options.Validate();
  torch::NoGradGuard no_grad;
  const TensorScorer& impl = scorer.impl();
  const std::int64_t n = embeddings.rows();
  if (trials.empty()) return {};
  // Distinct left and right rows in order of first appearance, and each row's position.
  std::vector<std::int64_t> left_pos(static_cast<std::size_t>(n), -1), right_pos(static_cast<std::size_t>(n), -1);
  std::vector<std::int64_t> left_rows, right_rows;
  for (std::size_t t = 0; t < trials.size(); ++t) {
    const TrialIndex& tr = trials[t];
    if (tr.left < 0 || tr.left >= n || tr.right < 0 || tr.right >= n) {
      throw std::out_of_range(fmt::format("trial {} indexes rows ({}, {}) of {} embeddings", t, tr.left, tr.right, n));
    }
    auto& lp = left_pos[static_cast<std::size_t>(tr.left)];
    if (lp < 0) lp = static_cast<std::int64_t>(left_rows.size()), left_rows.push_back(tr.left);
    auto& rp = right_pos[static_cast<std::size_t>(tr.right)];
    if (rp < 0) rp = static_cast<std::int64_t>(right_rows.size()), right_rows.push_back(tr.right);
  }
  const auto n_left = static_cast<std::int64_t>(left_rows.size());
  const auto n_right = static_cast<std::int64_t>(right_rows.size());
  const auto n_trials = static_cast<std::int64_t>(trials.size());
  const bool all_vs_all = strategy == ScoringStrategy::kAllVsAll ||
                          (strategy == ScoringStrategy::kAuto && n_left * n_right <= options.max_all_vs_all_score_count);
  if (all_vs_all) {
    ASV_LOG(Info, "{}: scoring {} trials all-vs-all ({} x {} vectors)", scorer.name(), n_trials, n_left, n_right);
    const PreparedVectors left = impl.Prepare(GatherRows(embeddings, left_rows));
    const PreparedVectors right = impl.Prepare(GatherRows(embeddings, right_rows));
    const torch::Tensor matrix = impl.AllVsAll(left, right);
    const float* m = matrix.data_ptr<float>();
    std::vector<float> out(trials.size());
    for (std::size_t t = 0; t < trials.size(); ++t) {
      out[t] = m[left_pos[static_cast<std::size_t>(trials[t].left)] * n_right +
                 right_pos[static_cast<std::size_t>(trials[t].right)]];
    }
    return out;
  }
  // Pairwise: every distinct vector is transformed once; each chunk then indexes its rows.
  std::vector<std::int64_t> pos(static_cast<std::size_t>(n), -1), rows;
  for (const TrialIndex& tr : trials) {
    for (std::int64_t r : {tr.left, tr.right}) {
      auto& p = pos[static_cast<std::size_t>(r)];
      if (p < 0) p = static_cast<std::int64_t>(rows.size()), rows.push_back(r);
    }
  }
  ASV_LOG(Info, "{}: scoring {} trials pairwise in chunks of {} ({} x {} vectors)", scorer.name(), n_trials,
          options.pairwise_scoring_chunk_size, n_left, n_right);
  const PreparedVectors prepared = impl.Prepare(GatherRows(embeddings, rows));
  torch::Tensor scores = torch::empty({n_trials}, torch::kFloat32);
  std::vector<std::int64_t> li, ri;
  for (std::int64_t begin = 0; begin < n_trials; begin += options.pairwise_scoring_chunk_size) {
    const std::int64_t end = std::min(n_trials, begin + options.pairwise_scoring_chunk_size);
    li.clear();
    ri.clear();
    for (std::int64_t t = begin; t < end; ++t) {
      li.push_back(pos[static_cast<std::size_t>(trials[static_cast<std::size_t>(t)].left)]);
      ri.push_back(pos[static_cast<std::size_t>(trials[static_cast<std::size_t>(t)].right)]);
    }
    scores.slice(0, begin, end).copy_(impl.IndexedPairs(prepared, IndexTensor(li), IndexTensor(ri)));
  }
  return ToFloatVector(scores);
}

// ---------------------------------------------------------------------------------------------
// Adaptive s-norm

// Tiles of at most kSnormTileRows x kSnormTileCols scores (8 MB: the tile stays in the L3 cache
// between the product that writes it and the selection that reads it). Each tile is one sgemm call
// (the BLAS's threads); the selection then runs over the tile's rows on at::get_num_threads()
// plain threads (asv::base::ParallelFor; no OpenMP region whose spinning workers would take the
// cores from the next product), each row keeping its top-N in a TopNSelector with capacity 2N
// (capped at the cohort size). The full score matrix is never held.
constexpr std::int64_t kSnormTileRows = 512;
constexpr std::int64_t kSnormTileCols = 4096;

SnormStats ComputeAdaptiveSnormStats(const Scorer& scorer, const Matrix& vectors, const Matrix& cohort,
                                     std::int64_t top_n, const ScoringOptions& options) {
  options.Validate();
  torch::NoGradGuard no_grad;
  const std::int64_t m = cohort.rows();
  if (top_n < 2 || top_n > m) {
    throw ConfigError(fmt::format("adaptive s-norm: top-N cohort size must be in [2, {}] (the cohort size), got {}", m, top_n));
  }
  if (vectors.cols() != cohort.cols()) {
    throw std::invalid_argument(fmt::format("adaptive s-norm: vectors have dimension {}, cohort {}", vectors.cols(), cohort.cols()));
  }
  const TensorScorer& impl = scorer.impl();
  const PreparedVectors prepared_cohort = impl.Prepare(ViewTensor(cohort));
  const torch::Tensor x = ViewTensor(vectors);
  const std::int64_t n = vectors.rows();
  // Tile shape within max_all_vs_all_score_count entries.
  const std::int64_t tile_cols = std::min({m, kSnormTileCols, options.max_all_vs_all_score_count});
  const std::int64_t tile_rows =
      std::max<std::int64_t>(1, std::min(kSnormTileRows, options.max_all_vs_all_score_count / tile_cols));
  const std::int64_t capacity = std::min(2 * top_n, m);
  const int threads = std::max(1, at::get_num_threads());
  std::vector<float> tile(static_cast<std::size_t>(std::min(n, tile_rows) * tile_cols));
  std::vector<float> buffers(static_cast<std::size_t>(std::min(n, tile_rows) * capacity));
  SnormStats stats;
  stats.mean.resize(static_cast<std::size_t>(n));
  stats.std.resize(static_cast<std::size_t>(n));
  std::vector<TopNSelector> selectors;
  for (std::int64_t begin = 0; begin < n; begin += tile_rows) {
    const std::int64_t rows = std::min(n, begin + tile_rows) - begin;
    const PreparedVectors left = impl.Prepare(x.slice(0, begin, begin + rows));
    selectors.clear();
    for (std::int64_t r = 0; r < rows; ++r) selectors.emplace_back(top_n, buffers.data() + r * capacity, capacity);
    // Rows split into one contiguous range per thread.
    const std::int64_t per_thread = (rows + threads - 1) / threads;
    const auto ranges = static_cast<std::size_t>((rows + per_thread - 1) / per_thread);
    for (std::int64_t c0 = 0; c0 < m; c0 += tile_cols) {
      const std::int64_t cols = std::min(m, c0 + tile_cols) - c0;
      impl.AllVsAllInto(left, prepared_cohort.Slice(c0, c0 + cols), tile.data());
      base::ParallelFor(ranges, threads, [&](std::size_t range, int /*worker*/) {
        const std::int64_t r_end = std::min(rows, static_cast<std::int64_t>(range + 1) * per_thread);
        for (std::int64_t r = static_cast<std::int64_t>(range) * per_thread; r < r_end; ++r) {
          selectors[static_cast<std::size_t>(r)].Add(tile.data() + r * cols, cols);
        }
      });
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto i = static_cast<std::size_t>(begin + r);
      selectors[static_cast<std::size_t>(r)].MeanStd(&stats.mean[i], &stats.std[i]);
    }
  }
  return stats;
}

std::vector<float> ApplySnorm(const std::vector<float>& scores, const SnormStats& stats,
                              const std::vector<TrialIndex>& trials) {
  if (scores.size() != trials.size()) {
    throw std::invalid_argument(fmt::format("ApplySnorm: {} scores for {} trials", scores.size(), trials.size()));
  }
  if (stats.mean.size() != stats.std.size()) throw std::invalid_argument("ApplySnorm: mean and std differ in length");
  const auto n = static_cast<std::int64_t>(stats.mean.size());
  std::vector<float> out(scores.size());
  for (std::size_t t = 0; t < scores.size(); ++t) {
    const std::int64_t l = trials[t].left, r = trials[t].right;
    if (l < 0 || l >= n || r < 0 || r >= n) {
      throw std::invalid_argument(fmt::format("ApplySnorm: trial {} indexes rows ({}, {}) but stats have {}", t, l, r, n));
    }
    const double sl = stats.std[static_cast<std::size_t>(l)], sr = stats.std[static_cast<std::size_t>(r)];
    if (!(sl > 0) || !(sr > 0)) {
      throw DataError(fmt::format("adaptive s-norm: cohort score std of row {} is 0 (top-N cohort scores all equal)",
                                  sl > 0 ? r : l));
    }
    const double s = scores[t];
    out[t] = static_cast<float>(0.5 * ((s - stats.mean[static_cast<std::size_t>(l)]) / sl +
                                       (s - stats.mean[static_cast<std::size_t>(r)]) / sr));
  }
  return out;
}

Matrix SelectRandomRows(const Matrix& vectors, std::int64_t count, std::uint64_t seed) {
  const std::int64_t n = vectors.rows();
  if (count < 0 || count > n) {
    throw std::invalid_argument(fmt::format("SelectRandomRows: cannot choose {} of {} rows", count, n));
  }
  std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) idx[static_cast<std::size_t>(i)] = i;
  std::mt19937_64 rng(seed);
  for (std::int64_t i = 0; i < count; ++i) {
    // Modulo reduction (not std::uniform_int_distribution, whose algorithm differs between
    // standard libraries): the same rows on every platform.
    const auto j = i + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n - i));
    std::swap(idx[static_cast<std::size_t>(i)], idx[static_cast<std::size_t>(j)]);
  }
  idx.resize(static_cast<std::size_t>(count));
  std::sort(idx.begin(), idx.end());
  Matrix out(count, vectors.cols());
  for (std::int64_t i = 0; i < count; ++i) {
    std::copy(vectors.row(idx[static_cast<std::size_t>(i)]), vectors.row(idx[static_cast<std::size_t>(i)]) + vectors.cols(),
              out.row(i));
  }
  return out;
}

}  // namespace asv::backend
