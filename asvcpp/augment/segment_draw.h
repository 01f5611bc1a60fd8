// Per-segment augmentation draws for training on random fixed-length segments (e.g. 2 s, 32,240
// samples for 200 frames), made on the CPU and reproducible from a seed, and the recordings they
// cut from (decoded once and cached). The mixing itself runs in batch on the training device
// (batched_augment.h); this header has no LibTorch.
//
// Which segments are augmented and how follows WeSpeaker (wespeaker/dataset/processor.py,
// add_reverb_noise): with probability aug_prob a segment is augmented; then reverberation or
// additive noise with probability 1/2 each (aug_type = randint(1, 2)); the additive recording is
// one drawn uniformly over all of MUSAN (noise, music and speech together, as WeSpeaker's noise
// LMDB holds them), so the kind is noise, music or babble in proportion to the sizes of the sets.
// What each kind then mixes follows the Kaldi-semantics Augmenter (augmenter.h), with its RIR sets
// and AugmentationOptions' SNR and count lists, cut to the segment:
//
//  kind    | Kaldi's whole utterance (Augmenter::Apply)      | a segment (DrawSegment)
//  --------|-------------------------------------------------|------------------------------------
//  reverb  | RIR set by probability, RIR uniformly in it     | the same
//  noise   | from t = 0: a noise from its start; next one at | the same sequence, but a noise longer
//          | t + its duration + noise_interval; its power    | than the rest of the segment is a
//          | for the SNR is the whole recording's            | random chunk of it (WeSpeaker's
//          |                                                 | get_random_chunk), and every noise's
//          |                                                 | power is that of the piece added
//  music / | count from the list; each recording from its    | each recording from a uniformly drawn
//  babble  | start, tiled or cut to the utterance            | offset (cut; or tiled from its start
//          |                                                 | when shorter than the segment)
//  signal  | the utterance's mean square                     | the segment's mean square
//  power   |                                                 | (WeSpeaker's: the chunk's)
//
// In both, the mixture is normalised to the input's mean square (wav-reverberate
// --normalize-output; WeSpeaker instead scales the peak to 1), and a segment is either reverberated
// or noised, never both.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "asvcpp/augment/augmenter.h"
#include "asvcpp/augment/noise_sets.h"

namespace asv::augment {

/// What a segment gets: nothing, or one of the Augmenter's kinds.
enum class SegmentKind { kNone, kReverb, kNoise, kMusic, kBabble };

/// "none", "reverb", "noise", "music", "babble".
std::string_view SegmentKindName(SegmentKind kind);

/// How segments are drawn (the defaults: WeSpeaker's aug_prob and reverb share, Kaldi's lists).
struct SegmentAugmentOptions {
  double aug_prob = 0.6;      ///< Probability that a segment is augmented, in [0, 1].
  double reverb_share = 0.5;  ///< Of the augmented segments, the share reverberated, in [0, 1].
  AugmentationOptions lists;  ///< SNRs (dB), background counts and the foreground interval (s).
};

/// One piece of a MUSAN recording added to a segment.
struct NoisePiece {
  std::size_t recording = 0;       ///< Index in the kind's set: MusanSets::noise, music or speech.
  std::int64_t source_offset = 0;  ///< First sample of the recording, at the bank's sample rate.
  /// Samples added (> 0). Sample i of the piece is recording[(source_offset + i) mod size]: a
  /// piece longer than the recording tiles it from its start.
  std::int64_t length = 0;
  std::int64_t start = 0;  ///< Segment sample the piece's first sample is added to.
  double snr_db = 0.0;     ///< dB of the segment's mean square over the piece's.
};

/// The draws of one segment.
struct SegmentDraw {
  SegmentKind kind = SegmentKind::kNone;
  std::size_t rir_set = 0;         ///< kReverb: index in NoiseBank::rir_sets().
  std::size_t rir = 0;             ///< kReverb: index in that set's rirs.
  std::vector<NoisePiece> pieces;  ///< kNoise / kMusic / kBabble: what is added (else empty).
};

/// The recordings segments are mixed with: MUSAN's sets and the RIR sets, decoded on first use at
/// one sample rate and kept in memory as int16 (rounded and clipped; 16-bit sources at that rate
/// are kept exactly), so each file is decoded once per process. All of MUSAN (109 h at 16 kHz)
/// takes about 12.6 GB once every recording has been drawn; RIRs count 2 bytes a sample likewise.
/// Thread-safe: several threads may draw and cut at once (a file two threads need at the same
/// moment may be decoded twice; one copy is kept).
class NoiseBank {
 public:
  /// `sample_rate` (Hz) of the speech. Throws std::invalid_argument for a non-positive rate, an
  /// empty MUSAN or RIR set, or an RIR set without a positive probability.
  NoiseBank(MusanSets musan, std::vector<RirSet> rir_sets, int sample_rate);

