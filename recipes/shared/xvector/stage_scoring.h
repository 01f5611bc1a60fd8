// Stage 9 of the x-vector recipes (voxceleb/xvector, sitw/xvector): scoring (ASVtorch run.py stage
// 9), rank 0 only.
//
// The back end (asvcpp/backend/evaluation.h) trained on stage 7's PLDA embeddings scores every
// existing trial list of recipe.trial_lists; score files <system>/scores/scores_<trial file> (one
// '%.18e' score per line, trial order), a summary <system>/results/results.txt, and one results row
// per list in the experiment database.
#pragma once

#include "asvcpp/recipe/run_context.h"

namespace asv::recipes::xvector {

/// Runs stage 9. Throws DataError when stage 7's embeddings are missing or a trial names an
/// utterance without an embedding.
void RunScoring(recipe::RunContext& context);

}  // namespace asv::recipes::xvector
