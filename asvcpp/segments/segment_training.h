// Training data of random audio segments, WeSpeaker's way, with the heavy work on the training
// device: the loader threads read each minibatch's segments from a PCM store
// (asvcpp/data/pcm_store.h, plans of train/segment_sampler.h) and draw and cut its augmentation
// (augment/segment_draw.h); the training thread then, on the device, resamples the
// speed-perturbed segments, mixes reverberation and noise (augment/batched_augment.h), computes
// fbank with dither and subtracts each segment's mean (features/batched_fbank.h), and optionally
// applies SpecAugment (features/spec_augment.h). A minibatch is one batch of the sampler; its
// labels are the sampler's (speed-perturbed copies are new speakers). No LibTorch in this header.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "asvcpp/augment/segment_draw.h"
#include "asvcpp/data/pcm_store.h"
#include "asvcpp/features/feature_options.h"
#include "asvcpp/features/spec_augment_options.h"
#include "asvcpp/train/batch_source.h"
#include "asvcpp/train/segment_sampler.h"

namespace asv::train {
class DeviceBatchTransform;
}

namespace asv::segments {

struct SegmentTrainingOptions {
  train::SegmentSamplerOptions sampler;        ///< batch size, rank, segment frames, filter, speed perturbation
  augment::SegmentAugmentOptions augmentation;  ///< used when a NoiseBank is given
  features::FbankOptions fbank;                ///< WeSpeaker's: features::WespeakerFbankOptions()
  float dither = 1.0f;                         ///< training dither (sample units)
  bool spec_augment = false;
  features::SpecAugmentOptions spec;
  std::uint64_t seed = 0;  ///< augmentation draws: per (seed, epoch, minibatch)
};

/// The loader half: read plans of a SegmentSampler, samples from the store, augmentation draws.
class SegmentBatchSource : public train::BatchSource {
 public:
  /// `utterances` of `store` with speakers in [0, num_speakers); `bank` null: no augmentation.
  /// Throws what SegmentSampler throws (DataError for too few utterances for one batch).
  SegmentBatchSource(std::shared_ptr<const data::PcmStore> store, std::vector<train::SegmentUtterance> utterances,
                     int num_speakers, SegmentTrainingOptions options,
                     std::shared_ptr<const augment::NoiseBank> bank = nullptr);

  /// The sampler's epoch: BatchesPerEpoch() minibatches of batch_size segments of num_frames.
  train::EpochBatches PlanEpoch(int epoch) override;
  /// Samples [batch, MaxSourceSamples()] (zero-padded rows; frames = that length, feat_dim 1),
  /// labels, and the draws and cut noise/RIR tensors for the device half. Thread-safe.
  train::HostBatch Load(std::size_t index) const override;

  /// Classes of the training head (3x the speakers with speed perturbation).
  int NumLabels() const { return sampler_.NumLabels(); }
  const train::SegmentSampler& sampler() const { return sampler_; }
  const SegmentTrainingOptions& options() const { return options_; }

 private:
  std::shared_ptr<const data::PcmStore> store_;
  SegmentTrainingOptions options_;
  std::shared_ptr<const augment::NoiseBank> bank_;
  train::SegmentSampler sampler_;
  train::SegmentEpoch epoch_;
};

/// The device half for batches of a SegmentBatchSource with `options`: speed perturbation,
/// augmentation, fbank with dither, segment mean, SpecAugment; features [batch, num_bins,
/// num_frames]. Random draws of dither and SpecAugment come from the device's default generator
/// (whose state checkpoints keep). Throws DataError for fbank options BatchedFbank rejects.
std::shared_ptr<train::DeviceBatchTransform> MakeSegmentTransform(const SegmentTrainingOptions& options);

}  // namespace asv::segments
