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

/// Writes `calibration` as JSON to `path` (temporary file, then rename). Throws DataError naming
/// the path when it cannot be written.
void SaveCalibration(const LinearCalibration& calibration, const std::filesystem::path& path);
/// Reads what SaveCalibration wrote. Throws DataError naming the path when it is missing,
/// malformed or inconsistent (weights and names of different lengths, non-finite values).
LinearCalibration LoadCalibration(const std::filesystem::path& path);

}  // namespace asv::eval
