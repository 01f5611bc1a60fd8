#include "asvcpp/eval/metrics.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "asvcpp/base/error.h"

// Bit-exactness with NumPy needs every product and sum rounded separately: this file is compiled
// with -ffp-contract=off (see CMakeLists.txt), so no multiply-add is fused.

namespace asv::eval {
namespace {

// Order-preserving maps from floating-point values (no NaN) to unsigned integers of the same
// width: negative values are bit-inverted, positive ones get the sign bit set. -0 is mapped like
// +0 because they compare equal.
template <typename Key, typename Real>
Key ToKey(Real x) {
  static_assert(sizeof(Key) == sizeof(Real));
  constexpr Key kSign = Key{1} << (8 * sizeof(Key) - 1);
  if (x == Real{0}) x = Real{0};
  Key u;
  std::memcpy(&u, &x, sizeof u);
  return (u & kSign) ? static_cast<Key>(~u) : static_cast<Key>(u | kSign);
}

template <typename Real, typename Key>
Real FromKey(Key key) {
  constexpr Key kSign = Key{1} << (8 * sizeof(Key) - 1);
  const Key u = (key & kSign) ? static_cast<Key>(key & ~kSign) : static_cast<Key>(~key);
  Real x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// Whether every score is exactly a float (scores of float32 models, the usual case): they then
// sort on 32-bit keys, half the memory traffic and fewer passes than 64-bit ones. One pass that
// also throws DataError for the first NaN.
bool CheckedAllExactFloats(const std::vector<double>& scores, const char* what) {
  bool exact = true;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const double x = scores[i];
    if (std::isnan(x)) {
      throw DataError(fmt::format("{} score {} (0-based, of {}) is NaN", what, i, scores.size()));
    }
    exact = exact && static_cast<double>(static_cast<float>(x)) == x;
  }
  return exact;
}

// Sorted keys of `scores` (no NaN). LSD radix sort, 11-bit digits, passes whose digit is the same
// for every key skipped (e.g. the zero low mantissa bits of floats stored as doubles).
template <typename Key, typename Real>
std::vector<Key> SortedKeys(const std::vector<double>& scores) {
  constexpr int kBits = 11;
  constexpr int kPasses = (8 * sizeof(Key) + kBits - 1) / kBits;
  constexpr std::size_t kBuckets = std::size_t{1} << kBits;
  const std::size_t n = scores.size();
  if (n > std::numeric_limits<std::uint32_t>::max()) {
    throw std::invalid_argument("SortedScores: more than 2^32 scores in one class");
  }
  std::vector<Key> keys(n);
  std::vector<std::array<std::uint32_t, kBuckets>> hist(kPasses);
  for (auto& h : hist) h.fill(0);
  for (std::size_t i = 0; i < n; ++i) {
    const Key k = ToKey<Key>(static_cast<Real>(scores[i]));
    keys[i] = k;
    for (int p = 0; p < kPasses; ++p) ++hist[p][(k >> (p * kBits)) & (kBuckets - 1)];
  }
  std::vector<Key> tmp(n);
  for (int p = 0; p < kPasses; ++p) {
    auto& h = hist[p];
    const std::size_t first_digit = n ? (keys[0] >> (p * kBits)) & (kBuckets - 1) : 0;
    if (h[first_digit] == n) continue;  // every key has this digit: the pass would not move anything
    std::uint32_t sum = 0;
    for (auto& c : h) {
      const std::uint32_t count = c;
      c = sum;
      sum += count;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const Key k = keys[i];
      tmp[h[(k >> (p * kBits)) & (kBuckets - 1)]++] = k;
    }
    keys.swap(tmp);
  }
  return keys;
}

// Stable merge of the sorted target and non-target keys (on equal scores the target first) into
// ascending scores and target flags ([n_target + n_nontarget] each).
template <typename Key, typename Real>
void MergeSorted(const std::vector<double>& target_scores, const std::vector<double>& nontarget_scores,
                 std::vector<double>* scores, std::vector<std::uint8_t>* is_target) {
  const std::vector<Key> tar = SortedKeys<Key, Real>(target_scores);
  const std::vector<Key> non = SortedKeys<Key, Real>(nontarget_scores);
  const std::size_t n = tar.size() + non.size();
  scores->resize(n);
  is_target->resize(n);
  double* out = scores->data();
  std::uint8_t* flag = is_target->data();
  std::size_t i = 0, j = 0, k = 0;
  while (i < tar.size() && j < non.size()) {
    const bool take_target = tar[i] <= non[j];
    out[k] = static_cast<double>(FromKey<Real>(take_target ? tar[i] : non[j]));
    flag[k++] = take_target ? 1 : 0;
    i += take_target;
    j += !take_target;
  }
  for (; i < tar.size(); ++i, ++k) {
    out[k] = static_cast<double>(FromKey<Real>(tar[i]));
    flag[k] = 1;
  }
  for (; j < non.size(); ++j, ++k) {
    out[k] = static_cast<double>(FromKey<Real>(non[j]));
    flag[k] = 0;
  }
}

}  // namespace

void DcfParams::Validate() const {
  if (!(p_target > 0.0 && p_target < 1.0)) {
    throw std::invalid_argument(fmt::format("DCF p_target must be in (0, 1), got {}", p_target));
  }
  if (!(c_miss > 0.0 && std::isfinite(c_miss))) {
    throw std::invalid_argument(fmt::format("DCF c_miss must be positive and finite, got {}", c_miss));
  }
  if (!(c_fa > 0.0 && std::isfinite(c_fa))) {
    throw std::invalid_argument(fmt::format("DCF c_fa must be positive and finite, got {}", c_fa));
  }
}

SortedScores::SortedScores(const std::vector<double>& target_scores, const std::vector<double>& nontarget_scores)
    : n_target_(static_cast<std::int64_t>(target_scores.size())),
      n_nontarget_(static_cast<std::int64_t>(nontarget_scores.size())) {
  if (n_target_ == 0 || n_nontarget_ == 0) {
    throw DataError(fmt::format(
        "EER/minDCF need at least one target and one non-target trial, got {} target and {} non-target",
        n_target_, n_nontarget_));
  }
  const bool target_floats = CheckedAllExactFloats(target_scores, "target");
  if (CheckedAllExactFloats(nontarget_scores, "non-target") && target_floats) {
    MergeSorted<std::uint32_t, float>(target_scores, nontarget_scores, &scores_, &is_target_);
  } else {
    MergeSorted<std::uint64_t, double>(target_scores, nontarget_scores, &scores_, &is_target_);
  }
}

double SortedScores::Threshold(std::int64_t k) const {
  if (k < 0 || k > size()) throw std::out_of_range(fmt::format("DET point {} outside [0, {}]", k, size()));
  return k == 0 ? scores_[0] - 0.001 : scores_[static_cast<std::size_t>(k - 1)];
}

EerResult SortedScores::Eer() const {
  const double nt = static_cast<double>(n_target_);
  const double nn = static_cast<double>(n_nontarget_);
  const std::int64_t n = size();
  std::int64_t t = 0;
  double best = std::numeric_limits<double>::infinity();
  EerResult result;
  for (std::int64_t k = 0; k <= n; ++k) {
    if (k > 0) t += is_target_[static_cast<std::size_t>(k - 1)];
    const double frr = static_cast<double>(t) / nt;
    const double far = static_cast<double>(n_nontarget_ - (k - t)) / nn;
    const double diff = std::fabs(frr - far);
    if (diff < best) {
      best = diff;
      result.index = k;
      result.eer = (frr + far) / 2.0;
    }
  }
  result.threshold = Threshold(result.index);
  return result;
}

MinDcfResult SortedScores::MinDcf(const DcfParams& params) const {
  params.Validate();
  const double nt = static_cast<double>(n_target_);
  const double nn = static_cast<double>(n_nontarget_);
  const double c_miss = params.c_miss;
  const double c_fa = params.c_fa;
  const double p = params.p_target;
  const double q = 1.0 - p;
  const std::int64_t n = size();
  std::int64_t t = 0;
  double best = std::numeric_limits<double>::infinity();
  std::int64_t best_k = 0;
  for (std::int64_t k = 0; k <= n; ++k) {
    if (k > 0) t += is_target_[static_cast<std::size_t>(k - 1)];
    const double frr = static_cast<double>(t) / nt;
    const double far = static_cast<double>(n_nontarget_ - (k - t)) / nn;
    const double c_det = c_miss * frr * p + c_fa * far * q;
    if (c_det < best) {
      best = c_det;
      best_k = k;
    }
  }
  MinDcfResult result;
  result.params = params;
  result.index = best_k;
  result.threshold = Threshold(best_k);
  const double c_default = std::min(c_miss * p, c_fa * q);
  result.min_dcf = best / c_default;
  return result;
}

DetCurve SortedScores::Curve() const {
  const double nt = static_cast<double>(n_target_);
  const double nn = static_cast<double>(n_nontarget_);
  const std::int64_t n = size();
  DetCurve curve;
  curve.frr.resize(static_cast<std::size_t>(n + 1));
  curve.far.resize(static_cast<std::size_t>(n + 1));
  curve.thresholds.resize(static_cast<std::size_t>(n + 1));
  std::int64_t t = 0;
  for (std::int64_t k = 0; k <= n; ++k) {
    if (k > 0) t += is_target_[static_cast<std::size_t>(k - 1)];
    const auto i = static_cast<std::size_t>(k);
    curve.frr[i] = static_cast<double>(t) / nt;
    curve.far[i] = static_cast<double>(n_nontarget_ - (k - t)) / nn;
    curve.thresholds[i] = Threshold(k);
  }
  return curve;
}

EerResult ComputeEer(const std::vector<double>& target_scores, const std::vector<double>& nontarget_scores) {
  return SortedScores(target_scores, nontarget_scores).Eer();
}

MinDcfResult ComputeMinDcf(const std::vector<double>& target_scores,
                           const std::vector<double>& nontarget_scores, const DcfParams& params) {
  params.Validate();
  return SortedScores(target_scores, nontarget_scores).MinDcf(params);
}

DetCurve ComputeDetCurve(const std::vector<double>& target_scores, const std::vector<double>& nontarget_scores) {
  return SortedScores(target_scores, nontarget_scores).Curve();
}

void SplitScores(const std::vector<double>& scores, const std::vector<TrialLabel>& labels,
                 std::vector<double>* target_scores, std::vector<double>* nontarget_scores,
                 LabelCounts* counts) {
  if (scores.size() != labels.size()) {
    throw std::invalid_argument(
        fmt::format("SplitScores: {} scores but {} labels", scores.size(), labels.size()));
  }
  target_scores->clear();
  nontarget_scores->clear();
  std::int64_t n_tar = 0, n_other = 0;
  for (TrialLabel l : labels) {
    n_tar += l == TrialLabel::kTarget;
    n_other += l == TrialLabel::kOther;
  }
  const auto n = static_cast<std::int64_t>(labels.size());
  target_scores->reserve(static_cast<std::size_t>(n_tar));
  nontarget_scores->reserve(static_cast<std::size_t>(n - n_tar - n_other));
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (labels[i] == TrialLabel::kTarget) {
      target_scores->push_back(scores[i]);
    } else if (labels[i] == TrialLabel::kNonTarget) {
      nontarget_scores->push_back(scores[i]);
    }
  }
  if (counts != nullptr) {
    counts->n_target = n_tar;
    counts->n_nontarget = n - n_tar - n_other;
    counts->n_other = n_other;
  }
}

