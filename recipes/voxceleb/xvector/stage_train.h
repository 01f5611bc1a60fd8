// Stage 5 of voxceleb/xvector: x-vector training (ASVtorch run.py stage 5, reference/asvtorch.md
// sections 3.2, 6.1-6.4).
//
// Training data: the utterances of recipe.training_datasets with at least
// recipe.min_speech_frames speech frames, of speakers with at least
// recipe.min_utterances_per_speaker such utterances. Every network.epochs_per_train_call epochs
// rank 0 evaluates: embeddings of the utterances of recipe.training_trial_lists and of
// recipe.plda_speakers_during_training random speakers of recipe.plda_datasets (seed
// recipe.seed), back-end (evaluation.h), EER of each list; training stops when the mean EER has
// not improved by network.minimum_improvement (percentage points) for network.eer_stop_epochs
// evaluations, after max_consecutive_lr_updates consecutive LR halvings, or at
// network.max_epochs. Per-epoch figures and every evaluation go to the experiment database;
// the early-stopping state is kept in networks/eer_stopper.json so a resumed run continues it
// (ASVtorch restarted it from scratch).
#pragma once

#include <filesystem>

#include "asvcpp/recipe/run_context.h"

namespace asv::recipes::voxceleb_xvector {

/// Runs stage 5. Throws DataError for missing features or too little data, StageError when
/// training fails.
void RunTraining(recipe::RunContext& context);

/// Early stopping on the mean EER of the evaluation lists (ASVtorch EerStopper).
class EerStopper {
 public:
  /// `patience`: evaluations without improvement before stopping; `minimum_improvement`: in
  /// EER percentage points.
  EerStopper(int patience, double minimum_improvement) : patience_(patience), minimum_improvement_(minimum_improvement) {}

  /// Records the mean EER (percent) of one evaluation; true when training should stop.
  bool Update(double mean_eer);
  double best() const { return best_; }
  int evaluations_without_improvement() const { return counter_; }

  /// Atomic JSON save/load (best, counter); Load throws DataError for an unreadable file.
  void Save(const std::filesystem::path& path) const;
  void Load(const std::filesystem::path& path);

 private:
  int patience_;
  double minimum_improvement_;
  double best_ = 100.0;
  int counter_ = 0;
};

}  // namespace asv::recipes::voxceleb_xvector
