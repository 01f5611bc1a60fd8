// The enumerated `backend.*` settings, with their names. Header only, no LibTorch: asvcpp/enums/
// sits below both asv_settings and asv_backend, so that the BackendSettings fields hold these enums
// (their choices come from the tables below) without either folder including the other.
#pragma once

#include "asvcpp/base/enum_names.h"

namespace asv::backend {

/// The scoring back-end (`backend.scoring`).
enum class Scoring {
  kPlda,    ///< "plda": closed-form two-covariance PLDA
  kCosine,  ///< "cosine": cosine similarity
};
inline constexpr EnumName<Scoring> kScoringNames[] = {{Scoring::kPlda, "plda"}, {Scoring::kCosine, "cosine"}};
/// Name table of Scoring (enum_names.h).
constexpr const auto& EnumNames(Scoring) { return kScoringNames; }

/// The score normalisation of `backend.score_norm_method` (when `backend.score_norm` is on).
enum class ScoreNorm {
  kAdaptive,  ///< "as-norm": adaptive s-norm, statistics of each side's top-N cohort scores
  kPlain,     ///< "s-norm": symmetric normalisation with the statistics of the whole cohort
};
inline constexpr EnumName<ScoreNorm> kScoreNormNames[] = {{ScoreNorm::kAdaptive, "as-norm"},
                                                          {ScoreNorm::kPlain, "s-norm"}};
/// Name table of ScoreNorm (enum_names.h).
constexpr const auto& EnumNames(ScoreNorm) { return kScoreNormNames; }

/// What the score-normalisation cohort is made of (`backend.score_norm_cohort`).
enum class Cohort {
  kSpeakerMeans,   ///< "speaker_means": the mean embedding of each back-end speaker (WeSpeaker)
  kRandomVectors,  ///< "random_vectors": score_norm_full_cohort_size random back-end embeddings (ASVtorch)
};
inline constexpr EnumName<Cohort> kCohortNames[] = {{Cohort::kSpeakerMeans, "speaker_means"},
                                                    {Cohort::kRandomVectors, "random_vectors"}};
/// Name table of Cohort (enum_names.h).
constexpr const auto& EnumNames(Cohort) { return kCohortNames; }

/// Score calibration of the final scoring (`backend.calibration`).
enum class Calibration {
  kNone,     ///< "none": scores as the scorer (and score normalisation) give them
  kLinear,   ///< "linear": logistic regression on the score alone
  kQuality,  ///< "quality": quality-aware calibration on the score, log durations and magnitudes
};
inline constexpr EnumName<Calibration> kCalibrationNames[] = {
    {Calibration::kNone, "none"}, {Calibration::kLinear, "linear"}, {Calibration::kQuality, "quality"}};
/// Name table of Calibration (enum_names.h).
constexpr const auto& EnumNames(Calibration) { return kCalibrationNames; }

}  // namespace asv::backend
