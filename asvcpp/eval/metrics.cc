#include "asvcpp/eval/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

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

// `scores` (no NaN) sorted ascending, -0 as +0; 32-bit keys when every score is a float.
std::vector<double> SortedValues(const std::vector<double>& scores, bool exact_floats) {
  std::vector<double> out(scores.size());
  if (exact_floats) {
    const std::vector<std::uint32_t> keys = SortedKeys<std::uint32_t, float>(scores);
    for (std::size_t i = 0; i < keys.size(); ++i) out[i] = static_cast<double>(FromKey<float>(keys[i]));
  } else {
    const std::vector<std::uint64_t> keys = SortedKeys<std::uint64_t, double>(scores);
    for (std::size_t i = 0; i < keys.size(); ++i) out[i] = FromKey<double>(keys[i]);
  }
  return out;
}

// Whether the pivot `pivot` comes before the score `x` of the other class in the sorted sequence:
// on equal scores targets come first, so a target pivot comes before an equal non-target score and
// a non-target pivot after an equal target score.
template <bool kPivotsAreTargets>
bool PivotBefore(double pivot, double x) {
  return kPivotsAreTargets ? pivot <= x : pivot < x;
}

// Ranks scores of one class among the sorted scores of the other (the pivots): Before(x) = how
// many pivots come before x in the sorted sequence. A table over equal-width ranges of the
// pivots' scores (4 per pivot, at most 2^20) holds the first pivot of each range; a score is
// compared only with the pivots of its own range, and most ranges hold at most one, which costs
// one comparison and no branch. The range of a score never decreases with the score, which is all
// correctness needs: a pivot of a lower range is below x, one of a higher range above it. The
// ranges span the pivots' lowest to highest score, or their 0.1 % to 99.9 % quantiles when the
// extremes are infinite or lie far outside (scores beyond go to the first and last range); when
// even those coincide or are infinite, one range holds every pivot (a plain binary search).
template <bool kPivotsAreTargets>
class PivotRanks {
 public:
  explicit PivotRanks(const std::vector<double>& pivots) : pivots_(pivots) {
    const std::size_t p = pivots.size();
    const std::size_t tail = p / 1000;
    const double quantile_width = pivots[p - 1 - tail] - pivots[tail];
    const double full_width = pivots[p - 1] - pivots[0];
    const bool full = std::isfinite(full_width) && full_width <= 64 * quantile_width;
    lo_ = full ? pivots[0] : pivots[tail];
    const double width = full ? full_width : quantile_width;
    const std::size_t buckets =
        std::isfinite(width) && width > 0 ? std::clamp<std::size_t>(4 * p, 1, std::size_t{1} << 20) : 1;
    last_ = static_cast<std::uint32_t>(buckets - 1);
    last_range_ = static_cast<double>(last_);
    scale_ = buckets > 1 ? static_cast<double>(buckets) / width : 0.0;
    start_.resize(buckets + 1);
    std::size_t i = 0;
    for (std::uint32_t b = 0; b <= last_; ++b) {
      while (i < p && Bucket(pivots[i]) < b) ++i;
      start_[b] = static_cast<std::uint32_t>(i);
    }
    start_[buckets] = static_cast<std::uint32_t>(p);
    // A NaN after the last pivot: compared with it, no score comes after it.
    pivots_.push_back(std::numeric_limits<double>::quiet_NaN());
  }

  std::size_t Before(double x) const {
    const std::uint32_t b = Bucket(x);
    const std::uint32_t first = start_[b];
    const std::uint32_t n = start_[b + 1] - first;
    const double* base = pivots_.data() + first;
    if (n > 1) {  // branch-free binary search; the answer stays in [base, base + m]
      std::uint32_t m = n;
      while (m > 1) {
        const std::uint32_t half = m / 2;
        base += half * static_cast<std::uint32_t>(PivotBefore<kPivotsAreTargets>(base[half - 1], x));
        m -= half;
      }
    }
    // With n = 0, *base is a pivot of a higher range (or the NaN): never before x.
    return static_cast<std::size_t>(base - pivots_.data()) + PivotBefore<kPivotsAreTargets>(*base, x);
  }