Metrics ComputeMetrics(const std::vector<double>& scores, const std::vector<TrialLabel>& labels,
                       const DcfParams& params) {
  params.Validate();
  std::vector<double> tar, non;
  Metrics metrics;
  SplitScores(scores, labels, &tar, &non, &metrics.counts);
  const SortedScores sorted(tar, non);
  metrics.eer = sorted.Eer();
  metrics.min_dcf = sorted.MinDcf(params);
  return metrics;
}

Metrics ComputeMetrics(const std::vector<double>& scores, const std::vector<std::string>& labels,
                       const DcfParams& params, const LabelVocabulary& vocabulary) {
  if (scores.size() != labels.size()) {
    throw std::invalid_argument(
        fmt::format("ComputeMetrics: {} scores but {} labels", scores.size(), labels.size()));
  }
  LabelCounts counts;
  const std::vector<TrialLabel> kinds = ClassifyLabels(labels, vocabulary, &counts);
  Metrics metrics = ComputeMetrics(scores, kinds, params);
  metrics.counts = std::move(counts);
  return metrics;
}

std::string FormatMetrics(const Metrics& metrics) {
  return fmt::format("EER = {:.4f}  minDCF = {:.4f}", metrics.eer.percent(), metrics.min_dcf.min_dcf);
}

}  // namespace asv::eval
