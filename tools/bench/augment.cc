// asv_bench_augment: batched training-segment augmentation (asvcpp/augment/batched_augment.h) as
// the training data path runs it, in segments per second.
//
// One pass = one batch of `--batch` segments of `--samples` samples (32,240 = 200 frames):
//   CPU:    per segment a speed factor uniformly from 1.0, 0.9, 1.1 (WeSpeaker's speed_perturb)
//           and DrawSegment with the default options (aug_prob 0.6: reverb, noise, music,
//           babble); the segment's SpeedSourceSamples read from synthetic speech-like audio in
//           memory (as from the PCM store); CutAugmentationInputs.
//   device: the sources and inputs copied to `--device`, SpeedPerturb per factor group,
//           ApplyAugmentation, and one value read back (waits for the device).
// The noise bank is synthetic (written to a temporary folder): 20 MUSAN-like noises of 1 to 8 s,
// 10 music and 10 speech recordings of 10 s, 2 RIR sets of 10 RIRs of 0.5 to 1 s; decoded during
// the warm-up passes, as a training run decodes each file once. Reported: seconds per pass
// (median, spread), the medians of the CPU part, of the copy and speed perturbation, and of
// the copy of the inputs and ApplyAugmentation (each ended by reading a value back), and segments
// per second.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <torch/torch.h>
#include <unistd.h>

#include "asvcpp/audio/decode.h"
#include "asvcpp/augment/batched_augment.h"
#include "asvcpp/augment/segment_draw.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "tools/bench/bench_util.h"

