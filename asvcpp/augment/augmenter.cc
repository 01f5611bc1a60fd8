#include "asvcpp/augment/augmenter.h"

#include <stdexcept>

#include <fmt/format.h>

#include "asvcpp/audio/decode.h"
#include "asvcpp/augment/reverberate.h"
#include "asvcpp/data/random.h"

namespace asv::augment {
namespace {

using data::PickUniform;
using data::UniformUnit;

std::string Db(double snr) { return fmt::format("{:g}dB", snr); }

}  // namespace

std::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kReverb:
      return "reverb";
    case Kind::kNoise:
      return "noise";
    case Kind::kMusic:
      return "music";
    case Kind::kBabble:
      return "babble";
  }
  return "?";
}

Augmenter::Augmenter(MusanSets musan, std::vector<RirSet> rir_sets, int sample_rate, AugmentationOptions options)
    : musan_(std::move(musan)), rir_sets_(std::move(rir_sets)), sample_rate_(sample_rate), options_(std::move(options)) {
  if (sample_rate_ <= 0) throw std::invalid_argument("Augmenter: sample rate must be positive");
  if (musan_.music.empty() || musan_.speech.empty() || musan_.noise.empty()) {
    throw std::invalid_argument("Augmenter: a MUSAN set is empty");
  }
  if (rir_sets_.empty()) throw std::invalid_argument("Augmenter: no RIR set");
  for (const RirSet& set : rir_sets_) {
    if (set.rirs.empty()) throw std::invalid_argument("Augmenter: RIR set " + set.name + " is empty");
    if (!(set.probability > 0.0)) throw std::invalid_argument("Augmenter: RIR set " + set.name + " has no probability");
  }
  const auto& o = options_;
  if (o.noise_snrs_db.empty() || o.music_snrs_db.empty() || o.babble_snrs_db.empty() || o.music_counts.empty() ||
      o.babble_counts.empty()) {
    throw std::invalid_argument("Augmenter: empty SNR or count list");
  }
  if (!(o.noise_interval_seconds >= 0.0)) throw std::invalid_argument("Augmenter: negative noise interval");
  for (const std::vector<int>* counts : {&o.music_counts, &o.babble_counts}) {
    for (const int c : *counts) {
      if (c < 1) throw std::invalid_argument("Augmenter: a count of background recordings below 1");
    }
  }
}

std::vector<float> Augmenter::Load(const std::filesystem::path& path, std::size_t max_samples) const {
  audio::DecodeOptions decode;
  decode.sample_rate = sample_rate_;
  decode.max_samples = max_samples;
  return audio::DecodeFile(path, decode).samples;
}

Augmented Augmenter::Apply(Kind kind, const std::vector<float>& clean, std::mt19937_64& rng) const {
  if (clean.empty()) throw std::invalid_argument("Augmenter::Apply: empty signal");
  Augmented out;
  switch (kind) {
    case Kind::kReverb:
      out = Reverb(clean, rng);
      break;
    case Kind::kNoise:
      out = Foreground(clean, rng);
      break;
    case Kind::kMusic:
    case Kind::kBabble:
      out = Background(kind, clean, rng);
      break;
  }
  // As wav-reverberate writes it and the MFCC extraction reads it: a 16-bit WAV.
  QuantizeToInt16(out.samples);
  return out;
}

Augmented Augmenter::Reverb(const std::vector<float>& clean, std::mt19937_64& rng) const {
  double total = 0.0;
  for (const RirSet& set : rir_sets_) total += set.probability;
  const double u = UniformUnit(rng) * total;
  const RirSet* set = &rir_sets_.back();
  double cumulative = 0.0;
  for (const RirSet& s : rir_sets_) {
    cumulative += s.probability;
    if (u < cumulative) {
      set = &s;
      break;
    }
  }
  const Rir& rir = PickUniform(set->rirs, rng);
  const std::vector<float> h = Load(rir.path, 0);
  return {Reverberate(clean, &h, {}, sample_rate_), fmt::format("reverb {} {}", set->name, rir.id)};
}

Augmented Augmenter::Foreground(const std::vector<float>& clean, std::mt19937_64& rng) const {
  struct Placed {
    std::vector<float> samples;
    double snr;
    double start;
  };
  std::vector<Placed> placed;
  std::string description = "noise";
  const double duration = static_cast<double>(clean.size()) / sample_rate_;
  for (double t = 0.0; t < duration;) {
    const Recording& noise = PickUniform(musan_.noise, rng);
    const double snr = PickUniform(options_.noise_snrs_db, rng);
    // Read whole even when it runs past the end: its power is that of the whole recording, as
    // augment_data_dir.py passes the noise file unchanged to wav-reverberate.
    std::vector<float> samples = Load(noise.path, 0);
    const double seconds = static_cast<double>(samples.size()) / sample_rate_;
    description += fmt::format(" {}@{}+{}s", noise.id, Db(snr), t);
    placed.push_back({std::move(samples), snr, t});
    t += seconds + options_.noise_interval_seconds;
  }
  std::vector<AdditiveSignal> additive;
  for (const Placed& p : placed) additive.push_back({&p.samples, p.snr, p.start});
  return {Reverberate(clean, nullptr, additive, sample_rate_), std::move(description)};
}

Augmented Augmenter::Background(Kind kind, const std::vector<float>& clean, std::mt19937_64& rng) const {
  const bool music = kind == Kind::kMusic;
  const std::vector<Recording>& set = music ? musan_.music : musan_.speech;
  const int count = PickUniform(music ? options_.music_counts : options_.babble_counts, rng);
  const std::vector<double>& snrs = music ? options_.music_snrs_db : options_.babble_snrs_db;
  std::vector<std::vector<float>> noises(static_cast<std::size_t>(count));
  std::vector<AdditiveSignal> additive;
  std::string description(KindName(kind));
  for (auto& samples : noises) {
    const Recording& noise = PickUniform(set, rng);
    const double snr = PickUniform(snrs, rng);
    samples = RepeatToLength(Load(noise.path, clean.size()), clean.size());
    additive.push_back({&samples, snr, 0.0});
    description += fmt::format(" {}@{}", noise.id, Db(snr));
  }
  return {Reverberate(clean, nullptr, additive, sample_rate_), std::move(description)};
}

}  // namespace asv::augment
