// Metrics of scores read as log-likelihood ratios (LLRs): Cllr, minCllr and the actual detection
// cost (actDCF), the application-independent and calibration-sensitive companions of EER and
// minDCF (metrics.h).
//
// Definitions (N. Brümmer and J. du Preez, "Application-independent evaluation of speaker
// detection", Computer Speech and Language 20, 2006; the BOSARIS Toolkit, N. Brümmer and
// E. de Villiers 2011, cllr.m, min_cllr.m, opt_loglr.m, pavx.m and fast_actDCF.m; NIST SRE
// evaluation plans for the detection cost):
//  * Cllr, in bits:
//      Cllr = 1 / (2 log 2) * ( mean over targets of log(1 + exp(-llr))
//                             + mean over non-targets of log(1 + exp(llr)) ).
//    0 for perfect, well-calibrated LLRs; 1 for a system that always says llr = 0; unbounded for
//    confidently wrong ones.
//  * minCllr: Cllr after the best monotonic recalibration of the scores. All scores are sorted
//    ascending (targets before non-targets within a tie), the pool-adjacent-violators algorithm
//    (PAV) fits the non-decreasing sequence of target posteriors closest to the 0/1 labels (tied
//    scores always end in one bin), and each bin's posterior p becomes the LLR
//    log(p / (1 - p)) - log(N_tar / N_non) (the empirical prior log-odds removed). Bins with p = 0
//    or 1 give -inf / +inf LLRs, which only ever meet trials of their own class and so cost
//    nothing. minCllr <= Cllr for any LLRs, and minCllr <= 1.
//  * actDCF at (p_target, c_miss, c_fa): the LLRs are thresholded at the Bayes decision threshold
//      theta = log( c_fa * (1 - p_target) / (c_miss * p_target) ),
//    a target trial is missed when llr < theta, a non-target accepted when llr >= theta, and
//      actDCF = (c_miss * p_target * P_miss + c_fa * (1 - p_target) * P_fa) / C_default,
//      C_default = min(c_miss * p_target, c_fa * (1 - p_target)),
//    the normalisation of minDCF in metrics.h (Kaldi's compute_min_dcf.py), so that
//    actDCF >= minDCF, with equality for perfectly calibrated LLRs.
// These metrics mean something only when the scores are calibrated LLRs; for raw cosine or PLDA
// scores Cllr and actDCF measure their miscalibration, while minCllr (like EER and minDCF) does
// not depend on calibration.
#pragma once

#include <cstdint>
#include <vector>

#include "asvcpp/eval/metrics.h"

namespace asv::eval {

/// log(1 + exp(x)), computed as max(x, 0) + log1p(exp(-|x|)) so that it neither overflows for
/// large x nor loses precision for large -x (+inf for +inf, 0 for -inf): the per-trial cost of
/// Cllr and of logistic-regression calibration (calibration.h).
double Softplus(double x);

/// The Bayes decision threshold log(c_fa * (1 - p_target) / (c_miss * p_target)) for LLR scores
/// (natural log). Throws std::invalid_argument when `params` is out of range.
double BayesThreshold(const DcfParams& params);

/// Actual detection cost of LLR scores at one operating point.
struct ActDcfResult {
  double act_dcf = 0.0;    ///< Normalised actual DCF (see the file comment), >= 0.
  double threshold = 0.0;  ///< The Bayes threshold the LLRs were compared with.
  double p_miss = 0.0;     ///< Fraction of target LLRs below the threshold.
  double p_fa = 0.0;       ///< Fraction of non-target LLRs at or above the threshold.
  DcfParams params;
};

/// Cllr, minCllr and actDCF at each requested operating point, for one set of scores.
struct LlrMetrics {
  double cllr = 0.0;      ///< Bits, >= 0.
  double min_cllr = 0.0;  ///< Bits, in [0, 1].
  std::vector<ActDcfResult> act_dcf;  ///< One per operating point, in the order asked for.
};

/// Cllr in bits of target LLRs ([n_tar]) and non-target LLRs ([n_non]); +-inf LLRs are allowed
/// (a confidently wrong one gives +inf). Throws DataError when either set is empty or an LLR is
/// NaN.
double Cllr(const std::vector<double>& target_llrs, const std::vector<double>& nontarget_llrs);

/// The PAV-optimal LLRs of the scores (see minCllr in the file comment): `target_llrs` [n_tar] and
/// `nontarget_llrs` [n_non] in the order of the inputs; values may be +-inf. O(n log n). Throws
/// DataError when either set is empty or a score is NaN.
void OptimalLlrs(const std::vector<double>& target_scores, const std::vector<double>& nontarget_scores,
                 std::vector<double>* target_llrs, std::vector<double>* nontarget_llrs);

/// minCllr in bits: Cllr of OptimalLlrs. O(n log n). Throws as OptimalLlrs.
double MinCllr(const std::vector<double>& target_scores, const std::vector<double>& nontarget_scores);

/// actDCF of LLR scores at `params` (see the file comment). O(n). Throws DataError when either set
/// is empty or an LLR is NaN, std::invalid_argument when `params` is out of range.
ActDcfResult ComputeActDcf(const std::vector<double>& target_llrs, const std::vector<double>& nontarget_llrs,
                           const DcfParams& params = {});

/// Cllr, minCllr and actDCF at every operating point of `operating_points`, scores read as LLRs.
/// Throws as Cllr, MinCllr and ComputeActDcf.
LlrMetrics ComputeLlrMetrics(const std::vector<double>& target_llrs, const std::vector<double>& nontarget_llrs,
                             const std::vector<DcfParams>& operating_points);

}  // namespace asv::eval
