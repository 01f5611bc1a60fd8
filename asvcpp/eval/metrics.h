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
  EerResult eer;
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

/// EER and minDCF for scored trials in one sort (ASVtorch compute_eer + compute_min_dcf).
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
