// Speaker-verification metrics: DET curve, equal error rate (EER) and minimum detection cost
// (minDCF), computed exactly as ASVtorch does (asvtorch/src/evaluation/eval_metrics.py).
//
// Definitions (ASVtorch, section 9 of shared/reference/asvtorch.md):
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
// Cost: O(n log n) for one sort (LSD radix sort on the order-preserving bit pattern of the
// doubles, then a merge), O(n) per metric afterwards.
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

/// Target and non-target scores sorted once; each metric is then one O(n) sweep. Build one when
/// several metrics (e.g. minDCF at several p_target) are needed for the same scores.
class SortedScores {
 public:
  /// Throws DataError when either set is empty or a score is NaN. +-inf are allowed.
  SortedScores(const std::vector<double>& target_scores, const std::vector<double>& nontarget_scores);

  std::int64_t n_target() const { return n_target_; }
  std::int64_t n_nontarget() const { return n_nontarget_; }
  std::int64_t size() const { return static_cast<std::int64_t>(scores_.size()); }

  EerResult Eer() const;
  MinDcfResult MinDcf(const DcfParams& params = {}) const;
  DetCurve Curve() const;
  /// threshold[k] for k in [0, n].
  double Threshold(std::int64_t k) const;

  /// Sorted scores, ascending ([n]) and whether each one is a target score ([n], 1 = target).
  const std::vector<double>& sorted_scores() const { return scores_; }
  const std::vector<std::uint8_t>& sorted_is_target() const { return is_target_; }

 private:
  std::int64_t n_target_ = 0;
  std::int64_t n_nontarget_ = 0;
  std::vector<double> scores_;
  std::vector<std::uint8_t> is_target_;
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
