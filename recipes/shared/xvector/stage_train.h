// Stage 5 of the x-vector recipes (voxceleb/xvector, sitw/xvector): x-vector training (ASVtorch
// run.py stage 5 and its training loop, asvtorch/src/networks/network_training.py).
//
// Training data: the utterances of recipe.training_datasets (less those of
// recipe.excluded_utterance_prefixes and recipe.excluded_speakers_file, data_selection.h) with at
// least recipe.min_speech_frames speech frames, of speakers with at least
// recipe.min_utterances_per_speaker such utterances. Every network.epochs_per_train_call epochs
// rank 0 evaluates: embeddings of the utterances of recipe.training_trial_lists and of
// recipe.plda_speakers_during_training random speakers of recipe.evaluation_plda_datasets (None:
// recipe.plda_datasets; the same exclusions; seed recipe.seed), back end
// (asvcpp/backend/evaluation.h), EER of each list; training stops when the mean EER has not
// improved by network.minimum_improvement (percentage points) for network.eer_stop_epochs
// evaluations, after max_consecutive_lr_updates consecutive LR halvings, or at network.max_epochs.
// Per-epoch figures and every evaluation go to the experiment database; the early-stopping state is
// kept in networks/eer_stopper.json so a resumed run continues it (ASVtorch restarted it from
// scratch).
#pragma once

#include "asvcpp/recipe/run_context.h"

namespace asv::recipes::xvector {

/// Runs stage 5. Throws DataError for missing features or too little data, StageError when
/// training fails.
void RunTraining(recipe::RunContext& context);

}  // namespace asv::recipes::xvector
