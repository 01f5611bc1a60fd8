#include "asvcpp/augment/segment_draw.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "asvcpp/audio/decode.h"
#include "asvcpp/base/error.h"
#include "asvcpp/data/random.h"

namespace asv::augment {
namespace {

using data::PickUniform;
using data::UniformUnit;

std::uint64_t Index(std::mt19937_64& rng, std::size_t n) {
  return data::UniformIndex(rng, n);
}

// Cache keys of the MUSAN sets (RIR sets use their index, from 0).
int MusanKey(SegmentKind kind) {
  switch (kind) {
    case SegmentKind::kNoise:
      return -1;
    case SegmentKind::kMusic:
      return -2;
    case SegmentKind::kBabble:
      return -3;
    default:
      throw std::out_of_range(fmt::format("NoiseBank: no MUSAN set for kind {}", SegmentKindName(kind)));
  }
}

void Validate(std::int64_t segment_samples, const SegmentAugmentOptions& options) {
  if (segment_samples < 1) throw std::invalid_argument("DrawSegment: segment_samples must be at least 1");
  for (const double p : {options.aug_prob, options.reverb_share}) {
    if (!(p >= 0.0 && p <= 1.0)) {
      throw std::invalid_argument(fmt::format("DrawSegment: probability {} is not in [0, 1]", p));
    }
  }
  const AugmentationOptions& o = options.lists;
  if (o.noise_snrs_db.empty() || o.music_snrs_db.empty() || o.babble_snrs_db.empty() || o.music_counts.empty() ||
      o.babble_counts.empty()) {
    throw std::invalid_argument("DrawSegment: empty SNR or count list");
  }
  if (!(o.noise_interval_seconds >= 0.0)) throw std::invalid_argument("DrawSegment: negative noise interval");
  for (const std::vector<int>* counts : {&o.music_counts, &o.babble_counts}) {
    for (const int c : *counts) {
      if (c < 1) throw std::invalid_argument("DrawSegment: a count of background recordings below 1");
    }
  }
}

const std::vector<Recording>& SetOf(const MusanSets& musan, SegmentKind kind) {
  switch (kind) {
    case SegmentKind::kNoise:
      return musan.noise;
    case SegmentKind::kMusic:
      return musan.music;
    case SegmentKind::kBabble:
      return musan.speech;
    default:
      throw std::out_of_range(fmt::format("NoiseBank: no MUSAN set for kind {}", SegmentKindName(kind)));
  }
}

}  // namespace

std::string_view SegmentKindName(SegmentKind kind) {
  switch (kind) {
    case SegmentKind::kNone:
      return "none";
    case SegmentKind::kReverb:
      return "reverb";
    case SegmentKind::kNoise:
      return "noise";
    case SegmentKind::kMusic:
      return "music";
    case SegmentKind::kBabble:
      return "babble";
  }
  return "?";
}

NoiseBank::NoiseBank(MusanSets musan, std::vector<RirSet> rir_sets, int sample_rate)
    : musan_(std::move(musan)), rir_sets_(std::move(rir_sets)), sample_rate_(sample_rate) {
  if (sample_rate_ <= 0) throw std::invalid_argument("NoiseBank: sample rate must be positive");
  if (musan_.music.empty() || musan_.speech.empty() || musan_.noise.empty()) {
    throw std::invalid_argument("NoiseBank: a MUSAN set is empty");
  }
  if (rir_sets_.empty()) throw std::invalid_argument("NoiseBank: no RIR set");
  for (const RirSet& set : rir_sets_) {
    if (set.rirs.empty()) throw std::invalid_argument("NoiseBank: RIR set " + set.name + " is empty");
    if (!(set.probability > 0.0)) throw std::invalid_argument("NoiseBank: RIR set " + set.name + " has no probability");
  }
}

NoiseBank::Samples NoiseBank::Cached(std::pair<int, std::size_t> key, const std::filesystem::path& path) const {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  audio::DecodeOptions decode;
  decode.sample_rate = sample_rate_;
  const std::vector<float> samples = audio::DecodeFile(path, decode).samples;
  if (samples.empty()) throw DataError(fmt::format("{}: no samples (an empty noise or RIR recording)", path.string()));
  auto converted = std::make_shared<std::vector<std::int16_t>>(samples.size());
  std::transform(samples.begin(), samples.end(), converted->begin(),
                 [](float v) { return static_cast<std::int16_t>(std::clamp(std::nearbyint(v), -32768.0f, 32767.0f)); });
  const std::lock_guard<std::mutex> lock(mutex_);
  return cache_.emplace(key, std::move(converted)).first->second;
}

std::shared_ptr<const std::vector<std::int16_t>> NoiseBank::MusanSamples(SegmentKind kind, std::size_t index) const {
  const std::vector<Recording>& set = SetOf(musan_, kind);
  if (index >= set.size()) {
    throw std::out_of_range(fmt::format("NoiseBank: {} recording {} of {}", SegmentKindName(kind), index, set.size()));
  }
  return Cached({MusanKey(kind), index}, set[index].path);
}

std::shared_ptr<const std::vector<std::int16_t>> NoiseBank::RirSamples(std::size_t set, std::size_t index) const {
  if (set >= rir_sets_.size() || index >= rir_sets_[set].rirs.size()) {
    throw std::out_of_range(fmt::format("NoiseBank: RIR {} of set {} does not exist", index, set));
  }
  return Cached({static_cast<int>(set), index}, rir_sets_[set].rirs[index].path);
}

std::size_t NoiseBank::CachedBytes() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::size_t bytes = 0;
  for (const auto& [key, samples] : cache_) bytes += samples->size() * sizeof(std::int16_t);
  return bytes;
}

