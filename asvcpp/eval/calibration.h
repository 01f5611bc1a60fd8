// Linear logistic-regression calibration of verification scores into log-likelihood ratios, with
// optional quality measures (quality-aware calibration, QMF).
//
// A trial is described by a feature vector x ([dim] doubles: the score, possibly normalised by
// s-norm or AS-norm, then quality measures such as log durations and embedding magnitudes); the
// calibrated LLR is  llr = w . x + b.  (w, b) minimise the prior-weighted cross-entropy of
// BOSARIS's train_linear_calibration (N. Brümmer and E. de Villiers, the BOSARIS Toolkit, 2011;
// N. Brümmer and J. du Preez, "Application-independent evaluation of speaker detection", CSL 2006):
//   J(w, b) = prior / N_tar * sum_tar log(1 + exp(-(llr + logit(prior))))
//           + (1 - prior) / N_non * sum_non log(1 + exp(llr + logit(prior)))
//           + l2 / 2 * |w|^2,
// which at prior = 0.5 and l2 = 0 is Cllr * log 2 of the calibrated scores (the objective
// WeSpeaker's wespeaker/bin/score_calibration.py minimises with L-BFGS). The logit(prior) offset
// makes the output an LLR whatever prior the calibration was trained at. Quality-aware
// calibration: S. Thienpondt, B. Desplanques and K. Demuynck, "The IDLAB VoxSRC-20 submission:
// large margin fine-tuning and quality-aware score calibration in DNN based speaker verification",
// ICASSP 2021.
//
// Training: Newton's method on standardised features (each feature centred and scaled by its
// standard deviation over the training trials, constant features left unscaled) with a
// backtracking line search, so it converges in a few iterations and gives the same (w, b) for
// any affine rescaling of a feature. The small default l2 keeps (w, b) finite on separable data
// and does not noticeably move the optimum otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace asv::eval {

struct CalibrationOptions {
  double prior = 0.5;     ///< Target prior of the training objective, in (0, 1).
  double l2 = 1e-6;       ///< Ridge penalty on the standardised weights (not on the bias), >= 0.
  int max_iterations = 100;     ///< Newton iterations, >= 1.
  double tolerance = 1e-12;     ///< Stops when the Newton decrement^2 / 2 falls below this.

  /// Throws std::invalid_argument naming the field when a value is out of range.
  void Validate() const;
};

/// llr = weights . x + bias, for feature vectors of weights.size() values.
struct LinearCalibration {
  std::vector<std::string> feature_names;  ///< [dim] names of the features, for reading it back.
  std::vector<double> weights;             ///< [dim]
  double bias = 0.0;
  double prior = 0.5;    ///< The prior it was trained at.
  int iterations = 0;    ///< Newton iterations training took.
  double objective = 0;  ///< J(w, b) at the solution (nats).

  std::size_t dim() const { return weights.size(); }
  /// The LLR of one feature vector ([dim]). Throws std::invalid_argument on a length mismatch.
  double Apply(const std::vector<double>& features) const;
  /// LLRs of `features`, [n, dim] row-major; returns [n]. Throws std::invalid_argument when the
  /// size is not a multiple of dim().
  std::vector<double> ApplyAll(const std::vector<double>& features) const;
};

/// Trains a LinearCalibration from the features of target trials ([n_tar, dim] row-major) and of
/// non-target trials ([n_non, dim]); `feature_names` ([dim]) are stored with it. Throws DataError
/// when a class is empty or a value is not finite, std::invalid_argument when a size is not a
/// multiple of dim or the options are out of range, and std::runtime_error when Newton's method
/// does not converge within max_iterations (message gives the last decrement).
LinearCalibration TrainLinearCalibration(const std::vector<double>& target_features,
                                         const std::vector<double>& nontarget_features,
                                         const std::vector<std::string>& feature_names,
                                         const CalibrationOptions& options = {});

/// J(w, b) of `calibration`'s weights on these trials at `prior` and `l2` (see the file comment;
/// the l2 term is on the raw weights here). Throws as TrainLinearCalibration.
double CalibrationObjective(const LinearCalibration& calibration, const std::vector<double>& target_features,
                            const std::vector<double>& nontarget_features, double prior, double l2 = 0.0);

/// What a trial side contributes to the quality measures of quality-aware calibration.
struct TrialSideQuality {
  double duration = 0;   ///< Speech duration in seconds (> 0).
  double magnitude = 0;  ///< Euclidean norm of the embedding before length normalisation.
};

