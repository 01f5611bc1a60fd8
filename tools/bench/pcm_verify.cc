// asv_bench_pcm: what checking a PCM store's chunk checksums costs the training data path.
//
// Builds a store of `--minutes` of synthetic 16 kHz audio in utterances of `--seconds` each
// (written as WAVs into a temporary folder first), then times:
//   whole:  PcmStore::VerifyData, the SHA-256 of all of pcm.bin (GB/s);
//   epoch:  one training epoch's reads as the margin recipe's data path makes them: one random
//           `--segment`-second segment of every utterance, in a random order, on `--threads`
//           threads; first on a freshly opened store (every chunk is checked on its first read,
//           "first epoch"), then again on the same store (every chunk checked already, "later
//           epochs"), each the median of `--repeats` fresh openings / passes.
// The difference of the two epoch times is what the checks add to the first epoch of a process;
// later epochs pay nothing. Prints one JSON object (and writes it to --json when given).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include "asvcpp/audio/decode.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/pcm_store.h"
#include "tools/bench/bench_util.h"

namespace {

namespace stdfs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// One epoch: a random segment of every utterance, on `threads` threads. Returns seconds.
double Epoch(const asv::data::PcmStore& store, std::int64_t segment, int threads, unsigned seed) {
  std::vector<std::size_t> order(store.NumUtterances());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  std::atomic<std::size_t> next{0};
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937_64 local(seed * 1000 + static_cast<unsigned>(t));
      std::vector<float> buffer(static_cast<std::size_t>(segment));
      for (std::size_t k; (k = next.fetch_add(1)) < order.size();) {
        const std::size_t i = order[k];
        const std::int64_t n = std::min(segment, store.NumSamples(i));
        std::uniform_int_distribution<std::int64_t> at(0, store.NumSamples(i) - n);
        store.Read(i, at(local), n, buffer.data());
      }
    });
  }
  for (auto& thread : pool) thread.join();
  return Seconds(start);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Cost of the PCM store's chunk checksums on the training data path"};
  double minutes = 120;
  double seconds = 8;
  double segment_seconds = 2;
  int threads = 2;
  int repeats = 3;
  std::string json_path;
  std::string work;
  app.add_option("--minutes", minutes, "Audio in the store, minutes")->capture_default_str();
  app.add_option("--seconds", seconds, "Length of each utterance, seconds")->capture_default_str();
  app.add_option("--segment", segment_seconds, "Training segment, seconds")->capture_default_str();
  app.add_option("--threads", threads, "Reading threads (the data loader's)")->capture_default_str();
  app.add_option("--repeats", repeats, "Timed repeats")->capture_default_str();
  app.add_option("--work", work, "Folder for the WAVs and the store (default: a temporary one)");
  app.add_option("--json", json_path, "Also write the result here");
  CLI11_PARSE(app, argc, argv);
  try {
    asv::log::SetLevel(asv::log::Level::kWarning);
    const stdfs::path root =
        work.empty() ? stdfs::temp_directory_path() / fmt::format("asv_bench_pcm_{}", ::getpid()) : stdfs::path(work);
    stdfs::create_directories(root);
    const int rate = 16000;
    const auto utterances = static_cast<int>(std::ceil(minutes * 60 / seconds));
    const auto samples = static_cast<std::size_t>(seconds * rate);
    std::vector<asv::data::PcmStoreEntry> entries;
    std::mt19937_64 rng(7);
    std::normal_distribution<double> normal(0.0, 2000.0);
    std::vector<float> audio(samples);
    for (int u = 0; u < utterances; ++u) {
      for (float& v : audio) v = static_cast<float>(std::round(std::clamp(normal(rng), -32768.0, 32767.0)));
      const stdfs::path wav = root / "wav" / fmt::format("u{:06}.wav", u);
      if (!stdfs::exists(wav)) asv::audio::WriteWav(wav, audio, rate);
      entries.push_back({fmt::format("u{:06}", u), wav.string()});
    }
    asv::data::PcmStoreOptions options;
    options.threads = std::max(1, threads);
    options.progress = asv::base::ProgressMode::kSilent;
    const stdfs::path folder = root / "store";
    asv::data::BuildPcmStore(entries, folder, options);
    const auto segment = static_cast<std::int64_t>(segment_seconds * rate);

    std::vector<double> whole, first, later;
    double bytes = 0;
    for (int r = 0; r < repeats; ++r) {
      const asv::data::PcmStore store = asv::data::PcmStore::Open(folder);
      bytes = 2.0 * static_cast<double>(store.TotalSamples());
      first.push_back(Epoch(store, segment, threads, 100 + static_cast<unsigned>(r)));
      later.push_back(Epoch(store, segment, threads, 200 + static_cast<unsigned>(r)));
      const auto start = Clock::now();
      store.VerifyData();
      whole.push_back(Seconds(start));
    }
    const auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    asv::bench::Json out{
        {"store_bytes", bytes},
        {"utterances", utterances},
        {"chunk_bytes", asv::data::kPcmChunkBytes},
        {"threads", threads},
        {"whole_file_check_s", median(whole)},
        {"whole_file_gb_per_s", bytes / median(whole) / 1e9},
        {"first_epoch_reads_s", median(first)},
        {"later_epoch_reads_s", median(later)},
        {"first_epoch_extra_s", median(first) - median(later)},
        {"first_epoch_extra_s_per_gb", (median(first) - median(later)) / (bytes / 1e9)},
    };
    std::cout << out.dump(2) << "\n";
    if (!json_path.empty()) asv::bench::WriteJson(out, json_path);
    if (work.empty()) stdfs::remove_all(root);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "asv_bench_pcm: " << e.what() << "\n";
    return asv::ExitCodeFor(e);
  }
}
