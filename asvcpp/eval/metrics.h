// Speaker-verification metrics: DET curve, equal error rate (EER) and minimum detection cost
// (minDCF), computed exactly as ASVtorch does (asvtorch/src/evaluation/eval_metrics.py).
//
// Definitions (ASVtorch's eval_metrics.py):
//  * All scores, targets first then non-targets, are sorted ascending with a stable sort, so tied
//    scores are NOT merged and, within a tie, targets come before non-targets.
//  * For k = 0..n (n = N_tar + N_non), with t_k = number of targets among the k lowest scores:
//      FRR[k] = t_k / N_tar                        (false rejection / miss rate)
//      FAR[k] = (N_non - (k - t_k)) / N_non        (false acceptance / false-alarm rate)
//      threshold[0] = lowest score - 0.001,  threshold[k] = k-th lowest score (k >= 1).
//    Operating point k rejects the k lowest scores.
//  * EER: k* = the FIRST index minimising |FRR[k] - FAR[k]| (no interpolation);
//    EER = (FRR[k*] + FAR[k*]) / 2, threshold = threshold[k*].
//  * minDCF (NIST SRE detection cost function, normalised as in Kaldi's compute_min_dcf.py):
//      C_det(k) = c_miss * FRR[k] * p_target + c_fa * FAR[k] * (1 - p_target),
//      minDCF = min_k C_det(k) / C_default,  C_default = min(c_miss * p_target, c_fa * (1 - p_target)),
//    the FIRST minimum's threshold is reported.
//  * Tie-aware EER (SortedScores::TieAwareEer), beside ASVtorch's: the EER of the DET curve with
//    tied scores merged, linearly interpolated. Tied scores form one threshold group: with the
//    distinct scores v_1 < ... < v_G, point j = 0..G rejects the scores <= v_j (j = 0: none),
//      FRR_j = #{targets <= v_j} / N_tar,  FAR_j = #{non-targets > v_j} / N_non,
//    and the curve is the straight segments between consecutive points. Segment j - 1 -> j is
//    what threshold v_j gives when a fraction a in [0, 1] of the trials scoring exactly v_j is
//    rejected at random: the expected (FRR, FAR) of random tie-breaking is the segment's point at
//    a (T. Fawcett, "An introduction to ROC analysis", Pattern Recognition Letters 27, 2006,
//    section 5: ROC points only between distinct scores, the diagonal across a tie the expected
//    performance; F. Provost and T. Fawcett, "Robust classification for imprecise environments",
//    Machine Learning 42, 2001: any point of a segment between two operating points is reached
//    by choosing between them at random). The tie-aware EER is the FRR = FAR of the segment
//    where FRR - FAR changes sign: with j the first point with FRR_j >= FAR_j,
//      a = (FAR_{j-1} - FRR_{j-1}) / ((FAR_{j-1} - FRR_{j-1}) + (FRR_j - FAR_j)),
//      EER_tie = FRR_{j-1} + a * (FRR_j - FRR_{j-1})   (= FAR_{j-1} + a * (FAR_j - FAR_{j-1})).
//    It does not depend on the order of tied scores (ASVtorch's EER does: with all scores equal
//    it is 100 %, the tie-aware one 50 %). Without ties it is the linear interpolation of
//    ASVtorch's DET curve between the two points that bracket FRR = FAR. It lies on or above
//    BOSARIS's ROC-convex-hull EER (rocch2eer.m), which also crosses over gaps between
//    untied scores.
// The floating-point operations are the same as NumPy's in ASVtorch, in the same order, so the
// results are bit-identical to ASVtorch's on the same (float64) scores
// (tests/asvcpp/eval/golden/metrics_golden.json, made by tools/golden/make_metric_golden.py).
//
// How (metrics.cc): the sorted sequence is never built for EER and minDCF. Only the smaller class
// (usually the targets) is sorted (LSD radix sort on the order-preserving bit pattern); each score
// of the other class is placed between two of them (a table over equal-width score ranges, then a
// short binary search), which gives every DET point's (t_k, k - t_k) from the sorted scores' ranks.
// |FRR - FAR| is V-shaped along k (FRR - FAR never decreases, also after rounding), so the EER is
// one binary search for the sign change; C_det falls only across non-target scores, so minDCF
// looks at the points just before each target score (and, where rounding leaves C_det flat over a
// run of non-target scores, searches that run for its first point of the same cost). Both give the
// same k and the same doubles as a sweep over all n + 1 points, which the tests check against a
// straightforward transcription.
// Cost: O(n + p log p) once (p = the smaller class's size), then O(log n log p) for the EER and
// O(p log n) per minDCF, plus one O(n) pass for a threshold that is a score of the larger class.
// The tie-aware EER reuses the EER's search and adds at most two O(n - p) passes over the larger
// class (the crossing's score and the counts below and at it), no sort.
// The DET curve and the sorted sequence are built on request (O(n log n)).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "asvcpp/eval/trial_label.h"

