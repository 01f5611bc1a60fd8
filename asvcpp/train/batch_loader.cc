#include "asvcpp/train/batch_loader.h"

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::train {
namespace {

// Copies a [frames, F] matrix into item `i` of a [batch, F, frames] buffer.
void PutTransposed(const Matrix& m, std::int64_t i, HostBatch& out) {
  float* dst = out.features.data() + i * out.feat_dim * out.frames;
  for (std::int64_t t = 0; t < out.frames; ++t) {
    const float* row = m.row(t);
    for (std::int64_t f = 0; f < out.feat_dim; ++f) dst[f * out.frames + t] = row[f];
  }
}

void CheckShape(const Matrix& m, std::int64_t frames, std::int64_t feat_dim, const data::FeatureSource& source, int u) {
  if (m.rows() != frames || m.cols() != feat_dim) {
    throw DataError(fmt::format("{}: the feature source returned [{}, {}] frames, expected [{}, {}]", source.Name(u),
                                m.rows(), m.cols(), frames, feat_dim));
  }
}

}  // namespace

HostBatch LoadTrainingBatch(const data::FeatureSource& source, const EpochBatch& batch,
                            const std::vector<int>& utterance_map) {
  HostBatch out;
  out.batch = static_cast<std::int64_t>(batch.clips.size());
  out.feat_dim = source.FeatDim();
  out.frames = batch.clip_length;
  out.features.resize(static_cast<std::size_t>(out.batch * out.feat_dim * out.frames));
  out.labels.reserve(batch.clips.size());
  out.utterances.reserve(batch.clips.size());
  for (std::size_t i = 0; i < batch.clips.size(); ++i) {
    const auto& clip = batch.clips[i];
    const int u = utterance_map.empty() ? clip.utterance : utterance_map.at(static_cast<std::size_t>(clip.utterance));
    const Matrix m = source.Clip(u, clip.start, batch.clip_length);
    CheckShape(m, out.frames, out.feat_dim, source, u);
    PutTransposed(m, static_cast<std::int64_t>(i), out);
    out.labels.push_back(clip.speaker);
    out.utterances.push_back(u);
  }
  return out;
}

HostBatch LoadTestBatch(const data::FeatureSource& source, const std::vector<int>& utterances, std::int64_t frames,
                        const std::vector<std::int64_t>& labels) {
  HostBatch out;
  out.batch = static_cast<std::int64_t>(utterances.size());
  out.feat_dim = source.FeatDim();
  out.frames = frames;
  out.features.resize(static_cast<std::size_t>(out.batch * out.feat_dim * out.frames));
  out.labels = labels;
  out.utterances = utterances;
  for (std::size_t i = 0; i < utterances.size(); ++i) {
    const Matrix m = source.Clip(utterances[i], 0, frames);
    CheckShape(m, frames, out.feat_dim, source, utterances[i]);
    PutTransposed(m, static_cast<std::int64_t>(i), out);
  }
  return out;
}

}  // namespace asv::train