 private:
  // Without branches on the score: the clamped (x - lo) * scale, which never decreases with x (lo
  // and scale are finite when there are several ranges, so no NaN).
  std::uint32_t Bucket(double x) const {
    if (last_ == 0) return 0;
    const double f = (x - lo_) * scale_;
    return static_cast<std::uint32_t>(std::min(std::max(f, first_range_), last_range_));
  }

  std::vector<double> pivots_;  // [p + 1], the last one NaN
  double lo_ = 0.0, scale_ = 0.0;
  std::uint32_t last_ = 0;
  // The clamp's bounds 0 and last_ as doubles in members: GCC compiles a clamp to these to maxsd and
  // minsd, but to a compare and branch for a literal 0.0 bound, and that branch mispredicts when
  // the scores lie on both sides of the pivots' lowest.
  double first_range_ = 0.0, last_range_ = 0.0;
  std::vector<std::uint32_t> start_;  // [buckets + 1]
};

// The lowest of `scores` (+infinity when empty). Throws DataError for the first NaN (`what` names
// the class). Eight running minima, so that no iteration waits for the one before; a NaN is only
// looked for when the comparisons saw one (x != x), on the way out.
double LowestChecked(const std::vector<double>& scores, const char* what) {
  constexpr std::size_t kLanes = 8;
  std::array<double, kLanes> low;
  low.fill(std::numeric_limits<double>::infinity());
  bool nan = false;
  const std::size_t n = scores.size(), body = n - n % kLanes;
  for (std::size_t i = 0; i < body; i += kLanes) {
    for (std::size_t l = 0; l < kLanes; ++l) {
      const double x = scores[i + l];
      nan |= x != x;
      low[l] = x < low[l] ? x : low[l];
    }
  }
  for (std::size_t i = body; i < n; ++i) {
    nan |= scores[i] != scores[i];
    low[0] = scores[i] < low[0] ? scores[i] : low[0];
  }
  if (nan) {
    const auto it = std::find_if(scores.begin(), scores.end(), [](double x) { return std::isnan(x); });
    throw DataError(fmt::format("{} score {} (0-based, of {}) is NaN", what, it - scores.begin(), n));
  }
  return *std::min_element(low.begin(), low.end());
}

// counts[j] = how many of `others` have exactly j pivots before them ([pivots.size() + 1]); also
// the lowest of `others`. Throws DataError for the first NaN (`what` names the class); the NaN
// check is a pass of its own, so that the counting loop has no exit and keeps its state in registers.
template <bool kPivotsAreTargets>
std::vector<std::int64_t> CountBetweenPivots(const std::vector<double>& pivots, const std::vector<double>& others,
                                             const char* what, double* lowest) {
  *lowest = LowestChecked(others, what);
  const PivotRanks<kPivotsAreTargets> ranks(pivots);
  std::vector<std::int64_t> counts(pivots.size() + 1, 0);
  for (const double x : others) ++counts[ranks.Before(x)];
  return counts;
}

