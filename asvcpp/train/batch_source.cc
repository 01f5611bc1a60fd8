#include "asvcpp/train/batch_source.h"

#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::train {

ClipBatchSource::ClipBatchSource(std::shared_ptr<const data::FeatureSource> source,
                                 std::vector<SamplerUtterance> utterances, std::vector<int> source_index,
                                 EpochSamplerOptions options)
    : source_(std::move(source)),
      utterances_(std::move(utterances)),
      source_index_(std::move(source_index)),
      options_(options) {
  if (!source_) throw std::invalid_argument("ClipBatchSource: no feature source");
  if (utterances_.size() != source_index_.size()) {
    throw std::invalid_argument("ClipBatchSource: utterances and source indices differ in length");
  }
}

EpochBatches ClipBatchSource::PlanEpoch(int epoch) {
  plan_ = BuildEpoch(utterances_, options_, epoch);
  if (plan_.global_batches == 0) {
    throw DataError(
        fmt::format("epoch {} has no minibatches: {} clips per speaker do not fill one minibatch per "
                    "training process ({})",
                    epoch, options_.utts_per_speaker_in_epoch, options_.world_size));
  }
  EpochBatches out;
  out.batches = plan_.batches.size();
  out.global_batches = plan_.global_batches;
  out.batch_size = plan_.batch_size;
  out.max_frames = options_.max_clip_size;
  out.description = fmt::format("{} clips per speaker", options_.utts_per_speaker_in_epoch);
  return out;
}

HostBatch ClipBatchSource::Load(std::size_t index) const {
  return LoadTrainingBatch(*source_, plan_.batches.at(index), source_index_);
}

}  // namespace asv::train
