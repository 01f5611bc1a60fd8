#include "asvcpp/train/segment_sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "asvcpp/base/error.h"
#include "asvcpp/data/pcm_store.h"
#include "asvcpp/train/rng.h"

namespace asv::train {
namespace {

// Stream of the per-utterance draws, separate from the shuffle's Rng(seed, epoch).
constexpr std::uint64_t kDrawStream = 0x5e9a3c1d7b2f4e61ULL;

// SplitMix64 (Steele et al. 2014) from a per-utterance key: cheap to start (no 2.5 KB engine
// state per utterance) and the same on every platform.
class UtteranceDraws {
 public:
  explicit UtteranceDraws(std::uint64_t key) : state_(key) {}

  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, n), n >= 1, by rejection (no modulo bias), as Rng::Index.
  std::uint64_t Index(std::uint64_t n) {
    const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    const std::uint64_t limit = max - (max % n + 1) % n;
    std::uint64_t x = Next();
    while (x > limit) x = Next();
    return x % n;
  }

 private:
  std::uint64_t state_;
};

constexpr std::size_t kPrefetchDistance = 16;

// Rng::Shuffle (Fisher-Yates from the last element down, the same draws and swaps, so the same
// result), with the swap partners drawn kPrefetchDistance steps ahead and prefetched: on a
// million items nearly every swap is a cache miss.
void ShuffleWithPrefetch(Rng rng, std::vector<std::uint32_t>& items) {
  const std::size_t n = items.size();
  if (n < 2) return;
  std::size_t partner[kPrefetchDistance];
  std::size_t drawn = n;  // partners are drawn for i = n, n - 1, ..., down to i = drawn + 1
  const auto draw_until = [&](std::size_t i_min) {
    while (drawn > 1 && drawn > i_min) {
      const auto j = static_cast<std::size_t>(rng.Index(drawn));
      partner[drawn % kPrefetchDistance] = j;
      __builtin_prefetch(&items[j]);
      --drawn;
    }
  };
  for (std::size_t i = n; i > 1; --i) {
    draw_until(i > kPrefetchDistance ? i - kPrefetchDistance : 1);
    std::swap(items[i - 1], items[partner[i % kPrefetchDistance]]);
  }
}

}  // namespace

double SpeedFactor(int speed_index) {
  if (speed_index < 0 || speed_index >= kNumSpeeds) {
    throw std::out_of_range(fmt::format("speed index {} is not in [0, {})", speed_index, kNumSpeeds));
  }
  return kSpeedTenths[speed_index] / 10.0;
}

std::int64_t SourceSamples(std::int64_t segment_samples, int speed_index) {
  if (speed_index < 0 || speed_index >= kNumSpeeds) {
    throw std::out_of_range(fmt::format("speed index {} is not in [0, {})", speed_index, kNumSpeeds));
  }
  return (segment_samples * kSpeedTenths[speed_index] + 9) / 10;
}

std::int64_t ResampledSamples(std::int64_t source_samples, int speed_index) {
  if (speed_index < 0 || speed_index >= kNumSpeeds) {
    throw std::out_of_range(fmt::format("speed index {} is not in [0, {})", speed_index, kNumSpeeds));
  }
  return source_samples * 10 / kSpeedTenths[speed_index];
}

std::vector<SegmentUtterance> StoreUtterances(const data::PcmStore& store,
                                              const std::function<int(const std::string& id)>& speaker_of) {
  std::vector<SegmentUtterance> out;
  out.reserve(store.NumUtterances());
  for (std::size_t i = 0; i < store.NumUtterances(); ++i) {
    const int speaker = speaker_of(store.Id(i));
    if (speaker >= 0) out.push_back({static_cast<std::int64_t>(i), store.NumSamples(i), speaker});
  }
  return out;
}

