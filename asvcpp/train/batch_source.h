// Where the Trainer's training minibatches come from. A batch source plans an epoch for this
// process's rank and loads its minibatches into host memory on the loader threads; a device
// transform (device_batch.h) may then turn a host batch into network features on the training
// device. The x-vector recipe's source is ClipBatchSource: ASVtorch's clips of precomputed
// features (epoch_sampler.h). No LibTorch in this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "asvcpp/data/feature_source.h"
#include "asvcpp/train/batch_loader.h"
#include "asvcpp/train/epoch_sampler.h"

namespace asv::train {

/// One rank's share of an epoch.
struct EpochBatches {
  std::size_t batches = 0;          ///< minibatches of this rank, loaded by index 0..batches-1
  std::int64_t global_batches = 0;  ///< over all ranks (the same count on every rank)
  std::int64_t batch_size = 0;      ///< items per minibatch on this rank (the largest)
  /// The most frames per item the network sees in this epoch (the pre-flight step's shape).
  std::int64_t max_frames = 0;
  std::string description;  ///< one line for the log, e.g. "clips of 200-400 frames, 320 per speaker"
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;

  /// Plans epoch `epoch` (1-based) for this rank; the plan is a function of the epoch and the
  /// source's seed (a resumed run gets the same one). Throws DataError when the epoch has no
  /// minibatch.
  virtual EpochBatches PlanEpoch(int epoch) = 0;

  /// Minibatch `index` of the last planned epoch. Called from several loader threads at once.
  /// Throws DataError for data that cannot be read, std::out_of_range for an index outside the plan.
  virtual HostBatch Load(std::size_t index) const = 0;
};

/// ASVtorch's training clips (epoch_sampler.h) of a feature source, as LoadTrainingBatch loads
/// them: items [feat_dim, clip_length] of the source's features, labels = the clips' speakers.
class ClipBatchSource : public BatchSource {
 public:
  /// `utterances`: the sampler's view of the training utterances, `source_index` the source
  /// utterance of each (same length). Throws std::invalid_argument when the lengths differ.
  ClipBatchSource(std::shared_ptr<const data::FeatureSource> source, std::vector<SamplerUtterance> utterances,
                  std::vector<int> source_index, EpochSamplerOptions options);

  /// BuildEpoch's plan. Throws DataError when the epoch has no minibatch (too few clips per
  /// speaker for one minibatch per rank) and what BuildEpoch throws.
  EpochBatches PlanEpoch(int epoch) override;
  HostBatch Load(std::size_t index) const override;

  const EpochPlan& plan() const noexcept { return plan_; }

 private:
  std::shared_ptr<const data::FeatureSource> source_;
  std::vector<SamplerUtterance> utterances_;
  std::vector<int> source_index_;
  EpochSamplerOptions options_;
  EpochPlan plan_;
};

}  // namespace asv::train
