// The training-clip sampler of one epoch (ASVtorch TrainingDataset.shuffle_and_rebatch in
// asvtorch/src/networks/training_dataloader.py), as a pure, deterministic function of
// (utterances, options, epoch).
//
//   1. Shuffle the utterance order; group utterances by speaker (speakers in order of first
//      appearance in the shuffled list), each speaker with a FIFO queue of its utterances.
//   2. b = minibatch_size / world_size clips per batch and rank;
//      batches = ceil(utts_per_speaker_in_epoch · n_speakers / b).
//   3. Per batch one clip length L, uniform in [min_clip_size, max_clip_size]. Per slot: the next
//      speaker of a speaker queue that is refilled with a fresh random permutation of all speakers
//      whenever it runs empty (round robin); that speaker's next utterance with >= L usable
//      frames (its queue refilled with a shuffled copy of its utterances when empty; shorter
//      ones are consumed and skipped); a start uniform in [0, frames − L]. A speaker with no
//      utterance of >= L frames is skipped for that slot (logged once per epoch, rank 0).
//   4. Trim the batch count to a multiple of world_size; rank r keeps batches r, r+W, r+2W, ...
//      Every rank builds the same list, so the shards are disjoint.
// The draws come from Rng(seed, epoch) (rng.h), so the same (seed, epoch) gives the same epoch on
// every platform, and a resumed run continues exactly. (ASVtorch seeds numpy/random with the
// epoch; the sequences differ, the procedure is the same.)
#pragma once

#include <cstdint>
#include <vector>

namespace asv::train {

/// One training utterance as the sampler sees it.
struct SamplerUtterance {
  int speaker = 0;          ///< speaker label, 0-based
  std::int64_t frames = 0;  ///< usable (speech) frames
};

struct EpochSamplerOptions {
  int minibatch_size = 64;  ///< global minibatch (all ranks together); per rank: / world_size
  int world_size = 1;
  int rank = 0;
  int min_clip_size = 200;  ///< frames
  int max_clip_size = 400;  ///< frames, >= min_clip_size
  int utts_per_speaker_in_epoch = 320;
  std::uint64_t seed = 0;  ///< run seed; the epoch number is mixed in
};

/// One clip: frames [start, start + clip_length) of utterance `utterance`.
struct ClipSpec {
  int utterance = 0;  ///< index into the sampler's utterance list
  int speaker = 0;
  std::int64_t start = 0;
};

struct EpochBatch {
  std::int64_t index = 0;        ///< position in the global (all-rank) batch list
  std::int64_t clip_length = 0;  ///< L, frames of every clip of the batch
  std::vector<ClipSpec> clips;   ///< minibatch_size / world_size clips
};

struct EpochPlan {
  int epoch = 0;
  int batch_size = 0;                      ///< clips per batch on this rank
  std::int64_t global_batches = 0;         ///< batches over all ranks after trimming
  std::vector<EpochBatch> batches;         ///< this rank's share, in order
  std::int64_t skipped_speaker_draws = 0;  ///< slots where a drawn speaker had no long-enough utterance
};

/// Builds epoch `epoch` (>= 1 by convention; any value works) for `options.rank`.
/// Throws DataError when `utterances` is empty, a speaker label is negative, minibatch_size <
/// world_size, the clip-size range is invalid, rank is out of range, or no utterance has
/// enough frames for a drawn clip length (ASVtorch loops forever in that case).
EpochPlan BuildEpoch(const std::vector<SamplerUtterance>& utterances, const EpochSamplerOptions& options, int epoch);

}  // namespace asv::train
