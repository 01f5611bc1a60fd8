// Random training segments in WeSpeaker's manner, as read plans over a PCM store
// (asvcpp/data/pcm_store.h). LibTorch-free: this file and segment_sampler.cc form the library
// asv_train_sampling (with rng.cc), which asv_train links.
//
// WeSpeaker's training data (wespeaker/dataset/dataset.py Dataset and DataList,
// wespeaker/dataset/processor.py) per epoch: the list is shuffled with random.Random(epoch) and
// split between ranks (data[rank::world_size]); utterances shorter than min_num_frames are dropped
// and longer than max_num_frames cut to a random window of that length (processor.py filter:
// min_len = int(frame_shift / 1000 * min_num_frames * sample_rate) samples, likewise max_len, i.e.
// 1 s and 8 s for 100 and 800 frames of 10 ms at 16 kHz; the units are samples of the audio, not
// feature frames); a local shuffle; speed perturbation (processor.py speed_perturb: speed index k
// uniform in {0, 1, 2} for the factors {1.0, 0.9, 1.1}, sox "speed" then "rate" back to the sample
// rate, label += k * num_speakers, so 3x the speakers); then one random chunk of
// chunk_len = ((num_frms - 1) * frame_shift + frame_length) * sample_rate / 1000 samples
// (dataset.py; 32,240 for 200 frames) from the perturbed audio (processor.py get_random_chunk: a
// start uniform in [0, len - chunk_len] when len >= chunk_len, otherwise the audio repeated
// chunk_len // len + 1 times and cut to chunk_len).
//
// Here the same, with the speed change moved to the training device: speed factor f maps n source
// samples to floor(n / f) (the batched resampler; ResampledSamples), so a segment reads
// ceil(segment_samples * f) source samples (29,016 / 32,240 / 35,464 for 0.9 / 1.0 / 1.1), which
// give at least segment_samples after resampling. The window (the whole utterance, or its random
// max_len window) longer than or as long as that: a random start in it. Shorter: the whole window,
// tiled to that length (SegmentRead::repeats(); the source-domain form of get_random_chunk's
// repetition). The 8 s window and the start within it are drawn separately, as WeSpeaker does
// (the start is thus not uniform over a long utterance).
//
// The epoch: every utterance that passes the filter exactly once (WeSpeaker iterates over every
// utterance once per epoch), in a fresh order; global batches of batch_size * world_size
// segments, rank r taking positions r, r + world_size, ... (WeSpeaker's rank::world_size split),
// so the ranks get disjoint segments and the same number of batches; the
// kept % (batch_size * world_size) utterances at the end of the shuffled order are left out of
// that epoch (WeSpeaker: drop_last and epoch_iter = utterances // world_size // batch_size), a
// different few each epoch. batch_size is per rank, as WeSpeaker's dataloader_args.batch_size.
// Two differences, both deliberate: WeSpeaker's epoch_iter counts the utterances before the
// filter and its list repeats endlessly (DataList repeat_dataset), so its epoch re-reads a few
// utterances from the next pass where the filter dropped some; and its order is a shuffle of the
// list followed by a local shuffle in buffers of 2,500 (processor.py shuffle), where here it is one
// full shuffle.
//
// Determinism: the order comes from Rng(seed, epoch) (asvcpp/train/rng.h), and the draws of one
// utterance (speed, window, start) from a stream keyed by (seed, epoch, utterance), so an
// utterance gets the same segment whatever the world size, batch size or rank, and an epoch is a
// pure function of (utterances, options, epoch): resuming at any (epoch, batch) position is exact.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace asv::data {
class PcmStore;
}

