#include "asvcpp/train/training_data.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::train {

std::vector<int> SpeakerLabels(const std::vector<std::string>& speaker_ids, int* n_speakers) {
  std::unordered_map<std::string, int> index;
  std::vector<int> labels;
  labels.reserve(speaker_ids.size());
  for (const auto& id : speaker_ids) {
    auto [it, inserted] = index.emplace(id, static_cast<int>(index.size()));
    labels.push_back(it->second);
  }
  if (n_speakers) *n_speakers = static_cast<int>(index.size());
  return labels;
}

void ValidateTrainingData(const TrainingData& data) {
  if (!data.source) throw DataError("training data has no feature source");
  const int n = data.source->NumUtterances();
  if (n < 1) throw DataError("training data has no utterances");
  if (static_cast<int>(data.speakers.size()) != n) {
    throw DataError(fmt::format("training data: {} speaker labels for {} utterances", data.speakers.size(), n));
  }
  if (data.n_speakers < 1) throw DataError("training data: n_speakers must be >= 1");
  std::vector<bool> seen(static_cast<std::size_t>(data.n_speakers), false);
  for (int i = 0; i < n; ++i) {
    const int s = data.speakers[static_cast<std::size_t>(i)];
    if (s < 0 || s >= data.n_speakers) {
      throw DataError(fmt::format("training data: {} has speaker label {} outside [0, {})", data.source->Name(i), s,
                                  data.n_speakers));
    }
    seen[static_cast<std::size_t>(s)] = true;
  }
  const auto missing = std::find(seen.begin(), seen.end(), false);
  if (missing != seen.end()) {
    throw DataError(fmt::format("training data: speaker label {} has no utterances", missing - seen.begin()));
  }
}

}  // namespace asv::train
