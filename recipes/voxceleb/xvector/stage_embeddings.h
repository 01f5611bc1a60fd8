// Stages 7 and 9 of voxceleb/xvector (ASVtorch run.py, reference/asvtorch.md section 3.2).
//
// Stage 7, embedding extraction (rank 0): the network of recipe.selected_epoch (None: the last
// of the contiguous checkpoints networks/epoch.1..N.pt) extracts x-vectors for every utterance
// of the trial lists of recipe.trial_lists that exist (multi-session '&' sides as one
// utterance) and for all utterances of recipe.plda_datasets. They are written as Kaldi vector
// archives <system>/embeddings/{trial,plda}.{ark,scp}, with embeddings/plda.utt2spk and
// embeddings/info.json (epoch, checkpoint). Utterances without speech frames are left out with a
// message (their trials then fail to score with a message naming them).
//
// Stage 9, scoring (rank 0): the back-end (evaluation.h) trained on the PLDA embeddings scores
// every existing trial list; score files <system>/scores/scores_<trial file> (one '%.18e' score
// per line, trial order), a summary <system>/results/results.txt, and one results row per list in
// the experiment database.
#pragma once

#include "asvcpp/recipe/run_context.h"

namespace asv::recipes::voxceleb_xvector {

/// Runs stage 7. Throws DataError when no checkpoint, features or trial list is found.
void RunEmbeddingExtraction(recipe::RunContext& context);

/// Runs stage 9. Throws DataError when stage 7's embeddings are missing or a trial names an
/// utterance without an embedding.
void RunScoring(recipe::RunContext& context);

}  // namespace asv::recipes::voxceleb_xvector