namespace asv::train {

/// Number of speed-perturbation factors.
inline constexpr int kNumSpeeds = 3;
/// Speed factor of index k in tenths: 1.0, 0.9, 1.1 (WeSpeaker processor.py speed_perturb).
inline constexpr int kSpeedTenths[kNumSpeeds] = {10, 9, 11};

/// The speed factor of `speed_index` (1.0, 0.9, 1.1). Throws std::out_of_range outside [0, 3).
double SpeedFactor(int speed_index);

/// Source samples that give `segment_samples` output samples at speed `speed_index`:
/// ceil(segment_samples * factor), computed exactly. Throws std::out_of_range for a bad index.
std::int64_t SourceSamples(std::int64_t segment_samples, int speed_index);

/// Output samples of `source_samples` samples at speed `speed_index`: floor(source_samples /
/// factor), computed exactly as source_samples * 10 / tenths. The batched resampler must count the
/// same way: in double arithmetic 29,016 / 0.9 floors to 32,239, not 32,240. Throws
/// std::out_of_range for a bad index.
std::int64_t ResampledSamples(std::int64_t source_samples, int speed_index);

/// One training utterance as the sampler sees it.
struct SegmentUtterance {
  std::int64_t store_index = 0;  ///< Its index in the PCM store (data::PcmStore::Id/Read).
  std::int64_t num_samples = 0;  ///< Its length in samples (data::PcmStore::NumSamples).
  int speaker = 0;               ///< 0-based speaker label, < num_speakers.
};

/// The utterances of `store` for the sampler, in store order: store index, length and
/// speaker_of(id), where speaker_of returns the 0-based speaker label of an utterance id or a
/// negative number to leave the utterance out (e.g. not in utt2spk). Does not throw by itself.
std::vector<SegmentUtterance> StoreUtterances(const data::PcmStore& store,
                                              const std::function<int(const std::string& id)>& speaker_of);

/// WeSpeaker's dataset_args and dataloader_args, with their defaults (examples/voxceleb/v2/conf).
struct SegmentSamplerOptions {
  int batch_size = 128;        ///< Segments per batch on each rank (dataloader_args.batch_size).
  int world_size = 1;          ///< Ranks of the data-parallel job.
  int rank = 0;                ///< This rank, in [0, world_size).
  int sample_rate = 16000;     ///< Hz (resample_rate); the store's rate.
  int num_frames = 200;        ///< num_frms: feature frames per segment.
  int frame_shift_ms = 10;     ///< fbank_args.frame_shift.
  int frame_length_ms = 25;    ///< fbank_args.frame_length.
  bool filter = true;          ///< filter: apply min/max_num_frames.
  int min_num_frames = 100;    ///< filter_args.min_num_frames: shorter utterances are dropped.
  int max_num_frames = 800;    ///< filter_args.max_num_frames: longer ones cut to a random window.
  bool speed_perturb = true;   ///< speed_perturb (mode "random").
  std::uint64_t seed = 0;      ///< Run seed; the epoch is mixed in.
};

/// Where one segment's source samples come from, and how they are repeated.
struct SegmentRead {
  std::int64_t utterance = 0;  ///< Store index of the utterance.
  int label = 0;               ///< speaker + speed_index * num_speakers.
  int speed_index = 0;         ///< 0, 1, 2: factor 1.0, 0.9, 1.1 (kSpeedTenths).
  std::int64_t start = 0;      ///< First source sample read.
  std::int64_t count = 0;      ///< Source samples read, [start, start + count), 1 <= count <= length.
  std::int64_t length = 0;     ///< Source samples of the segment, SourceSamples(segment, speed_index):
                               ///< sample k is source sample start + k % count.

  /// True when the utterance (window) was shorter than `length` and is repeated.
  bool repeats() const { return count < length; }
};

/// One epoch of one rank.
struct SegmentEpoch {
  int epoch = 0;
  std::int64_t used = 0;     ///< Segments over all ranks: batches * batch_size * world_size.
  std::int64_t dropped = 0;  ///< Utterances that passed the filter but are left out this epoch.
  std::vector<std::vector<SegmentRead>> batches;  ///< This rank's batches, batch_size reads each.
};

/// The position of a training run in the stream of batches: the next batch to train on is batch
/// `batch` (0-based) of epoch `epoch`. Saving these two numbers and building a cursor from them
/// resumes exactly, mid-epoch included.
struct SegmentPosition {
  int epoch = 1;
  std::int64_t batch = 0;
};

class SegmentSampler {
 public:
  /// Filters `utterances` (see the header comment) and checks everything.
  /// Throws std::invalid_argument for options out of range (batch_size, world_size < 1; rank
  /// outside [0, world_size); sample_rate, num_frames, frame_shift_ms, frame_length_ms < 1;
  /// min_num_frames > max_num_frames with the filter on; num_speakers < 1). Throws DataError for an
  /// utterance with a negative store index or length or a speaker outside [0, num_speakers)
  /// (naming its position), and when fewer utterances pass the filter than one global batch
  /// (batch_size * world_size) needs.
  SegmentSampler(std::vector<SegmentUtterance> utterances, int num_speakers, const SegmentSamplerOptions& options);

