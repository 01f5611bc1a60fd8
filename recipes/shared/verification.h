// Scoring trials of new audio against a finished system, exactly as its stage 9 scores its trial
// lists: the system's back end rebuilt from its stored embeddings and the run's backend.*
// settings (BuildSystemBackend), the decision thresholds of <system>/backend/thresholds.json
// (ThresholdsFile). Used by `asvrun verify`; the embeddings of the new audio come from the
// system's network and front end (the caller's part).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/backend/evaluation.h"
#include "recipes/shared/recipe_stages.h"

namespace asv::recipes::shared {

/// The decision at one threshold.
struct Decision {
  std::string kind;      ///< "bayes" (calibrated LLRs) or "eer" (the fallback for uncalibrated scores)
  double p_target = 0;   ///< operating point of a Bayes threshold (0 for "eer")
  std::string list;      ///< trial list whose EER gave an "eer" threshold ("" for "bayes")
  double threshold = 0;  ///< in score units
  bool accept = false;   ///< score >= threshold
};

/// One scored trial.
struct VerificationResult {
  std::string enrollment;  ///< id of the enrollment side (several files averaged: their ids joined by '+')
  std::string test;
  double score = 0;        ///< the final score as stage 9 writes it: a calibrated LLR when `calibrated`
  bool calibrated = false;
  std::vector<Decision> decisions;  ///< Bayes thresholds (calibrated), else the EER threshold of each list
};

/// The decision thresholds a finished system stored (ThresholdsFile). Throws DataError naming the
/// file when it is missing (stage 9 has not run with this asvcpp) or malformed.
struct SystemThresholds {
  bool calibrated = false;
  std::vector<Decision> bayes;  ///< one per operating point (accept unset)
  std::vector<Decision> eer;    ///< one per trial list (accept unset)
};
SystemThresholds ReadThresholds(const std::filesystem::path& system_folder);

/// One enrollment side: the raw embeddings of its files ([n >= 1, D]) with their ids and speech
/// durations (seconds; empty when unknown). Several files are averaged into one embedding (the
/// mean of the raw embeddings, before the back end's processing) with the sum of their durations.
struct EnrollmentSide {
  backend::Embeddings files;
};

/// Scores every test embedding (rows of `tests`) against every enrollment side through `system`'s
/// back end and decides at `thresholds`: results in enrollment-major order. The embeddings must be
/// of the system's network (the back end's dimension). Throws DataError for an empty side, an
/// embedding of another dimension, and what backend::Backend::Score throws (durations missing for
/// quality-aware calibration).
std::vector<VerificationResult> VerifyTrials(const SystemBackend& system, const SystemThresholds& thresholds,
                                             const std::vector<EnrollmentSide>& enrollments,
                                             const backend::Embeddings& tests);

}  // namespace asv::recipes::shared
