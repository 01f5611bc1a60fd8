// asv_bench_features: Kaldi MFCC + energy VAD (asvcpp/features) as stage 1 computes them, the
// asvcpp side of case 1 of run_benchmarks.py.
//
// Input: `--seconds` of deterministic speech-like noise at 16 kHz (noise bursts with a slowly
// varying envelope and silences, int16 range), cut into utterances of `--utterance-seconds`. Each
// utterance: features::Mfcc::Compute with the options of `--config` (ASVtorch's mfcc.conf;
// Kaldi's dither 1.0), then ComputeVadEnergy with VadOptions::VoxcelebV2(). Utterances run on
// `--threads` threads (ParallelFor, as stage 1 spreads utterances). Reported: seconds per pass
// (median, spread) and the real-time factor (processing time / audio time). --write FILE writes
// the audio as raw int16 for the peers (tools/bench/peers/features_peer.py); --dump FILE writes the
// MFCCs and VAD decisions of the first utterance computed without dither (float32, row-major
// [frames, num_ceps + 1], the last column the VAD decision), which the peer compares with its own.
// --batched cpu|cuda instead times features::BatchedMfcc (LibTorch operations; MFCCs only, no
// dither, no VAD): the audio cut into utterances of `--utterance-seconds` (a last, shorter piece is
// left out) is one [utterances, samples] tensor already on the device, and a pass ends when the
// MFCCs are on the device (synchronised by reading one value back). Reported as above, with
// "x_real_time" = audio seconds per second of processing.
// --batched-fbank cpu|cuda instead times the training data path's features: features::BatchedFbank
// with WeSpeaker's options (80 bins, hamming window, dither `--dither`, default 1.0, from a seeded
// generator on the device) and SubtractSegmentMean over `--segments` segments of
// `--segment-samples` samples (128 x 32,240: a minibatch of 200-frame segments) cut one after the
// other from the audio, as one tensor already on the device; a pass ends when the normalised
// features are on the device. Reported: "segments_per_second" (median) and "x_real_time".
#include <cmath>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/base/thread_pool.h"
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "asvcpp/features/batched_fbank.h"
#include "asvcpp/features/batched_mfcc.h"
#include "asvcpp/features/feature_options.h"
#include "asvcpp/features/kaldi_options.h"
#include "asvcpp/features/mfcc.h"
#include "asvcpp/features/vad.h"
#include "tools/bench/bench_util.h"
#include "tools/bench/source_dir.h"