  /// Output samples of a segment: ((num_frames - 1) * frame_shift_ms + frame_length_ms) *
  /// sample_rate / 1000 (32,240 for the defaults).
  std::int64_t SegmentSamples() const { return segment_samples_; }
  /// The longest SegmentRead::length any segment can have (at speed 1.1 when perturbing).
  std::int64_t MaxSourceSamples() const;
  /// Filter bounds in samples: shorter utterances are dropped, longer ones windowed.
  std::int64_t MinSamples() const { return min_samples_; }
  std::int64_t MaxSamples() const { return max_samples_; }
  /// Classes the network's head needs: num_speakers * 3 with speed perturbation, else num_speakers.
  int NumLabels() const;
  /// Utterances that passed the filter, and those that did not (shorter than MinSamples(), or empty).
  std::size_t NumKept() const { return kept_.size(); }
  std::size_t NumFiltered() const { return num_utterances_ - kept_.size(); }
  /// Batches per epoch on each rank: NumKept() / (batch_size * world_size).
  std::int64_t BatchesPerEpoch() const;
  const SegmentSamplerOptions& options() const { return options_; }

  /// Epoch `epoch` (any integer; WeSpeaker counts from 1) for options().rank. For VoxCeleb2 dev's
  /// 1,092,009 utterances about 0.2 s on one rank, and 0.1 s for one rank of 8 with the
  /// sampler's construction (a loaded, shared 2-core VM; tools/bench/scale.cc, case 5).
  SegmentEpoch Epoch(int epoch) const;

 private:
  SegmentSamplerOptions options_;
  int num_speakers_ = 0;
  std::size_t num_utterances_ = 0;
  std::int64_t segment_samples_ = 0;
  std::int64_t min_samples_ = 0;
  std::int64_t max_samples_ = 0;
  std::vector<SegmentUtterance> kept_;
};

/// Hands out one rank's batches epoch after epoch from a saved position.
class SegmentBatchCursor {
 public:
  /// Starts at `position` (batch may be at or past the epoch's end: the next epoch then starts).
  /// `sampler` must outlive the cursor. Throws std::invalid_argument for a negative batch.
  SegmentBatchCursor(const SegmentSampler& sampler, SegmentPosition position);

  /// The batch at position(), then advances (to the next epoch after its last batch). The
  /// reference stays valid until the next call.
  const std::vector<SegmentRead>& Next();

  /// The position of the batch the next call to Next() returns; save it to resume there.
  SegmentPosition position() const { return position_; }

 private:
  const SegmentSampler* sampler_;
  SegmentPosition position_;
  SegmentEpoch current_;  // epoch position_.epoch once built
  bool built_ = false;
};

/// Fills out[0 .. read.length) from `store`: the `count` samples at `start` of utterance
/// `utterance`, tiled (out[k] = source[start + k % count]); values in the int16 range.
/// Thread-safe. Throws std::invalid_argument when count < 1 or count > length, and
/// std::out_of_range (data::PcmStore::Read) when the read lies outside the utterance.
void ReadSegment(const data::PcmStore& store, const SegmentRead& read, float* out);

/// ReadSegment for every read of `batch` into the rows of a [batch.size(), row_stride] buffer,
/// row i at out + i * row_stride, zeros after each row's `length` samples (row_stride =
/// SegmentSampler::MaxSourceSamples() fits every row). Throws std::invalid_argument when a
/// length exceeds row_stride, and what ReadSegment throws.
void ReadSegments(const data::PcmStore& store, const std::vector<SegmentRead>& batch, std::int64_t row_stride,
                  float* out);

}  // namespace asv::train