namespace asv::eval {

/// Parameters of the detection cost function. ASVtorch's recipes use p_target = 0.05,
/// c_miss = c_fa = 1 (NIST SRE and VoxSRC use p_target 0.01 or 0.001).
struct DcfParams {
  double p_target = 0.05;  ///< Prior probability of a target trial, in (0, 1).
  double c_miss = 1.0;     ///< Cost of a miss (false rejection), > 0.
  double c_fa = 1.0;       ///< Cost of a false acceptance, > 0.

  /// Throws std::invalid_argument when a value is out of range (or not finite).
  void Validate() const;
};

/// Equal error rate. `eer` is a FRACTION in [0, 1]; multiply by 100 (or call percent()) for the
/// percentage that ASVtorch's recipes print.
struct EerResult {
  double eer = 0.0;        ///< Fraction in [0, 1].
  double threshold = 0.0;  ///< threshold[k*] (see the file comment).
  std::int64_t index = 0;  ///< k*, the DET point, in [0, n].
  double percent() const { return 100.0 * eer; }
};

/// Tie-aware EER (see the file comment): tied scores as one threshold group, linearly
/// interpolated.
struct TieAwareEerResult {
  double eer = 0.0;        ///< Fraction in [0, 1].
  /// The score v_j of the tie group where FRR = FAR: the EER rejects the scores below it and the
  /// fraction `reject_fraction` of the trials scoring exactly it.
  double threshold = 0.0;
  double reject_fraction = 0.0;      ///< a in [0, 1] (see the file comment).
  std::int64_t tied_targets = 0;     ///< Target scores equal to `threshold` (>= 0).
  std::int64_t tied_nontargets = 0;  ///< Non-target scores equal to `threshold` (>= 0).
  double percent() const { return 100.0 * eer; }
};

/// Tolerance of TiesDecideEer: 0.1 percentage point, as a fraction.
inline constexpr double kTiedEerAbsoluteTolerance = 0.001;
/// Tolerance of TiesDecideEer relative to the tie-aware EER: 10 %.
inline constexpr double kTiedEerRelativeTolerance = 0.1;

/// Whether tied scores decide ASVtorch's EER `eer` of the same scores as `tie_aware`: the tie
/// group at the tie-aware EER's crossing holds target and non-target scores (only then does the
/// order within a tie move the DET points around the crossing) and the two EERs differ by more
/// than kTiedEerAbsoluteTolerance or by more than kTiedEerRelativeTolerance of the tie-aware one.
/// Without such a tie they may still differ, by up to about one DET step (1 / min(N_tar, N_non)),
/// from interpolating (the tie-aware one) or not (ASVtorch's). Does not throw.
bool TiesDecideEer(const EerResult& eer, const TieAwareEerResult& tie_aware);

/// The warning for TiesDecideEer: "tied scores decide the EER: 50.0000 % with targets before
/// non-targets within a tie (ASVtorch), 37.5000 % tie-aware (2 target and 2 non-target scores
/// equal 0.5)". Does not throw.
std::string DescribeTiedEer(const EerResult& eer, const TieAwareEerResult& tie_aware);

/// Normalised minimum detection cost.
struct MinDcfResult {
  double min_dcf = 0.0;    ///< min C_det / C_default (>= 0; 1 means "no better than a fixed decision").
  double threshold = 0.0;  ///< threshold of the first minimising DET point.
  std::int64_t index = 0;  ///< That DET point, in [0, n].
  DcfParams params;
};

/// All DET points, each vector of length n + 1 (see the file comment).
struct DetCurve {
  std::vector<double> frr;         ///< False rejection rate, fraction, ascending from 0 to 1.
  std::vector<double> far;         ///< False acceptance rate, fraction, descending from 1 to 0.
  std::vector<double> thresholds;  ///< threshold[k].
};

/// EER, one minDCF and the trial counts: what a recipe reports for one trial list.
struct Metrics {
  EerResult eer;                ///< ASVtorch's (pessimistic within ties).
  TieAwareEerResult tie_aware_eer;  ///< Tie-aware, beside it.
  MinDcfResult min_dcf;
  LabelCounts counts;  ///< Trials per class; n_other counts trials left out of the metrics.
};

/// Target and non-target scores ranked once; each metric is then a few binary searches or one pass
/// over the smaller class. Build one when several metrics (e.g. minDCF at several p_target) are
/// needed for the same scores.
class SortedScores {
 public:
  /// Takes the scores by value: pass them with std::move to keep the larger class without a copy.
  /// Throws DataError when either set is empty or a score is NaN (+-inf are allowed), and
  /// std::invalid_argument for more than 2^32 scores in one class.
  SortedScores(std::vector<double> target_scores, std::vector<double> nontarget_scores);

