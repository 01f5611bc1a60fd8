// Stage 7 of the x-vector recipes (voxceleb/xvector, sitw/xvector): embedding extraction
// (ASVtorch run.py stage 7), rank 0 only.
//
// The network of recipe.selected_epoch (None: the last of the contiguous checkpoints
// networks/epoch.1..N.pt) extracts x-vectors for every utterance of the trial lists of
// recipe.trial_lists that exist (multi-session '&' sides as one utterance) and for all
// utterances of recipe.plda_datasets less those of recipe.excluded_utterance_prefixes and
// recipe.excluded_speakers_file (data_selection.h). They are written as Kaldi vector archives
// <system>/embeddings/{trial,plda}.{ark,scp}, with embeddings/plda.utt2spk and
// embeddings/info.json (epoch, checkpoint). Utterances without speech frames are left out with a
// message (their trials then fail to score with a message naming them).
#pragma once

#include "asvcpp/recipe/run_context.h"

namespace asv::recipes::xvector {

/// Runs stage 7. Throws DataError when no checkpoint, features or trial list is found.
void RunEmbeddingExtraction(recipe::RunContext& context);

}  // namespace asv::recipes::xvector
