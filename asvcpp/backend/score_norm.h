// Adaptive symmetric score normalisation (adaptive s-norm), as in ASVtorch
// asvtorch/src/backend/score_normalization.py (reference section 8.5); the method is from
// Matejka et al., "Analysis of score normalization in multilingual speaker recognition",
// Interspeech 2017 (adaptive cohort = the top-N highest-scoring cohort vectors per embedding).
#pragma once

#include <cstdint>
#include <vector>

#include "asvcpp/backend/scorer.h"
#include "asvcpp/backend/scoring.h"
#include "asvcpp/base/matrix.h"

namespace asv::backend {

/// Per-embedding cohort statistics: [n] means and [n] population standard deviations.
struct SnormStats {
  std::vector<double> mean;
  std::vector<double> std;
};

/// For every row of `vectors` ([n, D]): score it against every row of `cohort` ([m, D]), keep the
/// `top_n` highest scores, and return their mean and population standard deviation (divisor
/// top_n, as np.std). Scores are float32 (as the scorer's), mean/std accumulated in float64.
/// The score matrix is never held: it is computed in tiles of at most 512 x 4096 scores (and at
/// most options.max_all_vs_all_score_count), each row's top_n kept by a threshold filter as the
/// tiles pass (most scores cost one comparison); tie-breaking cannot matter, only the values
/// enter. top_n == m (plain s-norm over the whole cohort) costs no selection. Threads: the
/// products use the BLAS's threads, the selection at::get_num_threads() threads.
/// Throws ConfigError when top_n < 2 or top_n > m, std::invalid_argument on a dimension
/// mismatch.
SnormStats ComputeAdaptiveSnormStats(const Scorer& scorer, const Matrix& vectors, const Matrix& cohort,
                                     std::int64_t top_n, const ScoringOptions& options = {});

/// s <- ((s - mean_l) / std_l + (s - mean_r) / std_r) / 2 for each trial, with l / r the trial's
/// left / right rows in `stats` (stats of the same embedding matrix the trials index).
/// scores: [n_trials] in trial order. Throws std::invalid_argument on a size mismatch or an
/// index outside the stats, DataError when a used std is 0 (all top-N cohort scores equal).
std::vector<float> ApplySnorm(const std::vector<float>& scores, const SnormStats& stats,
                              const std::vector<TrialIndex>& trials);

/// `count` distinct rows of `vectors` chosen uniformly at random (std::mt19937_64 seeded with
/// `seed`, partial Fisher-Yates; kept in ascending row order). ASVtorch drew its cohort of
/// backend.score_norm_full_cohort_size = 2000 PLDA training vectors with torch.manual_seed(0);
/// the exact rows differ from ASVtorch's. Throws std::invalid_argument when count > rows.
Matrix SelectRandomRows(const Matrix& vectors, std::int64_t count, std::uint64_t seed);

}  // namespace asv::backend
