// The four augmented copies of an utterance in Kaldi's VoxCeleb x-vector recipe
// (egs/voxceleb/v2/run.sh, which ASVtorch's asvtorch_augment.sh runs): reverberation with a
// simulated room impulse response, foreground MUSAN noises, background MUSAN music and babble of
// MUSAN speech, each mixed by wav-reverberate (reverberate.h).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "asvcpp/augment/noise_sets.h"

namespace asv::augment {

/// The kinds of augmented copy; their names are Kaldi's utterance-id suffixes ("-reverb", ...).
enum class Kind { kReverb, kNoise, kMusic, kBabble };

/// "reverb", "noise", "music", "babble".
std::string_view KindName(Kind kind);

/// Kaldi's VoxCeleb v2 settings (run.sh; steps/data/augment_data_dir.py options).
struct AugmentationOptions {
  std::vector<double> noise_snrs_db = {15, 10, 5, 0};      ///< --fg-snrs 15:10:5:0
  double noise_interval_seconds = 1.0;                     ///< --fg-interval 1
  std::vector<double> music_snrs_db = {15, 10, 8, 5};      ///< --bg-snrs 15:10:8:5
  std::vector<int> music_counts = {1};                     ///< --num-bg-noises 1
  std::vector<double> babble_snrs_db = {20, 17, 15, 13};   ///< --bg-snrs 20:17:15:13
  std::vector<int> babble_counts = {3, 4, 5, 6, 7};        ///< --num-bg-noises 3:4:5:6:7
};

/// An augmented copy and what went into it.
struct Augmented {
  /// As many samples as the clean input, as wav-reverberate writes them to a 16-bit WAV
  /// (QuantizeToInt16: truncated toward zero, clipped).
  std::vector<float> samples;
  /// One line, e.g. "reverb smallroom Room001-00001" or
  /// "babble speech-librivox-0001@17dB speech-us-gov-0042@13dB ..." (noise: id@SNR+start s).
  std::string description;
};

/// Draws and mixes augmented copies. Every draw comes from the caller's generator, so a copy is
/// reproducible from its seed whatever thread computes it. Thread-safe (const; reads files).
class Augmenter {
 public:
  /// `sample_rate` (Hz) of the speech; noises and RIRs are decoded and resampled to it.
  /// Throws std::invalid_argument for an empty RIR or MUSAN set, a non-positive probability or
  /// sample rate, empty SNR / count lists, a count below 1 or a negative noise interval.
  Augmenter(MusanSets musan, std::vector<RirSet> rir_sets, int sample_rate, AugmentationOptions options = {});

  /// The copy of kind `kind` of `clean` (mono, int16 value range, at the sample rate), with the
  /// draws of Kaldi's scripts:
  /// - reverb: an RIR set by its probability, then an RIR uniformly within it
  ///   (reverberate_data_dir.py draws a room by the summed probability of its RIRs, then an RIR
  ///   of the room: the same distribution); wav-reverberate with the RIR.
  /// - noise: from t = 0 while t < duration: a uniformly drawn MUSAN noise at a uniformly drawn
  ///   SNR of noise_snrs_db, starting at t; t += its duration + noise_interval_seconds. Its power
///   for the SNR is that of the whole recording, also when the utterance ends first.
  /// - music / babble: a uniformly drawn count of recordings (with replacement), each at its own
  ///   uniformly drawn SNR, each repeated or cut to the utterance's length (--duration) before its
///   power is taken, from 0.
  /// Throws DataError naming the file when a noise or RIR cannot be decoded, and
  /// std::invalid_argument for an empty `clean`.
  Augmented Apply(Kind kind, const std::vector<float>& clean, std::mt19937_64& rng) const;

  int sample_rate() const noexcept { return sample_rate_; }

 private:
  std::vector<float> Load(const std::filesystem::path& path, std::size_t max_samples) const;
  Augmented Reverb(const std::vector<float>& clean, std::mt19937_64& rng) const;
  Augmented Foreground(const std::vector<float>& clean, std::mt19937_64& rng) const;
  Augmented Background(Kind kind, const std::vector<float>& clean, std::mt19937_64& rng) const;

  MusanSets musan_;
  std::vector<RirSet> rir_sets_;
  int sample_rate_;
  AugmentationOptions options_;
};

}  // namespace asv::augment