namespace {

namespace stdfs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::vector<float> Noise(std::size_t n, std::mt19937_64& rng, double scale) {
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(std::round(std::clamp(normal(rng), -32768.0, 32767.0)));
  return x;
}

// A MUSAN / RIRS_NOISES look-alike under `root`.
asv::augment::NoiseBank MakeBank(const stdfs::path& root, int rate) {
  std::mt19937_64 rng(17);
  for (int i = 0; i < 20; ++i) {
    const auto n = static_cast<std::size_t>(rate * (1 + i % 8));
    asv::audio::WriteWav(root / fmt::format("musan/noise/n/noise-{:02}.wav", i), Noise(n, rng, 1000), rate);
  }
  for (int i = 0; i < 10; ++i) {
    asv::audio::WriteWav(root / fmt::format("musan/music/m/music-{:02}.wav", i), Noise(10 * rate, rng, 2000), rate);
    asv::audio::WriteWav(root / fmt::format("musan/speech/s/speech-{:02}.wav", i), Noise(10 * rate, rng, 2000), rate);
  }
  for (const char* room : {"smallroom", "mediumroom"}) {
    stdfs::create_directories(root / "RIRS_NOISES/simulated_rirs" / room);
    std::ofstream list(root / "RIRS_NOISES/simulated_rirs" / room / "rir_list");
    for (int i = 0; i < 10; ++i) {
      const auto n = static_cast<std::size_t>(rate / 2 + i * rate / 20);
      std::vector<float> h = Noise(n, rng, 3000);
      for (std::size_t t = 0; t < n; ++t)
        h[t] = std::round(h[t] * static_cast<float>(std::exp(-static_cast<double>(t) / 800.0)));
      h[10] = 30000;
      const std::string rel = fmt::format("simulated_rirs/{}/Room001/Room001-{:05}.wav", room, i);
      asv::audio::WriteWav(root / "RIRS_NOISES" / rel, h, rate);
      list << fmt::format("--rir-id {}-{} --room-id {}-Room001 RIRS_NOISES/{}\n", room, i, room, rel);
    }
  }
  return asv::augment::NoiseBank(asv::augment::ScanMusan(root / "musan"),
                                 asv::augment::SimulatedRoomRirs(root / "RIRS_NOISES"), rate);
}

int Main(int argc, char** argv) {
  std::int64_t batch = 128;
  std::int64_t samples = 32240;
  std::string device_name = "cpu";
  int threads = 1;
  int warmup = 2;
  int repeats = 10;
  std::string json_path = "-";
  CLI::App app{"asv_bench_augment: batched segment augmentation (speed, reverb, noise) in segments per second"};
  app.add_option("--batch", batch, "Segments per batch")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--samples", samples, "Samples per segment (16 kHz)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--device", device_name, "Where the batched part runs")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--threads", threads, "LibTorch intra-op threads")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--warmup", warmup, "Untimed passes first")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--repeats", repeats, "Timed passes")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--json", json_path, "Write the timings here (- = stdout)")->capture_default_str();
  app.footer("Examples:\n  asv_bench_augment --threads 2\n  asv_bench_augment --device cuda");
  CLI11_PARSE(app, argc, argv);
  if (device_name == "cuda" && !torch::cuda::is_available()) {
    throw asv::ConfigError("--device cuda: no usable GPU (or this LibTorch is a CPU build)");
  }
  torch::set_num_threads(threads);
  const torch::Device device(device_name == "cuda" ? torch::kCUDA : torch::kCPU);
  constexpr int kRate = 16000;

  const stdfs::path root = stdfs::temp_directory_path() / ("asv_bench_augment_" + std::to_string(::getpid()));
  stdfs::remove_all(root);
  const asv::augment::NoiseBank bank = MakeBank(root, kRate);
  std::mt19937_64 rng(1);
  const std::vector<float> speech = Noise(static_cast<std::size_t>(120 * kRate), rng, 3000);  // the "PCM store"

  const double factors[] = {1.0, 0.9, 1.1};
  std::vector<double> cpu_seconds, speed_seconds, mix_seconds;
  std::map<std::string, std::int64_t> kinds;
  double checksum = 0.0;
  const auto timing = asv::bench::Measure(warmup, repeats, [&] {
    const auto start = Clock::now();
    std::vector<asv::augment::SegmentDraw> draws;
    std::vector<torch::Tensor> sources(3);
    std::vector<std::vector<std::int64_t>> rows(3);
    std::vector<std::vector<float>> reads(3);
    for (std::int64_t b = 0; b < batch; ++b) {
      const auto k = static_cast<std::size_t>(rng() % 3);
      const std::int64_t n = asv::augment::SpeedSourceSamples(samples, factors[k]);
      const auto offset = static_cast<std::ptrdiff_t>(rng() % (speech.size() - static_cast<std::size_t>(n)));
      reads[k].insert(reads[k].end(), speech.begin() + offset, speech.begin() + offset + n);
      rows[k].push_back(b);
      draws.push_back(asv::augment::DrawSegment(bank, samples, {}, rng));
      ++kinds[std::string(asv::augment::SegmentKindName(draws.back().kind))];
    }
    const asv::augment::AugmentationInputs inputs = asv::augment::CutAugmentationInputs(bank, draws, samples);
    const auto cut = Clock::now();
    torch::Tensor segments = torch::empty({batch, samples}, torch::TensorOptions(device));
    for (std::size_t k = 0; k < 3; ++k) {
      if (rows[k].empty()) continue;
      const auto count = static_cast<std::int64_t>(rows[k].size());
      const torch::Tensor source =
          torch::from_blob(reads[k].data(), {count, static_cast<std::int64_t>(reads[k].size()) / count}).to(device);
      const torch::Tensor index = torch::tensor(torch::ArrayRef<std::int64_t>(rows[k]), torch::kInt64).to(device);
      segments.index_copy_(0, index, asv::augment::SpeedPerturb(source, factors[k], kRate).narrow(1, 0, samples));
    }
    checksum += segments[batch - 1][samples - 1].item<float>();  // waits for the device
    const auto speed = Clock::now();
    const torch::Tensor out = asv::augment::ApplyAugmentation(segments, inputs.To(device));
    checksum += out[batch - 1][samples - 1].item<float>();
    cpu_seconds.push_back(std::chrono::duration<double>(cut - start).count());
    speed_seconds.push_back(std::chrono::duration<double>(speed - cut).count());
    mix_seconds.push_back(std::chrono::duration<double>(Clock::now() - speed).count());
  });
  stdfs::remove_all(root);
  const auto median_of_timed = [&](std::vector<double> v) {
    v.erase(v.begin(), v.end() - static_cast<std::ptrdiff_t>(timing.seconds.size()));
    return asv::bench::Timing{v}.Median();
  };
  asv::bench::Json kind_counts = asv::bench::Json::object();
  for (const auto& [name, count] : kinds) kind_counts[name] = count;
  const auto report = asv::bench::Json{{"case", "augment_batched"},
                                       {"device", device_name},
                                       {"torch_threads", threads},
                                       {"batch", batch},
                                       {"samples", samples},
                                       {"time", timing.ToJson()},
                                       {"cpu_draw_cut_median_s", median_of_timed(cpu_seconds)},
                                       {"speed_median_s", median_of_timed(speed_seconds)},
                                       {"mix_median_s", median_of_timed(mix_seconds)},
                                       {"segments_per_s", static_cast<double>(batch) / timing.Median()},
                                       {"kinds_drawn", kind_counts},
                                       {"noise_bank_mb", static_cast<double>(bank.CachedBytes()) / 1e6},
                                       {"checksum", checksum}};
  asv::bench::WriteJson(report, json_path);
  return asv::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return asv::bench::RunMain(Main, argc, argv);
}
