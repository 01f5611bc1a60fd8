#include "asvcpp/data/feature_source.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::data {

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

}  // namespace asv::data