// The scores of `others` that lie between pivots i - 1 and i of the sorted sequence.
template <bool kPivotsAreTargets>
std::vector<double> BetweenPivots(const std::vector<double>& pivots, const std::vector<double>& others,
                                  std::size_t i) {
  std::vector<double> out;
  for (double x : others) {
    if ((i == 0 || PivotBefore<kPivotsAreTargets>(pivots[i - 1], x)) &&
        (i == pivots.size() || !PivotBefore<kPivotsAreTargets>(pivots[i], x))) {
      out.push_back(x);
    }
  }
  return out;
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

SortedScores::SortedScores(std::vector<double> target_scores, std::vector<double> nontarget_scores)
    : n_target_(static_cast<std::int64_t>(target_scores.size())),
      n_nontarget_(static_cast<std::int64_t>(nontarget_scores.size())) {
  if (n_target_ == 0 || n_nontarget_ == 0) {
    throw DataError(fmt::format(
        "EER/minDCF need at least one target and one non-target trial, got {} target and {} non-target",
        n_target_, n_nontarget_));
  }
  constexpr std::int64_t kMaxPerClass = std::int64_t{1} << 32;  // keeps the EER argument in Eer() exact
  if (n_target_ > kMaxPerClass || n_nontarget_ > kMaxPerClass) {
    throw std::invalid_argument(fmt::format("EER/minDCF: more than 2^32 scores in one class ({} target, {} non-target)",
                                            n_target_, n_nontarget_));
  }
  pivots_are_targets_ = n_target_ <= n_nontarget_;
  std::vector<double>& pivots = pivots_are_targets_ ? target_scores : nontarget_scores;
  others_ = std::move(pivots_are_targets_ ? nontarget_scores : target_scores);
  const char* pivot_class = pivots_are_targets_ ? "target" : "non-target";
  const char* other_class = pivots_are_targets_ ? "non-target" : "target";
  pivots_ = SortedValues(pivots, CheckedAllExactFloats(pivots, pivot_class));
  double lowest_other = 0.0;
  const std::vector<std::int64_t> counts =
      pivots_are_targets_ ? CountBetweenPivots<true>(pivots_, others_, other_class, &lowest_other)
                          : CountBetweenPivots<false>(pivots_, others_, other_class, &lowest_other);
  // Pivot i follows the others with at most i pivots before them.
  position_.resize(pivots_.size());
  std::int64_t others_before = 0;
  for (std::size_t i = 0; i < pivots_.size(); ++i) {
    others_before += counts[i];
    position_[i] = static_cast<std::int64_t>(i) + others_before;
  }
  lowest_ = std::min(pivots_.front(), lowest_other);
}

SortedScores::Point SortedScores::At(std::int64_t k) const {
  // Pivots among the k lowest scores: those placed before k.
  const auto i = static_cast<std::int64_t>(std::lower_bound(position_.begin(), position_.end(), k) - position_.begin());
  return pivots_are_targets_ ? Point{i, k - i} : Point{k - i, i};
}

double SortedScores::Frr(const Point& p) const {
  return static_cast<double>(p.t) / static_cast<double>(n_target_);
}

double SortedScores::Far(const Point& p) const {
  return static_cast<double>(n_nontarget_ - p.m) / static_cast<double>(n_nontarget_);
}

double SortedScores::Threshold(std::int64_t k) const {
  if (k < 0 || k > size()) throw std::out_of_range(fmt::format("DET point {} outside [0, {}]", k, size()));
  if (k == 0) return lowest_ - 0.001;
  const std::int64_t place = k - 1;  // of the k-th lowest score
  const auto i = static_cast<std::size_t>(std::upper_bound(position_.begin(), position_.end(), place) -
                                          position_.begin());  // pivots at or before it
  if (i > 0 && position_[i - 1] == place) return pivots_[i - 1];
  // A score of the other class, between pivots i - 1 and i: the r-th lowest of those.
  const std::int64_t others_before_run = i == 0 ? 0 : position_[i - 1] - static_cast<std::int64_t>(i - 1);
  const auto r = static_cast<std::size_t>(place - static_cast<std::int64_t>(i) - others_before_run);
  std::vector<double> run = pivots_are_targets_ ? BetweenPivots<true>(pivots_, others_, i)
                                                : BetweenPivots<false>(pivots_, others_, i);
  std::nth_element(run.begin(), run.begin() + static_cast<std::ptrdiff_t>(r), run.end());
  const double x = run[r];
  return x == 0.0 ? 0.0 : x;
}

EerResult SortedScores::Eer() const {
  // FRR[k] - FAR[k] never decreases with k (each step raises t or m by one; rounding keeps the
  // order), so |FRR - FAR| falls to the sign change and rises after it: the sweep's first
  // minimiser is k_b, the first point with FRR - FAR >= 0 (k = n has 1 - 0), or the point before
  // it when that one is at least as close. No two points share a difference: they are at least
  // 1 / max(N_tar, N_non) >= 2^-32 apart, far more than the rounding of a difference of two
  // fractions (a few 2^-53).
  const auto diff = [this](std::int64_t k) {
    const Point p = At(k);
    return Frr(p) - Far(p);
  };
  const std::int64_t lo = FirstCrossing();
  EerResult result;
  result.index = std::fabs(diff(lo - 1)) <= std::fabs(diff(lo)) ? lo - 1 : lo;
  const Point p = At(result.index);
  result.eer = (Frr(p) + Far(p)) / 2.0;
  result.threshold = Threshold(result.index);
  return result;
}

std::int64_t SortedScores::FirstCrossing() const {
  std::int64_t lo = 1, hi = size();  // FRR - FAR = -1 at k = 0, 1 at k = n
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    const Point p = At(mid);
    if (Frr(p) - Far(p) >= 0.0) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

TieAwareEerResult SortedScores::TieAwareEer() const {
  // The merged curve's points are the points of the sorted sequence that end a tie group. The
  // first with FRR - FAR >= 0 ends the group of the k-th lowest score v (k = FirstCrossing(): the
  // points before k have FRR - FAR < 0, and the group's own points run from "all scores < v" to
  // "all scores <= v"); the point before it is "all scores < v", which is before k.
  const double v = Threshold(FirstCrossing());
  const auto pivots_below = static_cast<std::int64_t>(std::lower_bound(pivots_.begin(), pivots_.end(), v) -
                                                      pivots_.begin());
  const auto pivots_at_or_below = static_cast<std::int64_t>(std::upper_bound(pivots_.begin(), pivots_.end(), v) -
                                                            pivots_.begin());
  std::int64_t others_below = 0, others_equal = 0;
  for (const double x : others_) {
    others_below += x < v;
    others_equal += x == v;
  }
  const Point before = pivots_are_targets_ ? Point{pivots_below, others_below} : Point{others_below, pivots_below};
  const Point after = pivots_are_targets_ ? Point{pivots_at_or_below, others_below + others_equal}
                                          : Point{others_below + others_equal, pivots_at_or_below};
  const double frr_a = Frr(before), far_a = Far(before);
  const double frr_b = Frr(after), far_b = Far(after);
  const double gap_a = far_a - frr_a;  // > 0
  const double gap_b = frr_b - far_b;  // >= 0
  TieAwareEerResult result;
  result.threshold = v == 0.0 ? 0.0 : v;
  result.reject_fraction = std::clamp(gap_a / (gap_a + gap_b), 0.0, 1.0);
  result.eer = frr_a + result.reject_fraction * (frr_b - frr_a);
  result.tied_targets = after.t - before.t;
  result.tied_nontargets = after.m - before.m;
  return result;
}

bool TiesDecideEer(const EerResult& eer, const TieAwareEerResult& tie_aware) {
  if (tie_aware.tied_targets == 0 || tie_aware.tied_nontargets == 0) return false;
  const double difference = std::fabs(eer.eer - tie_aware.eer);
  return difference > kTiedEerAbsoluteTolerance || difference > kTiedEerRelativeTolerance * tie_aware.eer;
}

std::string DescribeTiedEer(const EerResult& eer, const TieAwareEerResult& tie_aware) {
  return fmt::format("tied scores decide the EER: {:.4f} % with targets before non-targets within a tie (ASVtorch), "
                     "{:.4f} % tie-aware ({} target and {} non-target scores equal {:.6g})",
                     eer.percent(), tie_aware.percent(), tie_aware.tied_targets, tie_aware.tied_nontargets,
                     tie_aware.threshold);
}

MinDcfResult SortedScores::MinDcf(const DcfParams& params) const {
  params.Validate();
  const double c_miss = params.c_miss;
  const double c_fa = params.c_fa;
  const double p = params.p_target;
  const double q = 1.0 - p;
  const auto c_det = [&](const Point& point) { return c_miss * Frr(point) * p + c_fa * Far(point) * q; };
  // C_det rises (or stays) across a target score and falls (or stays) across a non-target one, so
  // the sweep's first minimiser is the point just before a target score, k = 0 or k = n, or, on a
  // plateau, the first point of a run of non-target scores that has the run end's value.
  double best = std::numeric_limits<double>::infinity();
  std::int64_t best_k = 0;
  const auto consider = [&](std::int64_t k, double value, std::int64_t run_start) {
    if (!(value < best)) return;
    best = value;
    while (run_start < k) {  // C_det does not increase over [run_start, k]: first point <= value
      const std::int64_t mid = run_start + (k - run_start) / 2;
      if (c_det(At(mid)) <= value) {
        k = mid;
      } else {
        run_start = mid + 1;
      }
    }
    best_k = k;
  };
  const auto n_pivots = static_cast<std::int64_t>(pivots_.size());
  if (pivots_are_targets_) {
    // The point before target i ends the run of non-targets since target i - 1.
    for (std::int64_t i = 0; i < n_pivots; ++i) {
      const std::int64_t k = position_[static_cast<std::size_t>(i)];
      const std::int64_t run_start = i == 0 ? 0 : position_[static_cast<std::size_t>(i - 1)] + 1;
      consider(k, c_det(Point{i, k - i}), run_start);
    }
    consider(size(), c_det(Point{n_target_, n_nontarget_}), position_.back() + 1);
  } else {
    // Every point after a non-target score, and k = 0: the others follow a target score.
    consider(0, c_det(Point{0, 0}), 0);
    for (std::int64_t i = 0; i < n_pivots; ++i) {
      const std::int64_t k = position_[static_cast<std::size_t>(i)] + 1;
      consider(k, c_det(Point{k - (i + 1), i + 1}), k);
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

void SortedScores::SortedSequence(std::vector<double>* scores, std::vector<std::uint8_t>* is_target) const {
  const std::vector<double>& tar = pivots_are_targets_ ? pivots_ : others_;
  const std::vector<double>& non = pivots_are_targets_ ? others_ : pivots_;
  // No NaN is left (the constructor checked), so this only decides the key width.
  if (CheckedAllExactFloats(tar, "target") && CheckedAllExactFloats(non, "non-target")) {
    MergeSorted<std::uint32_t, float>(tar, non, scores, is_target);
  } else {
    MergeSorted<std::uint64_t, double>(tar, non, scores, is_target);
  }
}

DetCurve SortedScores::Curve() const {
  std::vector<double> scores;
  std::vector<std::uint8_t> is_target;
  SortedSequence(&scores, &is_target);
  const std::int64_t n = size();
  DetCurve curve;
  curve.frr.resize(static_cast<std::size_t>(n + 1));
  curve.far.resize(static_cast<std::size_t>(n + 1));
  curve.thresholds.resize(static_cast<std::size_t>(n + 1));
  Point p{0, 0};
  for (std::int64_t k = 0; k <= n; ++k) {
    const auto i = static_cast<std::size_t>(k);
    if (k > 0) (is_target[i - 1] ? p.t : p.m) += 1;
    curve.frr[i] = Frr(p);
    curve.far[i] = Far(p);
    curve.thresholds[i] = k == 0 ? scores[0] - 0.001 : scores[i - 1];
  }
  return curve;
}

EerResult ComputeEer(const std::vector<double>& target_scores, const std::vector<double>& nontarget_scores) {
  return SortedScores(target_scores, nontarget_scores).Eer();
}

TieAwareEerResult ComputeTieAwareEer(const std::vector<double>& target_scores,
                                     const std::vector<double>& nontarget_scores) {
  return SortedScores(target_scores, nontarget_scores).TieAwareEer();
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
  const SortedScores sorted(std::move(tar), std::move(non));
  metrics.eer = sorted.Eer();
  metrics.tie_aware_eer = sorted.TieAwareEer();
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