SegmentSampler::SegmentSampler(std::vector<SegmentUtterance> utterances, int num_speakers,
                               const SegmentSamplerOptions& options)
    : options_(options), num_speakers_(num_speakers), num_utterances_(utterances.size()) {
  const auto& o = options_;
  const auto fail = [](const std::string& what) { throw std::invalid_argument("SegmentSampler: " + what); };
  if (o.batch_size < 1) fail(fmt::format("batch_size must be >= 1, got {}", o.batch_size));
  if (o.world_size < 1) fail(fmt::format("world_size must be >= 1, got {}", o.world_size));
  if (o.rank < 0 || o.rank >= o.world_size) {
    fail(fmt::format("rank {} is not in [0, world_size = {})", o.rank, o.world_size));
  }
  if (o.sample_rate < 1 || o.num_frames < 1 || o.frame_shift_ms < 1 || o.frame_length_ms < 1) {
    fail(fmt::format("sample_rate ({}), num_frames ({}), frame_shift_ms ({}) and frame_length_ms ({}) must be >= 1",
                     o.sample_rate, o.num_frames, o.frame_shift_ms, o.frame_length_ms));
  }
  if (o.filter && (o.min_num_frames < 0 || o.min_num_frames > o.max_num_frames)) {
    fail(fmt::format("need 0 <= min_num_frames ({}) <= max_num_frames ({})", o.min_num_frames, o.max_num_frames));
  }
  const int speeds = o.speed_perturb ? kNumSpeeds : 1;
  if (num_speakers < 1 || num_speakers > std::numeric_limits<int>::max() / speeds) {
    fail(fmt::format("num_speakers must be in [1, {}], got {}", std::numeric_limits<int>::max() / speeds,
                     num_speakers));
  }
  const auto rate = static_cast<std::int64_t>(o.sample_rate);
  segment_samples_ =
      (static_cast<std::int64_t>(o.num_frames - 1) * o.frame_shift_ms + o.frame_length_ms) * rate / 1000;
  if (segment_samples_ < 1) fail("the segment is shorter than one sample");
  min_samples_ = o.filter ? std::max<std::int64_t>(1, std::int64_t{o.frame_shift_ms} * o.min_num_frames * rate / 1000)
                          : 1;
  max_samples_ = o.filter ? std::int64_t{o.frame_shift_ms} * o.max_num_frames * rate / 1000
                          : std::numeric_limits<std::int64_t>::max();

  if (utterances.size() > std::numeric_limits<std::uint32_t>::max()) {
    fail(fmt::format("{} utterances are more than 2^32 - 1", utterances.size()));
  }
  kept_.reserve(utterances.size());
  for (std::size_t i = 0; i < utterances.size(); ++i) {
    const SegmentUtterance& u = utterances[i];
    if (u.store_index < 0 || u.num_samples < 0 || u.speaker < 0 || u.speaker >= num_speakers) {
      throw DataError(fmt::format("training utterance {} (store index {}): {} samples, speaker {}; need store index "
                                  ">= 0, samples >= 0 and a speaker in [0, {})",
                                  i, u.store_index, u.num_samples, u.speaker, num_speakers));
    }
    if (u.num_samples >= min_samples_) kept_.push_back(u);
  }
  const std::int64_t global_batch = std::int64_t{o.batch_size} * o.world_size;
  if (static_cast<std::int64_t>(kept_.size()) < global_batch) {
    throw DataError(fmt::format("{} of {} training utterances are at least {} samples long ({} frames); one batch of "
                                "{} segments on each of {} ranks needs {}",
                                kept_.size(), utterances.size(), min_samples_, o.min_num_frames, o.batch_size,
                                o.world_size, global_batch));
  }
}

std::int64_t SegmentSampler::MaxSourceSamples() const {
  return options_.speed_perturb ? SourceSamples(segment_samples_, 2) : segment_samples_;
}

int SegmentSampler::NumLabels() const { return num_speakers_ * (options_.speed_perturb ? kNumSpeeds : 1); }

std::int64_t SegmentSampler::BatchesPerEpoch() const {
  return static_cast<std::int64_t>(kept_.size()) / (std::int64_t{options_.batch_size} * options_.world_size);
}