  std::int64_t n_target() const { return n_target_; }
  std::int64_t n_nontarget() const { return n_nontarget_; }
  std::int64_t size() const { return n_target_ + n_nontarget_; }

  /// EER, its DET point and threshold as defined in the file comment (first minimiser of
  /// |FRR - FAR|, no interpolation). O(log n log p) plus the threshold. Does not throw.
  EerResult Eer() const;
  /// Tie-aware EER (see the file comment): the crossing's tie group and its rejected fraction.
  /// The same O(log n log p) search as Eer(), plus at most two O(n - p) passes. Does not throw.
  TieAwareEerResult TieAwareEer() const;
  /// minDCF (Kaldi's normalisation, see the file comment) at `params`, its DET point and threshold.
  /// O(p log n) plus the threshold. Throws std::invalid_argument when `params` is out of range.
  MinDcfResult MinDcf(const DcfParams& params = {}) const;
  /// All n + 1 DET points: sorts the whole sequence, O(n log n).
  DetCurve Curve() const;
  /// threshold[k] for k in [0, n]: O(log n), or one O(n) pass when the k-th lowest score belongs to
  /// the larger class. Throws std::out_of_range for k outside [0, n].
  double Threshold(std::int64_t k) const;

  /// The whole sorted sequence: ascending scores ([n]) and whether each one is a target score
  /// ([n], 1 = target); -0 is returned as +0. Sorts on every call, O(n log n).
  void SortedSequence(std::vector<double>* scores, std::vector<std::uint8_t>* is_target) const;

 private:
  struct Point {
    std::int64_t t;  // target scores among the k lowest
    std::int64_t m;  // non-target scores among the k lowest
  };
  Point At(std::int64_t k) const;
  // The first DET point k in [1, n] with FRR[k] - FAR[k] >= 0 (binary search).
  std::int64_t FirstCrossing() const;
  double Frr(const Point& p) const;
  double Far(const Point& p) const;

  std::int64_t n_target_ = 0;
  std::int64_t n_nontarget_ = 0;
  bool pivots_are_targets_ = true;      // the smaller class (the targets on a tie)
  std::vector<double> pivots_;          // its scores sorted ascending, -0 as +0 [p]
  std::vector<std::int64_t> position_;  // position_[i]: 0-based place of pivots_[i] in the sorted sequence [p]
  std::vector<double> others_;          // the other class's scores, in input order [n - p]
  double lowest_ = 0.0;                 // the lowest score
};

/// EER of target vs. non-target scores (ASVtorch _compute_eer). Throws as SortedScores.
EerResult ComputeEer(const std::vector<double>& target_scores, const std::vector<double>& nontarget_scores);

/// minDCF (ASVtorch _compute_min_dcf_tar_nontar). Throws as SortedScores and DcfParams::Validate.
MinDcfResult ComputeMinDcf(const std::vector<double>& target_scores,
                           const std::vector<double>& nontarget_scores, const DcfParams& params = {});

/// DET curve (ASVtorch _compute_det_curve). Throws as SortedScores.
DetCurve ComputeDetCurve(const std::vector<double>& target_scores, const std::vector<double>& nontarget_scores);

/// Splits `scores` ([n]) by `labels` ([n]); kOther trials are skipped but counted in `counts`.
/// Throws std::invalid_argument when the lengths differ.
void SplitScores(const std::vector<double>& scores, const std::vector<TrialLabel>& labels,
                 std::vector<double>* target_scores, std::vector<double>* nontarget_scores,
                 LabelCounts* counts = nullptr);

/// Tie-aware EER of target vs. non-target scores (SortedScores::TieAwareEer). Throws as
/// SortedScores.
TieAwareEerResult ComputeTieAwareEer(const std::vector<double>& target_scores,
                                     const std::vector<double>& nontarget_scores);

/// EER (ASVtorch's and tie-aware) and minDCF for scored trials in one sort (ASVtorch compute_eer +
/// compute_min_dcf).
/// `scores` and `labels` are [n] in trial order. Throws std::invalid_argument on a length
/// mismatch, DataError when a class is empty or a score is NaN.
Metrics ComputeMetrics(const std::vector<double>& scores, const std::vector<TrialLabel>& labels,
                       const DcfParams& params = {});

/// Same, with label strings classified by `vocabulary`; counts.other_labels names the unknown ones.
Metrics ComputeMetrics(const std::vector<double>& scores, const std::vector<std::string>& labels,
                       const DcfParams& params = {},
                       const LabelVocabulary& vocabulary = LabelVocabulary::Default());

/// ASVtorch's result line: "EER = 3.1234  minDCF = 0.2345" (EER in percent, 4 decimals).
std::string FormatMetrics(const Metrics& metrics);

}  // namespace asv::eval
