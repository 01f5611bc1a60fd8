#include "asvcpp/train/feature_source.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::train {

Matrix SliceRows(const Matrix& frames, std::int64_t start, std::int64_t length, const std::string& name) {
  if (start < 0 || length < 0 || start + length > frames.rows()) {
    throw DataError(fmt::format("{}: frames [{}, {}) requested but only {} frames were loaded", name, start,
                                start + length, frames.rows()));
  }
  Matrix out(length, frames.cols());
  if (length > 0 && frames.cols() > 0) {
    std::memcpy(out.data(), frames.row(start), sizeof(float) * static_cast<std::size_t>(length * frames.cols()));
  }
  return out;
}

Matrix FeatureSource::Clip(int utterance, std::int64_t start, std::int64_t length) const {
  return SliceRows(Frames(utterance), start, length, Name(utterance));
}

std::string FeatureSource::Name(int utterance) const {
  return fmt::format("utterance {}", utterance);
}

InMemoryFeatureSource::InMemoryFeatureSource(std::vector<Matrix> utterances, std::vector<std::string> names)
    : utterances_(std::move(utterances)), names_(std::move(names)) {
  if (!names_.empty() && names_.size() != utterances_.size()) {
    throw DataError(fmt::format("{} names for {} utterances", names_.size(), utterances_.size()));
  }
  if (!utterances_.empty()) feat_dim_ = static_cast<int>(utterances_.front().cols());
  for (std::size_t i = 0; i < utterances_.size(); ++i) {
    if (utterances_[i].cols() != feat_dim_) {
      throw DataError(fmt::format("{} has feature dimension {}, expected {}", Name(static_cast<int>(i)),
                                  utterances_[i].cols(), feat_dim_));
    }
  }
}

const Matrix& InMemoryFeatureSource::At(int utterance) const {
  if (utterance < 0 || utterance >= NumUtterances()) {
    throw DataError(fmt::format("utterance index {} out of range [0, {})", utterance, NumUtterances()));
  }
  return utterances_[static_cast<std::size_t>(utterance)];
}

std::int64_t InMemoryFeatureSource::NumFrames(int utterance) const {
  return At(utterance).rows();
}
Matrix InMemoryFeatureSource::Frames(int utterance) const {
  return At(utterance);
}
Matrix InMemoryFeatureSource::Clip(int utterance, std::int64_t start, std::int64_t length) const {
  return SliceRows(At(utterance), start, length, Name(utterance));
}

std::string InMemoryFeatureSource::Name(int utterance) const {
  if (utterance >= 0 && static_cast<std::size_t>(utterance) < names_.size()) {
    return names_[static_cast<std::size_t>(utterance)];
  }
  return FeatureSource::Name(utterance);
}

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