  /// The decoded samples (int16 value range) of recording `index` of the set of `kind` (kNoise:
  /// musan().noise, kMusic: music, kBabble: speech). Throws std::out_of_range for an index past
  /// the set or another kind, DataError naming the file when it cannot be decoded or is empty.
  std::shared_ptr<const std::vector<std::int16_t>> MusanSamples(SegmentKind kind, std::size_t index) const;

  /// The decoded samples of RIR `index` of RIR set `set`, as the file holds them (int16 value
  /// range; wav-reverberate's 2^-15 scaling is applied by the mixing). Errors as MusanSamples.
  std::shared_ptr<const std::vector<std::int16_t>> RirSamples(std::size_t set, std::size_t index) const;

  const MusanSets& musan() const noexcept { return musan_; }
  const std::vector<RirSet>& rir_sets() const noexcept { return rir_sets_; }
  int sample_rate() const noexcept { return sample_rate_; }
  /// Bytes of decoded samples held now.
  std::size_t CachedBytes() const;

 private:
  using Samples = std::shared_ptr<const std::vector<std::int16_t>>;
  Samples Cached(std::pair<int, std::size_t> key, const std::filesystem::path& path) const;

  MusanSets musan_;
  std::vector<RirSet> rir_sets_;
  int sample_rate_;
  mutable std::mutex mutex_;
  mutable std::map<std::pair<int, std::size_t>, Samples> cache_;  // (set, index): set -1 .. -3 MUSAN
};

/// Draws what a segment of `segment_samples` samples gets, every draw from `rng` (so a segment's
/// draws are reproducible from the generator's state, whatever thread makes them), in this order:
/// - u < aug_prob (u uniform in [0, 1) from 53 bits of one rng() call) or else kNone;
/// - v < reverb_share (as u): kReverb, an RIR set by its probability and an RIR uniformly in it
///   (as Augmenter::Apply);
/// - else a recording uniformly over MUSAN's noise, music and speech sets together; its set names
///   the kind, and it is the kind's first recording:
///   - kNoise: from t = 0 while t < segment_samples: the noise (the first, then one uniformly
///     drawn), an SNR uniformly from noise_snrs_db; a noise of at most segment_samples - t
///     samples is added whole at t, a longer one as the chunk of segment_samples - t samples from
///     a uniformly drawn offset in [0, size - (segment_samples - t)];
///     t += piece length + round(noise_interval_seconds * sample rate).
///   - kMusic / kBabble: a count uniformly from music_counts / babble_counts; that many
///     recordings (the first, then uniformly drawn, with replacement), each with an SNR uniformly
///     from the kind's list, over the whole segment (start 0, length segment_samples) from an
///     offset uniformly in [0, size - segment_samples], or from offset 0 tiled when shorter.
/// Recording lengths come from the bank (which decodes the drawn files if not yet cached).
/// Throws std::invalid_argument for segment_samples < 1, a probability outside [0, 1], an empty
/// SNR or count list, a count below 1 or a negative interval; DataError as NoiseBank::MusanSamples.
SegmentDraw DrawSegment(const NoiseBank& bank, std::int64_t segment_samples, const SegmentAugmentOptions& options,
                        std::mt19937_64& rng);

/// The samples of `piece` of a recording of `kind`'s set (float, int16 value range; `length`
/// samples, tiled as NoisePiece says). Throws std::invalid_argument for a piece of no samples or a
/// negative offset; errors of NoiseBank::MusanSamples.
std::vector<float> CutPiece(const NoiseBank& bank, SegmentKind kind, const NoisePiece& piece);

/// One line naming the draws, e.g. "reverb smallroom Room001-00001",
/// "babble speech-librivox-0001@17dB+0:32240 ..." (id@SNR+start:length in samples), "none".
std::string DescribeDraw(const NoiseBank& bank, const SegmentDraw& draw);

}  // namespace asv::augment