SegmentDraw DrawSegment(const NoiseBank& bank, std::int64_t segment_samples, const SegmentAugmentOptions& options,
                        std::mt19937_64& rng) {
  Validate(segment_samples, options);
  SegmentDraw draw;
  if (!(UniformUnit(rng) < options.aug_prob)) return draw;
  if (UniformUnit(rng) < options.reverb_share) {
    draw.kind = SegmentKind::kReverb;
    const std::vector<RirSet>& sets = bank.rir_sets();
    double total = 0.0;
    for (const RirSet& set : sets) total += set.probability;
    const double u = UniformUnit(rng) * total;
    draw.rir_set = sets.size() - 1;
    double cumulative = 0.0;
    for (std::size_t s = 0; s < sets.size(); ++s) {
      cumulative += sets[s].probability;
      if (u < cumulative) {
        draw.rir_set = s;
        break;
      }
    }
    draw.rir = static_cast<std::size_t>(Index(rng, sets[draw.rir_set].rirs.size()));
    return draw;
  }
  const MusanSets& musan = bank.musan();
  std::size_t first =
      static_cast<std::size_t>(Index(rng, musan.noise.size() + musan.music.size() + musan.speech.size()));
  if (first < musan.noise.size()) {
    draw.kind = SegmentKind::kNoise;
  } else if ((first -= musan.noise.size()) < musan.music.size()) {
    draw.kind = SegmentKind::kMusic;
  } else {
    first -= musan.music.size();
    draw.kind = SegmentKind::kBabble;
  }
  const AugmentationOptions& lists = options.lists;
  const std::size_t set_size = SetOf(musan, draw.kind).size();
  const auto size_of = [&](std::size_t recording) {
    return static_cast<std::int64_t>(bank.MusanSamples(draw.kind, recording)->size());
  };
  if (draw.kind == SegmentKind::kNoise) {
    const auto interval = static_cast<std::int64_t>(std::llround(lists.noise_interval_seconds * bank.sample_rate()));
    for (std::int64_t t = 0; t < segment_samples;) {
      NoisePiece piece;
      piece.recording = draw.pieces.empty() ? first : static_cast<std::size_t>(Index(rng, set_size));
      piece.snr_db = PickUniform(lists.noise_snrs_db, rng);
      const std::int64_t size = size_of(piece.recording);
      const std::int64_t rest = segment_samples - t;
      piece.start = t;
      piece.length = std::min(size, rest);
      if (size > rest)
        piece.source_offset = static_cast<std::int64_t>(Index(rng, static_cast<std::size_t>(size - rest + 1)));
      draw.pieces.push_back(piece);
      t += piece.length + interval;
    }
    return draw;
  }
  const bool music = draw.kind == SegmentKind::kMusic;
  const int count = PickUniform(music ? lists.music_counts : lists.babble_counts, rng);
  const std::vector<double>& snrs = music ? lists.music_snrs_db : lists.babble_snrs_db;
  for (int k = 0; k < count; ++k) {
    NoisePiece piece;
    piece.recording = k == 0 ? first : static_cast<std::size_t>(Index(rng, set_size));
    piece.snr_db = PickUniform(snrs, rng);
    const std::int64_t size = size_of(piece.recording);
    piece.length = segment_samples;
    if (size >= segment_samples) {
      piece.source_offset = static_cast<std::int64_t>(Index(rng, static_cast<std::size_t>(size - segment_samples + 1)));
    }
    draw.pieces.push_back(piece);
  }
  return draw;
}

std::vector<float> CutPiece(const NoiseBank& bank, SegmentKind kind, const NoisePiece& piece) {
  if (piece.length < 1 || piece.source_offset < 0) {
    throw std::invalid_argument(
        fmt::format("CutPiece: a piece of {} samples from offset {}", piece.length, piece.source_offset));
  }
  const std::shared_ptr<const std::vector<std::int16_t>> recording = bank.MusanSamples(kind, piece.recording);
  const std::size_t size = recording->size();
  std::vector<float> out(static_cast<std::size_t>(piece.length));
  std::size_t from = static_cast<std::size_t>(piece.source_offset) % size;
  for (float& v : out) {
    v = (*recording)[from];
    if (++from == size) from = 0;
  }
  return out;
}

std::string DescribeDraw(const NoiseBank& bank, const SegmentDraw& draw) {
  std::string out(SegmentKindName(draw.kind));
  if (draw.kind == SegmentKind::kReverb) {
    const RirSet& set = bank.rir_sets().at(draw.rir_set);
    return fmt::format("{} {} {}", out, set.name, set.rirs.at(draw.rir).id);
  }
  if (draw.kind == SegmentKind::kNone) return out;
  const std::vector<Recording>& set = SetOf(bank.musan(), draw.kind);
  for (const NoisePiece& p : draw.pieces) {
    out += fmt::format(" {}@{:g}dB+{}:{}", set.at(p.recording).id, p.snr_db, p.start, p.length);
  }
  return out;
}

}  // namespace asv::augment
