#include "asvcpp/segments/segment_training.h"

#include <random>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <torch/torch.h>

#include "asvcpp/augment/batched_augment.h"
#include "asvcpp/base/error.h"
#include "asvcpp/features/batched_fbank.h"
#include "asvcpp/features/spec_augment.h"
#include "asvcpp/train/device_batch.h"
#include "asvcpp/train/host_to_device.h"
#include "asvcpp/train/rng.h"

namespace asv::segments {
namespace {

// What the device half needs of a minibatch besides its samples.
struct SegmentPayload {
  std::vector<std::int64_t> speed_index;  // per row
  augment::AugmentationInputs augmentation;
  bool augmented = false;
};

// A seed per (run seed, epoch, minibatch) for the augmentation draws: the same draws whatever
// thread loads the minibatch and however often it is loaded.
std::uint64_t DrawSeed(std::uint64_t seed, int epoch, std::size_t index) {
  train::Rng rng(seed ^ 0x5eedau, static_cast<std::uint64_t>(epoch) * 0x100000000ull + index);
  return rng.Next();
}

class SegmentTransform : public train::DeviceBatchTransform {
 public:
  explicit SegmentTransform(const SegmentTrainingOptions& options)
      : options_(options),
        fbank_(options.fbank),
        segment_samples_(((options.sampler.num_frames - 1) * options.sampler.frame_shift_ms +
                          options.sampler.frame_length_ms) *
                         static_cast<std::int64_t>(options.sampler.sample_rate) / 1000) {
    if (options_.spec_augment) options_.spec.Validate();
  }

  std::pair<torch::Tensor, torch::Tensor> Apply(train::HostBatch& batch, const torch::Device& device) override {
    const auto* payload = std::any_cast<std::shared_ptr<const SegmentPayload>>(&batch.extra);
    if (payload == nullptr || !*payload) {
      throw DataError("a segment minibatch without its draws (not made by SegmentBatchSource)");
    }
    const auto& p = **payload;
    const auto host = torch::from_blob(batch.features.data(), {batch.batch, batch.frames}, torch::kFloat32);
    const auto samples = train::HostToDevice(host, device);
    const auto labels = train::HostToDevice(torch::tensor(batch.labels, torch::kInt64), device);

    // Speed perturbation per factor; every row ends with segment_samples_ samples.
    auto segments = torch::empty({batch.batch, segment_samples_}, samples.options());
    const auto speeds = torch::tensor(p.speed_index, torch::kInt64);
    for (int k = 0; k < train::kNumSpeeds; ++k) {
      const auto rows = torch::nonzero(speeds == k).flatten();
      if (rows.numel() == 0) continue;
      const auto source = train::SourceSamples(segment_samples_, k);
      const auto device_rows = rows.to(device);
      auto x = samples.index_select(0, device_rows).narrow(1, 0, source);
      if (k != 0) x = augment::SpeedPerturb(x, train::SpeedFactor(k), options_.sampler.sample_rate);
      segments.index_copy_(0, device_rows, x.narrow(1, 0, segment_samples_));
    }
    if (p.augmented) segments = augment::ApplyAugmentation(segments, p.augmentation.To(device, true));
    auto features = features::SubtractSegmentMean(fbank_.Compute(segments, options_.dither));
    if (options_.spec_augment) features = features::SpecAugment(features, options_.spec);
    return {features.transpose(1, 2), labels};  // [batch, num_bins, frames]
  }

 private:
  SegmentTrainingOptions options_;
  features::BatchedFbank fbank_;
  std::int64_t segment_samples_;
};

}  // namespace

SegmentBatchSource::SegmentBatchSource(std::shared_ptr<const data::PcmStore> store,
                                       std::vector<train::SegmentUtterance> utterances, int num_speakers,
                                       SegmentTrainingOptions options, std::shared_ptr<const augment::NoiseBank> bank)
    : store_(std::move(store)),
      options_(std::move(options)),
      bank_(std::move(bank)),
      sampler_(std::move(utterances), num_speakers, options_.sampler) {
  if (!store_) throw std::invalid_argument("SegmentBatchSource: no PCM store");
}

train::EpochBatches SegmentBatchSource::PlanEpoch(int epoch) {
  epoch_ = sampler_.Epoch(epoch);
  train::EpochBatches out;
  out.batches = epoch_.batches.size();
  out.global_batches = static_cast<std::int64_t>(epoch_.batches.size()) * options_.sampler.world_size;
  out.batch_size = options_.sampler.batch_size;
  out.max_frames = options_.sampler.num_frames;
  out.description = fmt::format("segments of {} frames from {} of {} utterances ({} left out this epoch){}{}",
                                options_.sampler.num_frames, sampler_.NumKept() - static_cast<std::size_t>(epoch_.dropped),
                                sampler_.NumKept(), epoch_.dropped,
                                options_.sampler.speed_perturb ? ", speed perturbation" : "",
                                bank_ ? fmt::format(", augmented with probability {}", options_.augmentation.aug_prob)
                                      : std::string());
  if (out.batches == 0) {
    throw DataError(fmt::format("epoch {} has no minibatches: {} utterances do not fill one batch of {} per rank", epoch,
                                sampler_.NumKept(), options_.sampler.batch_size));
  }
  return out;
}

train::HostBatch SegmentBatchSource::Load(std::size_t index) const {
  const auto& reads = epoch_.batches.at(index);
  train::HostBatch batch;
  batch.batch = static_cast<std::int64_t>(reads.size());
  batch.feat_dim = 1;
  batch.frames = sampler_.MaxSourceSamples();
  batch.features.assign(static_cast<std::size_t>(batch.batch * batch.frames), 0.0f);
  auto payload = std::make_shared<SegmentPayload>();
  for (std::size_t i = 0; i < reads.size(); ++i) {
    train::ReadSegment(*store_, reads[i], batch.features.data() + static_cast<std::int64_t>(i) * batch.frames);
    batch.labels.push_back(reads[i].label);
    batch.utterances.push_back(static_cast<int>(reads[i].utterance));
    payload->speed_index.push_back(reads[i].speed_index);
  }
  if (bank_) {
    std::mt19937_64 rng(DrawSeed(options_.seed, epoch_.epoch, index));
    std::vector<augment::SegmentDraw> draws;
    draws.reserve(reads.size());
    for (std::size_t i = 0; i < reads.size(); ++i) {
      draws.push_back(augment::DrawSegment(*bank_, sampler_.SegmentSamples(), options_.augmentation, rng));
    }
    payload->augmentation = augment::CutAugmentationInputs(*bank_, draws, sampler_.SegmentSamples());
    payload->augmented = true;
  }
  batch.extra = std::shared_ptr<const SegmentPayload>(std::move(payload));
  return batch;
}

std::shared_ptr<train::DeviceBatchTransform> MakeSegmentTransform(const SegmentTrainingOptions& options) {
  return std::make_shared<SegmentTransform>(options);
}

}  // namespace asv::segments
