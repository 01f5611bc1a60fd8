// Training data for the trainer: a feature source (asvcpp/data/feature_source.h) whose every
// utterance is a training utterance, with speaker labels.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "asvcpp/data/feature_source.h"

namespace asv::train {

/// Training data: a feature source whose every utterance is a training utterance, with its
/// speaker label.
struct TrainingData {
  std::shared_ptr<const data::FeatureSource> source;
  std::vector<int> speakers;  ///< label of each utterance of `source`, in 0..n_speakers-1
  int n_speakers = 0;
};

/// Integer labels for speaker ids in order of first appearance (ASVtorch
/// convert_labels_to_numeric): {"b", "a", "b"} -> {0, 1, 0}; `n_speakers` receives the count.
std::vector<int> SpeakerLabels(const std::vector<std::string>& speaker_ids, int* n_speakers = nullptr);

/// Checks `data` (source set, one label per utterance, labels in range, n_speakers >= 1, every
/// speaker present). Throws DataError naming the problem.
void ValidateTrainingData(const TrainingData& data);

}  // namespace asv::train
