// Scoring trial lists with a Scorer (ASVtorch asvtorch/src/evaluation/scoring.py,
// score_trials_plda; reference section 8.4).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "asvcpp/backend/scorer.h"
#include "asvcpp/base/matrix.h"
#include "asvcpp/eval/score_file.h"

namespace asv::backend {

/// Field names and defaults follow ASVtorch's `backend` settings group.
struct ScoringOptions {
  /// All-vs-all scoring is used when n_left * n_right <= this (unique left and right vectors);
  /// otherwise trials are scored pairwise in chunks. One rule (<=) everywhere: ASVtorch used '<'
  /// in scoring.py and '<=' in Plda.score_all_vs_all_chunked. Also bounds the size of any score
  /// matrix held in memory (adaptive s-norm). Default 100,000,000 (400 MB of float32 scores).
  std::int64_t max_all_vs_all_score_count = 100'000'000;
  /// Trials per chunk in pairwise scoring. Default 50,000.
  std::int64_t pairwise_scoring_chunk_size = 50'000;

  /// Throws ConfigError when a value is < 1.
  void Validate() const;
};

/// One trial as two row indices into an embedding matrix.
struct TrialIndex {
  std::int64_t left = 0;
  std::int64_t right = 0;
};

/// Row indices of each trial's ids in `ids` (the embedding matrix's row names, e.g. utterance
/// ids). Throws DataError naming trials.path:line and the id when an id is not in `ids`, and
/// DataError when `ids` has a duplicate.
std::vector<TrialIndex> IndexTrials(const eval::TrialList& trials, const std::vector<std::string>& ids);

/// Scores trials; returns [n_trials] scores in trial order.
/// embeddings: [n, D] (row i = embedding i); trials index its rows.
/// Strategy (scores agree to float32 rounding either way): with n_left / n_right the numbers of
/// distinct left / right rows, when n_left * n_right <= max_all_vs_all_score_count one all-vs-all
/// matrix is scored and each trial's entry picked; otherwise every distinct vector is prepared
/// once and trials are scored pairwise, pairwise_scoring_chunk_size at a time.
/// Throws std::out_of_range when an index is outside [0, n), std::invalid_argument when D does
/// not fit the scorer, ConfigError for bad options.
std::vector<float> ScoreTrials(const Scorer& scorer, const Matrix& embeddings, const std::vector<TrialIndex>& trials,
                               const ScoringOptions& options = {});

/// ScoreTrials with the strategy forced (for tests and benchmarks).
enum class ScoringStrategy { kAuto, kAllVsAll, kPairwise };
std::vector<float> ScoreTrials(const Scorer& scorer, const Matrix& embeddings, const std::vector<TrialIndex>& trials,
                               const ScoringOptions& options, ScoringStrategy strategy);

}  // namespace asv::backend
