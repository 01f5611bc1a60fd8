// Early stopping of network training on the EER of evaluations during training.
#pragma once

#include <filesystem>

namespace asv::train {

/// Early stopping on the mean EER of the evaluation lists (ASVtorch's EerStopper in
/// asvtorch/src/networks/network_training.py): training stops after `patience` evaluations in a
/// row that did not lower the best mean EER by more than `minimum_improvement` percentage points.
/// The best EER starts at 100 %.
class EerStopper {
 public:
  /// `patience`: evaluations without improvement before stopping; `minimum_improvement`: in
  /// EER percentage points.
  EerStopper(int patience, double minimum_improvement)
      : patience_(patience), minimum_improvement_(minimum_improvement) {}

  /// Records the mean EER (percent) of one evaluation: a new best when it is below the best by
  /// more than minimum_improvement (the count of evaluations without improvement restarts),
  /// otherwise one more evaluation without improvement. True when that count reaches patience.
  bool Update(double mean_eer);
  double best() const { return best_; }
  int evaluations_without_improvement() const { return counter_; }

  /// Saves the state (best, evaluations without improvement) as JSON, atomically (temporary file
  /// and rename), so that a resumed training continues it. Throws DataError when it cannot write.
  /// Load throws DataError naming the file when it is unreadable or not such a state.
  void Save(const std::filesystem::path& path) const;
  void Load(const std::filesystem::path& path);

 private:
  int patience_;
  double minimum_improvement_;
  double best_ = 100.0;
  int counter_ = 0;
};

}  // namespace asv::train