/// Quality-aware feature vector of one trial: {score, log min(d_e, d_t), log max(d_e, d_t),
/// min(m_e, m_t), max(m_e, m_t)} with durations capped at `max_duration` seconds (WeSpeaker caps
/// at 20 s); symmetric in enrollment and test, as the scores are. Throws DataError when a
/// duration is not positive.
std::vector<double> QualityFeatures(double score, const TrialSideQuality& enrollment, const TrialSideQuality& test,
                                    double max_duration = 20.0);
/// Names of QualityFeatures' values, in order.
std::vector<std::string> QualityFeatureNames();

/// The verdict of CheckCalibration on a trained calibration.
struct CalibrationCheck {
  bool degenerate = false;  ///< The calibrated LLRs would invert, ignore or carry no information of the score.
  std::string reason;       ///< Why it is degenerate, one sentence; empty when it is not.
  double score_weight = 0;  ///< weights[0], the weight of the score feature.
  double training_cllr = 0; ///< Cllr (bits) of the calibrated training trials that was checked.
  double margin = 0;        ///< Bits below 1 that training_cllr had to reach (see CheckCalibration).
};

/// Default of CheckCalibration's `min_information_bits`: 0.01 bit.
inline constexpr double kMinCalibrationInformationBits = 0.01;

/// Whether `calibration` (trained on `n_target` target and `n_nontarget` non-target trials whose
/// feature 0 is the verification score, as both the linear and the quality-aware features have
/// it) is degenerate, i.e. applying it would make the scores worse than leaving them alone. It is
/// degenerate when
///  * the score's weight weights[0] <= 0: llr = w . x + b then does not increase with the score,
///    so it ranks the trials in reverse (w < 0: the calibrated scores' EER is about 1 - EER of the
///    raw ones) or ignores the score (w = 0); a higher verification score means "more likely the
///    same speaker", and a calibration must keep that order (a monotone rising map; N. Brümmer
///    and J. du Preez, "Application-independent evaluation of speaker detection", Computer Speech
///    and Language 20, 2006); or
///  * `training_cllr`, the Cllr in bits of the calibrated training trials (llr_metrics.h), is not
///    below 1 - margin: Cllr = 1 bit is the cost of the non-informative system that always says
///    llr = 0 (Brümmer and du Preez 2006), which logistic regression with a bias reaches on any
///    trials, so a trained Cllr within the margin of it means that the features, the score among
///    them, told the training (almost) nothing about the trials.
/// margin = max(`min_information_bits`, (k + 4 sqrt(2 k)) / (2 ln 2 N_eff)) with k = dim() + 1
/// fitted parameters and N_eff = 4 / (1 / n_target + 1 / n_nontarget) (N_eff = N for N balanced
/// trials): on trials that carry no information, twice the fit's log-likelihood gain,
/// 2 ln 2 N_eff (1 - Cllr), is about chi-square with k degrees of freedom (Wilks' theorem), so
/// the second term is its mean plus 4 standard deviations: chance fits on few trials stay above
/// 1 - margin (about 0.84 bit for 12 target and 264 non-target trials; the first term rules with
/// the default 30,000 trials). A usable system's calibration trials have a Cllr far below 0.9 bit.
/// Throws std::invalid_argument when `calibration` has no weight, `min_information_bits` is
/// outside [0, 1) or a trial count is not positive, DataError when `training_cllr` is NaN.
CalibrationCheck CheckCalibration(const LinearCalibration& calibration, double training_cllr, std::int64_t n_target,
                                  std::int64_t n_nontarget,
                                  double min_information_bits = kMinCalibrationInformationBits);

/// What was done with a trained calibration, stored with it by SaveCalibration.
struct CalibrationUse {
  bool applied = true;           ///< Whether the scores were calibrated with it.
  CalibrationCheck check;        ///< CheckCalibration's verdict.
  std::int64_t n_target_trials = 0;     ///< Target trials it was trained on.
  std::int64_t n_nontarget_trials = 0;  ///< Non-target trials it was trained on.
};

/// Writes `calibration` as JSON to `path` (temporary file, then rename): "kind",
/// "feature_names", "weights", "bias", "prior", "iterations", "objective" and, with `use`,
/// "applied" (bool), "degenerate" (bool), "degenerate_reason" (string, "" when not degenerate),
/// "training_cllr" and "cllr_margin" (bits, CalibrationCheck), "n_target_trials" and
/// "n_nontarget_trials". Throws DataError naming the
/// path when it cannot be written.
void SaveCalibration(const LinearCalibration& calibration, const std::filesystem::path& path,
                     const CalibrationUse* use = nullptr);
/// Reads what SaveCalibration wrote (the fields of `use` are not read back). Throws DataError
/// naming the path when it is missing, malformed or inconsistent (weights and names of different
/// lengths, non-finite values).
LinearCalibration LoadCalibration(const std::filesystem::path& path);

}  // namespace asv::eval
