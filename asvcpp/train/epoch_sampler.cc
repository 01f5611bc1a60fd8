#include "asvcpp/train/epoch_sampler.h"

#include <algorithm>
#include <deque>
#include <numeric>
#include <unordered_map>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/train/rng.h"

namespace asv::train {
namespace {

struct SpeakerQueue {
  int label = 0;
  std::vector<int> utterances;  ///< this speaker's utterances (shuffled-list order)
  std::deque<int> queue;
  std::int64_t longest = 0;
};

void CheckOptions(const std::vector<SamplerUtterance>& utterances, const EpochSamplerOptions& o) {
  if (utterances.empty()) throw DataError("the training set is empty: no utterances to sample clips from");
  if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size) {
    throw DataError(fmt::format("invalid rank {} for world size {}", o.rank, o.world_size));
  }
  if (o.minibatch_size < o.world_size) {
    throw DataError(fmt::format("network.minibatch_size ({}) is smaller than the number of training processes ({})",
                                o.minibatch_size, o.world_size));
  }
  if (o.min_clip_size < 1 || o.max_clip_size < o.min_clip_size) {
    throw DataError(
        fmt::format("invalid clip sizes: min_clip_size {}, max_clip_size {}", o.min_clip_size, o.max_clip_size));
  }
  if (o.utts_per_speaker_in_epoch < 1) throw DataError("network.utts_per_speaker_in_epoch must be >= 1");
  for (const auto& u : utterances) {
    if (u.speaker < 0) throw DataError(fmt::format("negative speaker label {}", u.speaker));
  }
}

}  // namespace

EpochPlan BuildEpoch(const std::vector<SamplerUtterance>& utterances, const EpochSamplerOptions& options, int epoch) {
  CheckOptions(utterances, options);
  Rng rng(options.seed, static_cast<std::uint64_t>(static_cast<std::int64_t>(epoch)));

  std::vector<int> order(utterances.size());
  std::iota(order.begin(), order.end(), 0);
  rng.Shuffle(order);

  std::vector<SpeakerQueue> speakers;
  std::unordered_map<int, std::size_t> speaker_slot;
  std::int64_t longest = 0;
  for (int u : order) {
    const auto& utt = utterances[static_cast<std::size_t>(u)];
    auto [it, inserted] = speaker_slot.emplace(utt.speaker, speakers.size());
    if (inserted) {
      speakers.emplace_back();
      speakers.back().label = utt.speaker;
    }
    auto& s = speakers[it->second];
    s.utterances.push_back(u);
    s.queue.push_back(u);
    s.longest = std::max(s.longest, utt.frames);
    longest = std::max(longest, utt.frames);
  }

  EpochPlan plan;
  plan.epoch = epoch;
  plan.batch_size = options.minibatch_size / options.world_size;
  const std::int64_t total_clips =
      static_cast<std::int64_t>(options.utts_per_speaker_in_epoch) * static_cast<std::int64_t>(speakers.size());
  const std::int64_t n_batches = (total_clips + plan.batch_size - 1) / plan.batch_size;
  plan.global_batches = n_batches - n_batches % options.world_size;

  std::vector<std::size_t> all_speakers(speakers.size());
  std::iota(all_speakers.begin(), all_speakers.end(), std::size_t{0});
  std::deque<std::size_t> speaker_queue;
  bool warned = false;

  // The whole list is drawn (also the trimmed tail) so that every rank consumes the same stream.
  for (std::int64_t b = 0; b < n_batches; ++b) {
    EpochBatch batch;
    batch.index = b;
    batch.clip_length = rng.Uniform(options.min_clip_size, options.max_clip_size);
    if (batch.clip_length > longest) {
      throw DataError(fmt::format(
          "no training utterance has {} or more usable frames (the longest has {}); lower network.min_clip_size "
          "and network.max_clip_size or drop short utterances",
          batch.clip_length, longest));
    }
    batch.clips.reserve(static_cast<std::size_t>(plan.batch_size));
    while (static_cast<int>(batch.clips.size()) < plan.batch_size) {
      if (speaker_queue.empty()) {
        auto shuffled = all_speakers;
        rng.Shuffle(shuffled);
        speaker_queue.assign(shuffled.begin(), shuffled.end());
      }
      auto& s = speakers[speaker_queue.front()];
      speaker_queue.pop_front();
      if (s.longest < batch.clip_length) {
        // ASVtorch scans the speaker's whole queue here; the result is the same (nothing
        // qualifies) but the queue is left untouched.
        ++plan.skipped_speaker_draws;
        if (!warned) {
          ASV_LOG0(Warning,
                   "epoch {}: speaker {} has no training utterance of {} or more frames; skipping it for such clips "
                   "(further skips are counted, not logged)",
                   epoch, s.label, batch.clip_length);
          warned = true;
        }
        continue;
      }
      while (true) {
        if (s.queue.empty()) {
          auto shuffled = s.utterances;
          rng.Shuffle(shuffled);
          s.queue.assign(shuffled.begin(), shuffled.end());
        }
        const int u = s.queue.front();
        s.queue.pop_front();
        const std::int64_t frames = utterances[static_cast<std::size_t>(u)].frames;
        if (frames >= batch.clip_length) {
          batch.clips.push_back({u, s.label, rng.Uniform(0, frames - batch.clip_length)});
          break;
        }
      }
    }
    if (b < plan.global_batches && b % options.world_size == options.rank) plan.batches.push_back(std::move(batch));
  }
  if (plan.skipped_speaker_draws > 0) {
    ASV_LOG0(Info, "epoch {}: {} speaker draws skipped for want of long enough utterances", epoch,
             plan.skipped_speaker_draws);
  }
  return plan;
}

}  // namespace asv::train