namespace {

std::vector<std::int16_t> MakeAudio(std::int64_t samples, int rate, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::int16_t> audio(static_cast<std::size_t>(samples));
  const double kPi = 3.14159265358979323846;
  float low = 0.0f;
  for (std::int64_t i = 0; i < samples; ++i) {
    const double t = static_cast<double>(i) / rate;
    // 4 Hz syllable-like envelope, silent 30% of every 2.3 s.
    const double envelope = std::fmod(t, 2.3) < 0.7 ? 0.01 : 0.5 + 0.5 * std::sin(2 * kPi * 4 * t);
    low = 0.9f * low + 0.1f * normal(rng);  // some low-pass colour
    const double v = 3000.0 * envelope * (low * 2.0 + 0.3 * normal(rng));
    audio[static_cast<std::size_t>(i)] = static_cast<std::int16_t>(std::max(-32768.0, std::min(32767.0, v)));
  }
  return audio;
}

// --batched: features::BatchedMfcc over the whole utterances of `utterances` as one batch.
int Batched(asv::features::MfccOptions options, const std::vector<std::vector<float>>& utterances,
            std::int64_t per_utt, const std::string& device_name, int threads, int warmup, int repeats,
            double seconds, const std::string& json_path) {
  if (device_name == "cuda" && !torch::cuda::is_available()) {
    throw asv::ConfigError("--batched cuda: no usable GPU (or this LibTorch is a CPU build)");
  }
  torch::set_num_threads(threads);
  options.frame_opts.dither = 0.0f;
  const asv::features::BatchedMfcc mfcc(options);
  std::int64_t whole = 0;
  for (const auto& u : utterances) whole += static_cast<std::int64_t>(u.size()) == per_utt;
  torch::Tensor batch = torch::empty({whole, per_utt}, torch::kFloat32);
  for (std::int64_t i = 0; i < whole; ++i) {
    std::copy(utterances[static_cast<std::size_t>(i)].begin(), utterances[static_cast<std::size_t>(i)].end(),
              batch[i].data_ptr<float>());
  }
  const torch::Device device(device_name == "cuda" ? torch::kCUDA : torch::kCPU);
  batch = batch.to(device);
  std::int64_t frames = 0;
  const auto timing = asv::bench::Measure(warmup, repeats, [&] {
    const torch::Tensor feats = mfcc.Compute(batch);
    frames = feats.size(0) * feats.size(1);
    (void)feats.select(1, feats.size(1) - 1).sum().item<float>();  // waits for the device
  });
  const double audio_seconds = static_cast<double>(whole * per_utt) / options.frame_opts.samp_freq;
  auto report = asv::bench::Json{{"case", "features_batched"},
                                 {"device", device_name},
                                 {"seconds_audio", audio_seconds},
                                 {"seconds_requested", seconds},
                                 {"utterances", whole},
                                 {"threads", threads},
                                 {"frames", frames},
                                 {"time", timing.ToJson()},
                                 {"rtf_median", timing.Median() / audio_seconds},
                                 {"x_real_time", audio_seconds / timing.Median()}};
  asv::bench::WriteJson(report, json_path);
  return asv::kExitOk;
}

// --batched-fbank: features::BatchedFbank + SubtractSegmentMean over `segments` consecutive
// pieces of `audio`, `segment_samples` long, as one batch.
int BatchedFbankCase(const std::vector<std::int16_t>& audio, std::int64_t segments, std::int64_t segment_samples,
                     float dither, const std::string& device_name, int threads, int warmup, int repeats,
                     const std::string& json_path) {
  if (device_name == "cuda" && !torch::cuda::is_available()) {
    throw asv::ConfigError("--batched-fbank cuda: no usable GPU (or this LibTorch is a CPU build)");
  }
  if (segments * segment_samples > static_cast<std::int64_t>(audio.size())) {
    throw asv::ConfigError(fmt::format("--batched-fbank: {} segments of {} samples need {} samples of audio, "
                                       "--seconds gives {} (raise --seconds)",
                                       segments, segment_samples, segments * segment_samples, audio.size()));
  }
  torch::set_num_threads(threads);
  const auto options = asv::features::WespeakerFbankOptions();
  const asv::features::BatchedFbank fbank(options);
  torch::Tensor batch = torch::empty({segments, segment_samples}, torch::kFloat32);
  auto rows = batch.accessor<float, 2>();
  for (std::int64_t s = 0; s < segments; ++s) {
    for (std::int64_t i = 0; i < segment_samples; ++i) rows[s][i] = audio[static_cast<std::size_t>(s * segment_samples + i)];
  }
  const torch::Device device(device_name == "cuda" ? torch::kCUDA : torch::kCPU);
  batch = batch.to(device);
  at::Generator generator = device.is_cuda() ? at::globalContext().defaultGenerator(device).clone()
                                             : at::detail::createCPUGenerator(1);
  std::int64_t frames = 0;
  const auto timing = asv::bench::Measure(warmup, repeats, [&] {
    const torch::Tensor feats = asv::features::SubtractSegmentMean(fbank.Compute(batch, dither, generator));
    frames = feats.size(0) * feats.size(1);
    (void)feats.select(1, feats.size(1) - 1).sum().item<float>();  // waits for the device
  });
  const double audio_seconds = static_cast<double>(segments * segment_samples) / options.frame_opts.samp_freq;
  auto report = asv::bench::Json{{"case", "features_batched_fbank"},
                                 {"device", device_name},
                                 {"segments", segments},
                                 {"segment_samples", segment_samples},
                                 {"num_bins", options.mel_opts.num_bins},
                                 {"dither", dither},
                                 {"threads", threads},
                                 {"frames", frames},
                                 {"time", timing.ToJson()},
                                 {"segments_per_second", static_cast<double>(segments) / timing.Median()},
                                 {"x_real_time", audio_seconds / timing.Median()}};
  asv::bench::WriteJson(report, json_path);
  return asv::kExitOk;
}

int Main(int argc, char** argv) {
  double seconds = 600;
  double utterance_seconds = 10;
  int threads = 1;
  int warmup = 1;
  int repeats = 5;
  std::string config = std::string(asv::bench::SourceDir()) + "/run_configs/voxceleb/xvector/mfcc.conf";
  std::string write_path;
  std::string dump_path;
  std::string json_path = "-";
  std::string batched;
  std::string batched_fbank;
  std::int64_t segments = 128;
  std::int64_t segment_samples = 32240;
  float dither = 1.0f;
  CLI::App app{"asv_bench_features: Kaldi MFCC + energy VAD real-time factor"};
  app.add_option("--seconds", seconds, "Audio length")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--utterance-seconds", utterance_seconds, "Utterance length")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--threads", threads, "Threads over utterances")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--config", config, "Kaldi MFCC options file")->capture_default_str();
  app.add_option("--warmup", warmup, "Untimed passes first")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--repeats", repeats, "Timed passes")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--write", write_path, "Write the audio here (raw int16, 16 kHz)");
  app.add_option("--dump", dump_path,
                 "Write the first utterance's MFCCs and VAD without dither here (float32, [frames, ceps + 1])");
  app.add_option("--json", json_path, "Write the timings here (- = stdout)")->capture_default_str();
  app.add_option("--batched", batched, "Time batched MFCCs (features::BatchedMfcc, no dither, no VAD) on this device")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--batched-fbank", batched_fbank,
                 "Time WeSpeaker fbank + segment mean normalisation (features::BatchedFbank) on this device")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->excludes("--batched");
  app.add_option("--segments", segments, "--batched-fbank: segments per batch")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--segment-samples", segment_samples, "--batched-fbank: samples per segment (200 frames: 32240)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--dither", dither, "--batched-fbank: dither (sample units)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.footer(
      "Examples:\n  asv_bench_features --seconds 600 --threads 2 --json features.json\n"
      "  asv_bench_features --seconds 600 --batched cuda\n"
      "  asv_bench_features --batched-fbank cpu --threads 2");
  CLI11_PARSE(app, argc, argv);

  const auto options = asv::features::ReadKaldiConfig<asv::features::MfccOptions>(config);
  const int rate = static_cast<int>(options.frame_opts.samp_freq);
  const auto audio = MakeAudio(static_cast<std::int64_t>(seconds * rate), rate, 1);
  if (!write_path.empty()) {
    std::ofstream out(write_path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(audio.data()), static_cast<std::streamsize>(audio.size() * 2));
    if (!out) throw asv::DataError("cannot write " + write_path);
  }
  const std::int64_t per_utt = static_cast<std::int64_t>(utterance_seconds * rate);
  std::vector<std::vector<float>> utterances;
  for (std::int64_t begin = 0; begin < static_cast<std::int64_t>(audio.size()); begin += per_utt) {
    const std::int64_t end = std::min<std::int64_t>(begin + per_utt, static_cast<std::int64_t>(audio.size()));
    utterances.emplace_back(audio.begin() + begin, audio.begin() + end);
  }
  if (!batched_fbank.empty()) {
    return BatchedFbankCase(audio, segments, segment_samples, dither, batched_fbank, threads, warmup, repeats,
                            json_path);
  }
  if (!batched.empty()) return Batched(options, utterances, per_utt, batched, threads, warmup, repeats, seconds, json_path);
  const asv::features::Mfcc mfcc(options);
  const auto vad_options = asv::features::VadOptions::VoxcelebV2();
  if (!dump_path.empty() && !utterances.empty()) {
    auto exact = options;
    exact.frame_opts.dither = 0.0f;
    const auto& u = utterances.front();
    const asv::Matrix feats = asv::features::Mfcc(exact).Compute(u.data(), static_cast<std::int64_t>(u.size()));
    const auto vad = asv::features::ComputeVadEnergy(vad_options, feats);
    std::vector<float> rows;
    rows.reserve(static_cast<std::size_t>(feats.rows() * (feats.cols() + 1)));
    for (std::int64_t r = 0; r < feats.rows(); ++r) {
      for (std::int64_t c = 0; c < feats.cols(); ++c) rows.push_back(feats(r, c));
      rows.push_back(vad[static_cast<std::size_t>(r)]);
    }
    std::ofstream out(dump_path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(rows.data()), static_cast<std::streamsize>(rows.size() * sizeof(float)));
    if (!out) throw asv::DataError("cannot write " + dump_path);
  }
  std::vector<std::int64_t> frames(utterances.size());
  std::vector<double> voiced(utterances.size());
  const auto timing = asv::bench::Measure(warmup, repeats, [&] {
    asv::base::ParallelFor(utterances.size(), threads, [&](std::size_t i, int) {
      const auto& u = utterances[i];
      const asv::Matrix feats = mfcc.Compute(u.data(), static_cast<std::int64_t>(u.size()), i + 1);
      const auto vad = asv::features::ComputeVadEnergy(vad_options, feats);
      frames[i] = feats.rows();
      double v = 0;
      for (float x : vad) v += x;
      voiced[i] = v;
    });
  });
  std::int64_t total_frames = 0;
  double total_voiced = 0;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    total_frames += frames[i];
    total_voiced += voiced[i];
  }
  auto report = asv::bench::Json{{"case", "features"},
                                 {"seconds_audio", seconds},
                                 {"utterances", utterances.size()},
                                 {"threads", threads},
                                 {"frames", total_frames},
                                 {"voiced_fraction", total_voiced / std::max<std::int64_t>(total_frames, 1)},
                                 {"time", timing.ToJson()},
                                 {"rtf_median", timing.Median() / seconds}};
  asv::bench::WriteJson(report, json_path);
  return asv::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return asv::bench::RunMain(Main, argc, argv);
}
