// Tiny synthetic speaker data for training tests: each speaker's frames are a Gaussian blob
// around a speaker-specific mean (30 dims by default), utterances of varying length.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "asvcpp/train/training_data.h"
#include "asvcpp/train/rng.h"
#include "asvcpp/train/trainer.h"

namespace asv::train::testing {

struct SyntheticSpec {
  int speakers = 8;
  int utterances_per_speaker = 12;
  int feat_dim = 30;
  std::int64_t min_frames = 60;
  std::int64_t max_frames = 160;
  double mean_scale = 1.0;   ///< std of the speaker means
  double noise_scale = 1.0;  ///< std of the frames around the mean
  std::uint64_t seed = 7;
};

inline double Gaussian(Rng& rng) {
  // Box-Muller on two uniforms in (0, 1]; portable (no std distributions).
  const double u1 = (static_cast<double>(rng.Next() >> 11) + 1.0) / 9007199254740992.0;
  const double u2 = static_cast<double>(rng.Next() >> 11) / 9007199254740992.0;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

/// Utterances grouped by speaker in interleaved order (utterance i has speaker i % speakers).
inline TrainingData MakeSyntheticData(const SyntheticSpec& spec) {
  Rng rng(spec.seed);
  std::vector<std::vector<double>> means(static_cast<std::size_t>(spec.speakers));
  for (auto& m : means) {
    for (int f = 0; f < spec.feat_dim; ++f) m.push_back(spec.mean_scale * Gaussian(rng));
  }
  std::vector<Matrix> utterances;
  std::vector<std::string> names;
  TrainingData data;
  for (int i = 0; i < spec.speakers * spec.utterances_per_speaker; ++i) {
    const int s = i % spec.speakers;
    const std::int64_t frames = rng.Uniform(spec.min_frames, spec.max_frames);
    Matrix m(frames, spec.feat_dim);
    for (std::int64_t t = 0; t < frames; ++t) {
      for (int f = 0; f < spec.feat_dim; ++f) {
        m(t, f) = static_cast<float>(means[static_cast<std::size_t>(s)][static_cast<std::size_t>(f)] +
                                     spec.noise_scale * Gaussian(rng));
      }
    }
    utterances.push_back(std::move(m));
    names.push_back("spk" + std::to_string(s) + "-utt" + std::to_string(i));
    data.speakers.push_back(s);
  }
  data.source = std::make_shared<data::InMemoryFeatureSource>(std::move(utterances), std::move(names));
  data.n_speakers = spec.speakers;
  return data;
}

/// The small StandardNet the training tests use on MakeSyntheticData's 8 speakers: 64-unit frame
/// layers, 64-dim statistics, 32-dim embeddings, minibatches of 16 clips of 20-40 frames (8 per
/// epoch), 16 validation utterances, momentum 0.5, seed 11. Callers set epochs, workers, device.
inline TrainerOptions SmallTrainerOptions() {
  TrainerOptions o;
  auto& n = o.network;
  n.frame_layer_size = 64;
  n.stat_size = 64;
  n.embedding_size = 32;
  n.min_clip_size = 20;
  n.max_clip_size = 40;
  n.minibatch_size = 16;
  n.utts_per_speaker_in_epoch = 16;
  n.validation_utterances = 16;
  n.print_interval = 4;
  n.accuracy_print_interval = 2;
  n.max_batch_size_in_frames = 2000;
  n.momentum = 0.5;
  o.seed = 11;
  return o;
}

}  // namespace asv::train::testing