SegmentEpoch SegmentSampler::Epoch(int epoch) const {
  const auto& o = options_;
  const auto epoch_key = static_cast<std::uint64_t>(static_cast<std::int64_t>(epoch));
  std::vector<std::uint32_t> order(kept_.size());
  std::iota(order.begin(), order.end(), std::uint32_t{0});
  ShuffleWithPrefetch(Rng(o.seed, epoch_key), order);

  SegmentEpoch out;
  out.epoch = epoch;
  const std::int64_t batches = BatchesPerEpoch();
  out.used = batches * o.batch_size * o.world_size;
  out.dropped = static_cast<std::int64_t>(kept_.size()) - out.used;
  out.batches.resize(static_cast<std::size_t>(batches));
  const std::uint64_t draw_key = MixSeed(MixSeed(o.seed, epoch_key), kDrawStream);
  std::size_t position = static_cast<std::size_t>(o.rank);
  for (auto& batch : out.batches) {
    batch.resize(static_cast<std::size_t>(o.batch_size));
    for (SegmentRead& read : batch) {
      const std::uint32_t k = order[position];
      // The utterances are visited in random order: ask for one a few items ahead (a cache miss
      // each on a million utterances, which would otherwise be waited for one by one).
      const std::size_t ahead = position + kPrefetchDistance * static_cast<std::size_t>(o.world_size);
      if (ahead < order.size()) __builtin_prefetch(&kept_[order[ahead]]);
      position += static_cast<std::size_t>(o.world_size);
      const SegmentUtterance& u = kept_[k];
      UtteranceDraws draws(MixSeed(draw_key, k));
      read.utterance = u.store_index;
      read.speed_index = o.speed_perturb ? static_cast<int>(draws.Index(kNumSpeeds)) : 0;
      read.label = u.speaker + read.speed_index * num_speakers_;
      read.length = SourceSamples(segment_samples_, read.speed_index);
      // processor.py filter: a random max_len window of a longer utterance.
      std::int64_t window_start = 0;
      std::int64_t window = u.num_samples;
      if (u.num_samples > max_samples_) {
        window_start = static_cast<std::int64_t>(draws.Index(static_cast<std::uint64_t>(u.num_samples - max_samples_ + 1)));
        window = max_samples_;
      }
      // processor.py get_random_chunk: a random start, or the whole window repeated.
      if (window >= read.length) {
        read.start = window_start + static_cast<std::int64_t>(draws.Index(static_cast<std::uint64_t>(window - read.length + 1)));
        read.count = read.length;
      } else {
        read.start = window_start;
        read.count = window;
      }
    }
  }
  return out;
}

SegmentBatchCursor::SegmentBatchCursor(const SegmentSampler& sampler, SegmentPosition position)
    : sampler_(&sampler), position_(position) {
  if (position.batch < 0) {
    throw std::invalid_argument(fmt::format("SegmentBatchCursor: batch {} is negative", position.batch));
  }
}

const std::vector<SegmentRead>& SegmentBatchCursor::Next() {
  const std::int64_t per_epoch = sampler_->BatchesPerEpoch();
  if (position_.batch >= per_epoch) {
    position_ = {position_.epoch + 1, 0};
    built_ = false;
  }
  if (!built_ || current_.epoch != position_.epoch) {
    current_ = sampler_->Epoch(position_.epoch);
    built_ = true;
  }
  const auto& batch = current_.batches[static_cast<std::size_t>(position_.batch)];
  ++position_.batch;
  if (position_.batch >= per_epoch) position_ = {position_.epoch + 1, 0};
  return batch;
}

void ReadSegment(const data::PcmStore& store, const SegmentRead& read, float* out) {
  if (read.count < 1 || read.count > read.length) {
    throw std::invalid_argument(
        fmt::format("ReadSegment: count {} is not in [1, length = {}]", read.count, read.length));
  }
  if (read.utterance < 0) throw std::out_of_range(fmt::format("ReadSegment: utterance {}", read.utterance));
  store.Read(static_cast<std::size_t>(read.utterance), read.start, read.count, out);
  // get_random_chunk's repetition: out[k] = out[k - count] copies whole periods at a time.
  for (std::int64_t done = read.count; done < read.length;) {
    const std::int64_t n = std::min(done, read.length - done);
    std::memcpy(out + done, out, static_cast<std::size_t>(n) * sizeof(float));
    done += n;
  }
}

void ReadSegments(const data::PcmStore& store, const std::vector<SegmentRead>& batch, std::int64_t row_stride,
                  float* out) {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].length > row_stride) {
      throw std::invalid_argument(fmt::format("ReadSegments: segment {} has {} samples, more than the row stride {}",
                                              i, batch[i].length, row_stride));
    }
    float* row = out + static_cast<std::int64_t>(i) * row_stride;
    ReadSegment(store, batch[i], row);
    std::fill(row + batch[i].length, row + row_stride, 0.0f);
  }
}

}  // namespace asv::train
