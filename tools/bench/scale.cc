// asv_bench_scale: how the bookkeeping of each recipe stage grows to VoxCeleb1+2 size (1,281,762
// files of 7,363 speakers), at 1 %, 10 % and 100 % of VoxCeleb's real counts. No network, no audio
// and no real features: only the work a stage does per file, utterance, trial or run.
//
// Cases (each scale of each case runs in a fresh child process, which reports its steps' wall
// times; the parent takes the child's peak RSS from wait4's ru_maxrss):
//   0        list preparation: data::PrepareVoxCeleb1 and PrepareVoxCeleb2 on a tree of empty
//            files in VoxCeleb's layout (speakers/videos/files, VoxCeleb1's cleaned O/E/H trial
//            lists in the official format). The tree is made once per scale under --tree-dir and
//            reused (a marker file records its size).
//   5        training bookkeeping: train::SpeakerLabels and train::BuildEpoch (the sampler of one
//            epoch, 64-clip minibatches of 200-400 frames, 320 utterances per speaker) over
//            VoxCeleb2 dev's utterances with random lengths; and WeSpeaker's segment sampler
//            (train::SegmentSampler: filter, speed perturbation, 2 s segments, batches of 128)
//            over the same utterances.
//   7        embedding extraction without the network, on VoxCeleb1: backend::TrialSides of the
//            O/E/H lists, features::LoadDatasets and KaldiFeatureSource (reads every VAD vector),
//            the lengths and train::MakeTestBatches, backend::CollectEmbeddings and
//            WriteEmbeddings of random 256-dim embeddings, the utt2spk of the embeddings, and
//            backend::ReadEmbeddings (what stage 9 reads back). Features are 4 frames each.
//   backend  closed-form PLDA training (backend::Plda) on random 512-dim vectors of VoxCeleb1+2's
//            speakers (1,000,000 x 512 at 100 %, --plda-vectors), the scorer at plda_dim 200, and
//            for VoxCeleb1-E and -H: reading the list, indexing the trials, scoring them
//            (backend::ScoreTrials), and EER, minDCF(0.05) and minDCF(0.01) (eval::SortedScores).
//   db       the experiment database (db::Database) with 10,000 runs at 100 %: each run begins,
//            records 3 epochs and 3 results, and finishes; then ListRuns, the best result per
//            config (all lists and one list) and one run's epochs.
// Output: a Markdown table (stdout) of every step's wall seconds per scale with the growth factors
// 1 % -> 10 % and 10 % -> 100 % (x10 is linear) of its wall and CPU time, each case's RSS before
// its steps and peak RSS, and with --json everything (also each step's CPU seconds).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "asvcpp/backend/evaluation.h"
#include "asvcpp/backend/plda.h"
#include "asvcpp/backend/scoring.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/table.h"
#include "asvcpp/data/voxceleb.h"
#include "asvcpp/db/database.h"
#include "asvcpp/eval/metrics.h"
#include "asvcpp/eval/score_file.h"
#include "asvcpp/features/kaldi_feature_source.h"
#include "asvcpp/features/kaldi_io.h"
#include "asvcpp/train/epoch_sampler.h"
#include "asvcpp/train/segment_sampler.h"
#include "asvcpp/train/test_batching.h"
#include "asvcpp/train/training_data.h"
#include "tools/bench/bench_util.h"

namespace {

namespace fs = std::filesystem;
using asv::bench::Json;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// VoxCeleb1+2's real counts (100 %).
constexpr std::int64_t kVox1Files = 153516, kVox1Speakers = 1251, kVox1Videos = 22496;
constexpr std::int64_t kVox2DevFiles = 1092009, kVox2DevSpeakers = 5994, kVox2DevVideos = 145569;
constexpr std::int64_t kVox2TestFiles = 36237, kVox2TestSpeakers = 118, kVox2TestVideos = 4911;
constexpr std::int64_t kTrialsO = 37720, kTrialsE = 579818, kTrialsH = 550894;
constexpr std::int64_t kPldaVectors = 1000000, kDbRuns = 10000;
constexpr int kEmbeddingDim = 256, kPldaDim = 512, kPldaScoringDim = 200;

std::int64_t Scaled(std::int64_t count, double percent) {
  return std::max<std::int64_t>(1, std::llround(static_cast<double>(count) * percent / 100.0));
}

// One part of a VoxCeleb tree: `speakers` speakers (ids `id<first_id + s>`), `videos` videos
// (video v belongs to speaker v % speakers), `files` files (file f to video f % videos, numbered
// 1, 2, ... within its video).
struct Part {
  std::int64_t first_id = 0;
  std::int64_t speakers = 0;
  std::int64_t videos = 0;
  std::int64_t files = 0;
  std::int64_t salt = 0;  // makes the video names of different parts differ

  std::string Speaker(std::int64_t s) const { return fmt::format("id{:05d}", first_id + s); }
  // An 11-character YouTube-like id, distinct for every (salt, v).
  std::string Video(std::int64_t v) const {
    static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    // Ten characters of v times an odd number mod 2^60 (distinct for every v) and one of the salt.
    std::uint64_t x = static_cast<std::uint64_t>(v) * 0x9E3779B97F4A7C15ULL;
    std::string name(11, 'A');
    for (std::size_t i = 0; i < 10; ++i, x >>= 6) name[i] = kChars[x & 63];
    name[10] = kChars[salt & 63];
    return name;
  }
  std::int64_t FilesOf(std::int64_t v) const { return files / videos + (v < files % videos ? 1 : 0); }
  // Speaker, video and number (1-based) of file f.
  std::int64_t SpeakerOfFile(std::int64_t f) const { return (f % videos) % speakers; }
  std::string RelativePath(std::int64_t f, const char* extension) const {
    const std::int64_t v = f % videos;
    return fmt::format("{}/{}/{:05d}.{}", Speaker(v % speakers), Video(v), f / videos + 1, extension);
  }
  std::string UtteranceId(std::int64_t f) const {
    const std::int64_t v = f % videos;
    return fmt::format("{}-{}-{:05d}", Speaker(v % speakers), Video(v), f / videos + 1);
  }
};

struct Layout {
  Part vox1, vox2_dev, vox2_test;
  std::int64_t trials_o = 0, trials_e = 0, trials_h = 0;
};

Layout LayoutAt(double percent) {
  Layout l;
  const auto part = [&](std::int64_t first, std::int64_t speakers, std::int64_t videos, std::int64_t files, int salt) {
    Part p;
    p.first_id = first;
    p.speakers = std::max<std::int64_t>(2, Scaled(speakers, percent));
    p.videos = std::max(p.speakers, Scaled(videos, percent));
    p.files = std::max(p.videos, Scaled(files, percent));
    p.salt = salt;
    return p;
  };
  l.vox1 = part(10001, kVox1Speakers, kVox1Videos, kVox1Files, 1);
  l.vox2_dev = part(1, kVox2DevSpeakers, kVox2DevVideos, kVox2DevFiles, 2);
  l.vox2_test = part(1 + l.vox2_dev.speakers, kVox2TestSpeakers, kVox2TestVideos, kVox2TestFiles, 3);
  l.trials_o = Scaled(kTrialsO, percent);
  l.trials_e = Scaled(kTrialsE, percent);
  l.trials_h = Scaled(kTrialsH, percent);
  return l;
}

// `count` trials over the files of `part`, alternately target (two files of one speaker) and
// non-target (files of two speakers), deterministic in `seed`. Calls emit(label, left, right).
void MakeTrials(const Part& part, std::int64_t count, std::uint64_t seed,
                const std::function<void(bool, std::int64_t, std::int64_t)>& emit) {
  std::vector<std::vector<std::int64_t>> files_of(static_cast<std::size_t>(part.speakers));
  for (std::int64_t f = 0; f < part.files; ++f) files_of[static_cast<std::size_t>(part.SpeakerOfFile(f))].push_back(f);
  std::mt19937_64 rng(seed);
  const auto pick = [&](std::int64_t s) {
    const auto& list = files_of[static_cast<std::size_t>(s)];
    return list[static_cast<std::size_t>(rng() % list.size())];
  };
  for (std::int64_t t = 0; t < count; ++t) {
    const auto s = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(part.speakers));
    const bool target = t % 2 == 0;
    std::int64_t other = s;
    if (!target) other = (s + 1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(part.speakers - 1))) % part.speakers;
    emit(target, pick(s), pick(other));
  }
}

struct TrialFile {
  const char* name;  // official file name
  const char* key;   // trial-list name in the recipe
  std::int64_t Layout::*count;
  std::uint64_t seed;
};
constexpr TrialFile kTrialFiles[] = {{"veri_test2.txt", "voxceleb1_o", &Layout::trials_o, 11},
                                     {"list_test_all2.txt", "voxceleb1_e", &Layout::trials_e, 12},
                                     {"list_test_hard2.txt", "voxceleb1_h", &Layout::trials_h, 13}};

// Writes the trial lists of `layout` into `folder`: official format ("1 spk/video/00001.wav ...")
// or id format ("spk-video-00001 ... target").
void WriteTrialLists(const Layout& layout, const fs::path& folder, bool official) {
  for (const auto& file : kTrialFiles) {
    std::ofstream out(folder / file.name);
    MakeTrials(layout.vox1, layout.*file.count, file.seed, [&](bool target, std::int64_t a, std::int64_t b) {
      if (official) {
        out << (target ? "1 " : "0 ") << layout.vox1.RelativePath(a, "wav") << ' ' << layout.vox1.RelativePath(b, "wav")
            << '\n';
      } else {
        out << layout.vox1.UtteranceId(a) << ' ' << layout.vox1.UtteranceId(b) << (target ? " target\n" : " nontarget\n");
      }
    });
    if (!out) throw asv::DataError("cannot write " + (folder / file.name).string());
  }
}

// Peak and current resident memory of this process from /proc/self/status, MB.
double StatusMb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return std::strtod(line.c_str() + prefix.size(), nullptr) / 1024.0;
  }
  return 0.0;
}

// User + system CPU seconds of this process so far.
double CpuSeconds() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// ---------------------------------------------------------------------------------------------
// The tree of empty files (case "tree").

// Creates `part`'s folders and empty files under `root`; adds to the counters.
void CreatePart(const Part& part, const fs::path& root, const char* extension, std::int64_t* files,
                std::int64_t* dirs, std::int64_t* bytes) {
  for (std::int64_t s = 0; s < part.speakers; ++s) fs::create_directories(root / part.Speaker(s));
  *dirs += part.speakers;
  for (std::int64_t v = 0; v < part.videos; ++v) {
    const fs::path video = root / part.Speaker(v % part.speakers) / part.Video(v);
    fs::create_directory(video);
    ++*dirs;
    for (std::int64_t k = 0; k < part.FilesOf(v); ++k) {
      const std::string path = (video / fmt::format("{:05d}.{}", k + 1, extension)).string();
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) throw asv::DataError("cannot create " + path);
      ::close(fd);
      ++*files;
    }
    struct stat st {};
    if (::stat(video.c_str(), &st) == 0) *bytes += static_cast<std::int64_t>(st.st_blocks) * 512;
  }
}

Json MakeTree(const Layout& layout, const fs::path& tree) {
  const fs::path marker = tree / "complete.json";
  if (fs::exists(marker)) {
    std::ifstream in(marker);
    Json made = Json::parse(in);
    made["reused"] = true;
    return made;
  }
  fs::remove_all(tree);
  const auto start = Clock::now();
  std::int64_t files = 0, dirs = 0, bytes = 0;
  CreatePart(layout.vox1, tree / "voxceleb1" / "wav", "wav", &files, &dirs, &bytes);
  CreatePart(layout.vox2_dev, tree / "voxceleb2" / "dev" / "aac", "m4a", &files, &dirs, &bytes);
  CreatePart(layout.vox2_test, tree / "voxceleb2" / "test" / "aac", "m4a", &files, &dirs, &bytes);
  WriteTrialLists(layout, tree / "voxceleb1", true);
  for (const auto& file : kTrialFiles) bytes += static_cast<std::int64_t>(fs::file_size(tree / "voxceleb1" / file.name));
  Json made{{"files", files},
            {"inodes", files + dirs + 3},
            {"disk_mb", static_cast<double>(bytes) / 1e6},
            {"seconds", Seconds(start)}};
  std::ofstream(marker) << made.dump(2) << "\n";
  made["reused"] = false;
  return made;
}

// ---------------------------------------------------------------------------------------------
// The cases: each fills `steps` ({"name", "seconds"}) and `size` (what it ran on).

struct CaseResult {
  Json size = Json::object();
  Json steps = Json::array();
  double setup_seconds = 0.0;
  double rss_before_steps_mb = 0.0;

  template <class Fn>
  void Step(const std::string& name, Fn&& fn) {
    const double cpu_start = CpuSeconds();
    const auto start = Clock::now();
    fn();
    steps.push_back(Json{{"name", name}, {"seconds", Seconds(start)}, {"cpu_seconds", CpuSeconds() - cpu_start}});
  }
  void SetupDone(Clock::time_point start) {
    setup_seconds = Seconds(start);
    rss_before_steps_mb = StatusMb("VmRSS");
  }
};

void Stage0(const Layout& layout, const fs::path& tree, const fs::path& work, CaseResult* r) {
  const fs::path root = work / "lists";
  r->SetupDone(Clock::now());
  asv::data::PreparedDataset vox1;
  std::vector<asv::data::PreparedDataset> vox2;
  r->Step("PrepareVoxCeleb1 (wav.scp, utt2spk, spk2utt, O/E/H lists)",
          [&] { vox1 = asv::data::PrepareVoxCeleb1(tree / "voxceleb1", root); });
  r->Step("PrepareVoxCeleb2 (voxceleb2 and voxceleb2_cat)",
          [&] { vox2 = asv::data::PrepareVoxCeleb2(tree / "voxceleb2", root); });
  r->size = Json{{"files", layout.vox1.files + layout.vox2_dev.files + layout.vox2_test.files},
                 {"speakers", vox1.speakers + vox2.at(0).speakers},
                 {"videos", vox2.at(1).utterances + layout.vox1.videos},
                 {"trials", vox1.trials}};
  if (vox1.utterances != static_cast<std::size_t>(layout.vox1.files) ||
      vox2.at(0).utterances != static_cast<std::size_t>(layout.vox2_dev.files + layout.vox2_test.files)) {
    throw asv::DataError(fmt::format("stage 0 prepared {} + {} utterances of {} + {} files", vox1.utterances,
                                     vox2.at(0).utterances, layout.vox1.files,
                                     layout.vox2_dev.files + layout.vox2_test.files));
  }
}

void Stage5(const Layout& layout, CaseResult* r) {
  const auto start = Clock::now();
  const Part& dev = layout.vox2_dev;
  std::vector<std::string> speaker_ids(static_cast<std::size_t>(dev.files));
  std::vector<std::int64_t> frames(static_cast<std::size_t>(dev.files));
  std::mt19937_64 rng(5);
  // Utterances sorted by id, as the training data lists them.
  std::vector<std::pair<std::string, std::int64_t>> order(static_cast<std::size_t>(dev.files));
  for (std::int64_t f = 0; f < dev.files; ++f) order[static_cast<std::size_t>(f)] = {dev.UtteranceId(f), f};
  std::sort(order.begin(), order.end());
  for (std::size_t i = 0; i < order.size(); ++i) {
    speaker_ids[i] = dev.Speaker(dev.SpeakerOfFile(order[i].second));
    frames[i] = 400 + static_cast<std::int64_t>(rng() % 1600);  // 4-20 s of speech
  }
  r->SetupDone(start);
  std::vector<int> labels;
  int n_speakers = 0;
  r->Step("SpeakerLabels", [&] { labels = asv::train::SpeakerLabels(speaker_ids, &n_speakers); });
  std::vector<asv::train::SamplerUtterance> utterances(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) utterances[i] = {labels[i], frames[i]};
  asv::train::EpochSamplerOptions options;
  std::int64_t batches = 0;
  for (int epoch = 1; epoch <= 2; ++epoch) {
    r->Step(fmt::format("BuildEpoch (epoch {})", epoch), [&] {
      batches = static_cast<std::int64_t>(asv::train::BuildEpoch(utterances, options, epoch).batches.size());
    });
  }
  options.world_size = 8;
  r->Step("BuildEpoch (rank 0 of 8)", [&] { asv::train::BuildEpoch(utterances, options, 1); });

  std::vector<asv::train::SegmentUtterance> segment_utterances(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    segment_utterances[i] = {static_cast<std::int64_t>(i), frames[i] * 160, labels[i]};  // 10 ms frames at 16 kHz
  }
  asv::train::SegmentSamplerOptions segment_options;
  segment_options.batch_size = std::min<int>(128, static_cast<int>(labels.size()));
  std::optional<asv::train::SegmentSampler> segments;
  std::int64_t segment_batches = 0;
  r->Step("SegmentSampler (filter)", [&] { segments.emplace(segment_utterances, n_speakers, segment_options); });
  r->Step("SegmentSampler::Epoch (epoch 1)",
          [&] { segment_batches = static_cast<std::int64_t>(segments->Epoch(1).batches.size()); });
  segment_options.world_size = 8;
  segment_options.batch_size = std::max(1, segment_options.batch_size / 8);
  r->Step("SegmentSampler::Epoch (rank 0 of 8)",
          [&] { asv::train::SegmentSampler(segment_utterances, n_speakers, segment_options).Epoch(1); });
  r->size = Json{{"utterances", dev.files},
                 {"speakers", n_speakers},
                 {"batches_per_epoch", batches},
                 {"segment_batches_per_epoch", segment_batches}};
}

void Stage7(const Layout& layout, const fs::path& work, CaseResult* r) {
  const auto start = Clock::now();
  const Part& vox1 = layout.vox1;
  const fs::path root = work / "lists";
  const fs::path lists = asv::data::ListFolder(root, "voxceleb1");
  fs::create_directories(lists);
  {
    asv::data::Table utt2spk;
    for (std::int64_t f = 0; f < vox1.files; ++f) utt2spk[vox1.UtteranceId(f)] = vox1.Speaker(vox1.SpeakerOfFile(f));
    asv::data::WriteTable(lists / "utt2spk", utt2spk);
    // Features: 4 frames of 30 MFCCs each, all speech.
    asv::features::TableWriter feats(fmt::format("ark,scp:{0}/feats.ark,{0}/feats.scp", lists.string()));
    asv::features::TableWriter vad(fmt::format("ark,scp:{0}/vad.ark,{0}/vad.scp", lists.string()));
    asv::Matrix mfcc(4, 30);
    for (std::int64_t i = 0; i < 4 * 30; ++i) mfcc.data()[i] = static_cast<float>(i % 7);
    const std::vector<float> voiced(4, 1.0f);
    for (const auto& [utt, spk] : utt2spk) {
      feats.Write(utt, mfcc);
      vad.Write(utt, voiced);
    }
    feats.Close();
    vad.Close();
  }
  WriteTrialLists(layout, lists, false);
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal;
  r->SetupDone(start);

  std::vector<std::pair<std::string, fs::path>> trial_lists;
  for (const auto& file : kTrialFiles) trial_lists.emplace_back(file.key, lists / file.name);
  std::vector<std::string> trial_ids;
  r->Step("TrialSides (O/E/H)", [&] { trial_ids = asv::backend::TrialSides(trial_lists); });
  asv::features::DatasetUtterances data;
  r->Step("LoadDatasets", [&] { data = asv::features::LoadDatasets(root, {"voxceleb1"}); });
  std::optional<asv::features::KaldiFeatureSource> source;
  r->Step("KaldiFeatureSource (reads every VAD)",
          [&] { source.emplace(trial_ids, data.stored, asv::settings::FeatureSettings{}); });
  r->Step("lengths and MakeTestBatches", [&] {
    std::vector<std::int64_t> lengths(static_cast<std::size_t>(source->NumUtterances()));
    for (int i = 0; i < source->NumUtterances(); ++i) lengths[static_cast<std::size_t>(i)] = source->NumFrames(i);
    asv::train::MakeTestBatches(lengths, 4000, 0.0);
  });
  asv::Matrix extracted(static_cast<std::int64_t>(trial_ids.size()), kEmbeddingDim);
  for (std::int64_t i = 0; i < extracted.rows() * extracted.cols(); ++i) extracted.data()[i] = normal(rng);
  asv::backend::Embeddings embeddings;
  r->Step("CollectEmbeddings",
          [&] { embeddings = asv::backend::CollectEmbeddings(extracted, {}, source->ids(), "trial"); });
  r->Step("WriteEmbeddings", [&] { asv::backend::WriteEmbeddings(work / "embeddings" / "trial", embeddings); });
  r->Step("embeddings' utt2spk", [&] {
    std::map<std::string, std::string> speaker_of;
    for (std::size_t i = 0; i < data.ids.size(); ++i) speaker_of[data.ids[i]] = data.speakers[i];
    asv::data::Table utt2spk;
    for (const auto& id : embeddings.ids) utt2spk[id] = speaker_of.at(id);
    asv::data::WriteTable(work / "embeddings" / "trial.utt2spk", utt2spk);
  });
  r->Step("ReadEmbeddings (stage 9)",
          [&] { embeddings = asv::backend::ReadEmbeddings(work / "embeddings" / "trial"); });
  r->size = Json{{"utterances", static_cast<std::int64_t>(embeddings.ids.size())},
                 {"trials", layout.trials_o + layout.trials_e + layout.trials_h},
                 {"embedding_dim", kEmbeddingDim}};
}

// Random vectors of `speakers` speakers, `rows` in all (round robin): speaker mean + N(0, I).
void RandomVectors(std::mt19937_64& rng, std::int64_t rows, std::int64_t speakers, std::int64_t first_speaker,
                   const asv::Matrix& means, asv::Matrix* out, std::vector<std::int64_t>* labels) {
  std::normal_distribution<float> normal;
  *out = asv::Matrix(rows, means.cols());
  labels->resize(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t s = first_speaker + r % speakers;
    (*labels)[static_cast<std::size_t>(r)] = s;
    float* row = out->row(r);
    const float* mean = means.row(s);
    for (std::int64_t d = 0; d < means.cols(); ++d) row[d] = mean[d] + normal(rng);
  }
}

void Backend(const Layout& layout, double percent, std::int64_t plda_vectors_full, const fs::path& work,
             CaseResult* r) {
  const auto start = Clock::now();
  const std::int64_t plda_vectors = Scaled(plda_vectors_full, percent);
  const std::int64_t train_speakers = layout.vox1.speakers + layout.vox2_dev.speakers + layout.vox2_test.speakers;
  const std::int64_t all_speakers = train_speakers + layout.vox1.speakers;
  std::mt19937_64 rng(9);
  std::normal_distribution<float> normal;
  asv::Matrix means(all_speakers, kPldaDim);
  for (std::int64_t i = 0; i < means.rows() * means.cols(); ++i) means.data()[i] = 0.3f * normal(rng);
  asv::Matrix train, trial;
  std::vector<std::int64_t> train_labels, trial_labels;
  RandomVectors(rng, plda_vectors, train_speakers, 0, means, &train, &train_labels);
  // The trial side: VoxCeleb1's files, row f of file f (speakers after the training speakers).
  trial = asv::Matrix(layout.vox1.files, kPldaDim);
  std::vector<std::string> ids(static_cast<std::size_t>(layout.vox1.files));
  for (std::int64_t f = 0; f < layout.vox1.files; ++f) {
    ids[static_cast<std::size_t>(f)] = layout.vox1.UtteranceId(f);
    const float* mean = means.row(train_speakers + layout.vox1.SpeakerOfFile(f));
    for (std::int64_t d = 0; d < kPldaDim; ++d) trial.row(f)[d] = mean[d] + normal(rng);
  }
  fs::create_directories(work);
  WriteTrialLists(layout, work, false);
  r->SetupDone(start);

  asv::backend::Plda plda;
  r->Step("PLDA training (TrainClosedForm)",
          [&] { plda = asv::backend::Plda::TrainClosedForm(train, train_labels); });
  train = asv::Matrix();
  std::optional<asv::backend::Scorer> scorer;
  r->Step("MakeScorer (plda_dim 200)", [&] { scorer = plda.MakeScorer(kPldaScoringDim); });
  Json metrics = Json::object();
  for (const auto& file : {kTrialFiles[1], kTrialFiles[2]}) {
    const std::string list = std::string(file.key) == "voxceleb1_e" ? "E" : "H";
    asv::eval::TrialList trials;
    std::vector<asv::backend::TrialIndex> index;
    r->Step(fmt::format("{}: ReadTrialList and IndexTrials", list), [&] {
      trials = asv::eval::ReadTrialList(work / file.name);
      index = asv::backend::IndexTrials(trials, ids);
    });
    std::vector<float> scores;
    r->Step(fmt::format("{}: ScoreTrials", list), [&] { scores = asv::backend::ScoreTrials(*scorer, trial, index); });
    r->Step(fmt::format("{}: EER, minDCF(0.05), minDCF(0.01)", list), [&] {
      std::vector<double> target, nontarget;
      asv::eval::SplitScores(std::vector<double>(scores.begin(), scores.end()), trials.Classify(), &target,
                             &nontarget);
      const asv::eval::SortedScores sorted(std::move(target), std::move(nontarget));
      asv::eval::DcfParams p05, p01;
      p05.p_target = 0.05;
      p01.p_target = 0.01;
      metrics[list] = Json{{"eer_percent", sorted.Eer().percent()},
                           {"min_dcf_005", sorted.MinDcf(p05).min_dcf},
                           {"min_dcf_001", sorted.MinDcf(p01).min_dcf}};
    });
  }
  r->size = Json{{"plda_vectors", plda_vectors},
                 {"plda_speakers", train_speakers},
                 {"dim", kPldaDim},
                 {"trials", layout.trials_e + layout.trials_h},
                 {"metrics", metrics}};
}

void Db(double percent, const fs::path& work, CaseResult* r) {
  const std::int64_t runs = Scaled(kDbRuns, percent);
  fs::create_directories(work);
  const fs::path path = work / "asvcpp.sqlite";
  fs::remove(path);
  asv::db::Database db(path);
  r->SetupDone(Clock::now());
  static constexpr const char* kLists[] = {"voxceleb1_o", "voxceleb1_e", "voxceleb1_h"};
  std::int64_t last = 0;
  r->Step("runs: BeginRun, 3 x RecordEpoch, 3 x RecordResult, FinishRun", [&] {
    for (std::int64_t i = 0; i < runs; ++i) {
      asv::db::RunInfo info;
      info.recipe = "voxceleb/xvector";
      info.config = fmt::format("config{}", i);
      info.settings_json = "{}";
      last = db.BeginRun(info);
      for (int e = 1; e <= 3; ++e) {
        asv::db::EpochRecord epoch;
        epoch.epoch = e;
        epoch.loss = 5.0 / e;
        epoch.learning_rate = 0.1;
        db.RecordEpoch(last, epoch);
      }
      for (int k = 0; k < 3; ++k) {
        asv::db::ResultRecord result;
        result.epoch = 3;
        result.trial_list = kLists[k];
        result.eer = 1.0 + static_cast<double>((i * 7 + k) % 100) / 10.0;
        result.min_dcf = 0.2;
        db.RecordResult(last, result);
      }
      db.FinishRun(last, asv::db::RunStatus::kFinished);
    }
  });
  std::size_t listed = 0, best = 0, best_list = 0;
  r->Step("ListRuns", [&] { listed = db.ListRuns().size(); });
  asv::db::ResultFilter filter;
  filter.best_per_config = true;
  r->Step("Results (best per config)", [&] { best = db.Results(filter).size(); });
  filter.trial_list = kLists[1];
  r->Step("Results (best per config, one list)", [&] { best_list = db.Results(filter).size(); });
  r->Step("Epochs (one run)", [&] { db.Epochs(last); });
  if (listed != static_cast<std::size_t>(runs) || best_list != static_cast<std::size_t>(runs)) {
    throw asv::DbError(fmt::format("db case: {} runs listed, {} best rows, of {} runs", listed, best_list, runs));
  }
  r->size = Json{{"runs", runs}, {"epochs", 3 * runs}, {"results", 3 * runs}, {"best_rows", best}};
}

// Runs one case in this process and writes its CaseResult as JSON to `json_path`.
int RunCase(const std::string& stage, double percent, const fs::path& tree_dir, std::int64_t plda_vectors,
            const std::string& json_path) {
  const Layout layout = LayoutAt(percent);
  const fs::path tree = tree_dir / fmt::format("tree-{}pct", percent);
  const fs::path work = tree_dir / fmt::format("work-{}-{}pct", stage, percent);
  fs::remove_all(work);
  CaseResult result;
  Json out;
  const auto start = Clock::now();
  if (stage == "tree") {
    out = MakeTree(layout, tree);
  } else {
    if (stage == "0") {
      if (!fs::exists(tree / "complete.json")) throw asv::DataError(tree.string() + ": no tree (run the tree case)");
      Stage0(layout, tree, work, &result);
    } else if (stage == "5") {
      Stage5(layout, &result);
    } else if (stage == "7") {
      Stage7(layout, work, &result);
    } else if (stage == "backend") {
      Backend(layout, percent, plda_vectors, work, &result);
    } else if (stage == "db") {
      Db(percent, work, &result);
    } else {
      throw asv::ConfigError("unknown case '" + stage + "'");
    }
    out = Json{{"size", result.size},
               {"steps", result.steps},
               {"setup_seconds", result.setup_seconds},
               {"rss_before_steps_mb", result.rss_before_steps_mb},
               {"vm_hwm_mb", StatusMb("VmHWM")}};
  }
  out["case_seconds"] = Seconds(start);
  fs::remove_all(work);
  asv::bench::WriteJson(out, json_path);
  return asv::kExitOk;
}

// ---------------------------------------------------------------------------------------------
// The driver.

struct Child {
  int status = 0;
  double seconds = 0.0;
  double peak_rss_mb = 0.0;
  Json report;
};

Child Spawn(const std::vector<std::string>& args, const fs::path& json_path) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  fs::remove(json_path);
  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw asv::Error(asv::kExitFailure, "fork failed");
  if (pid == 0) {
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  Child child;
  struct rusage usage {};
  if (wait4(pid, &child.status, 0, &usage) < 0) throw asv::Error(asv::kExitFailure, "wait4 failed");
  child.seconds = Seconds(start);
  child.peak_rss_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;  // kB on Linux
  if (WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0 && fs::exists(json_path)) {
    std::ifstream in(json_path);
    child.report = Json::parse(in);
  }
  return child;
}

std::string Percent(double p) { return fmt::format("{} %", p); }

std::string Figure(double v) {
  if (v >= 100) return fmt::format("{:.0f}", v);
  if (v >= 1) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3f}", v);
}

std::string Growth(const std::vector<double>& values) {
  std::string out;
  for (std::size_t i = 1; i < values.size(); ++i) {
    if (!out.empty()) out += ", ";
    out += values[i - 1] > 0 ? fmt::format("x{:.1f}", values[i] / values[i - 1]) : "-";
  }
  return out;
}

std::string SizeText(const Json& size) {
  std::string out;
  for (const auto& [key, value] : size.items()) {
    if (!value.is_number_integer()) continue;
    if (!out.empty()) out += ", ";
    std::string name = key;
    std::replace(name.begin(), name.end(), '_', ' ');
    out += fmt::format("{} {}", value.get<std::int64_t>(), name);
  }
  return out;
}

const std::map<std::string, std::string> kCaseNames = {{"0", "stage 0: list preparation"},
                                                       {"5", "stage 5: epoch sampler"},
                                                       {"7", "stage 7: extraction bookkeeping"},
                                                       {"backend", "back end: PLDA, scoring, metrics"},
                                                       {"db", "experiment database"}};

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

int Main(int argc, char** argv) {
  std::vector<double> scales{1, 10, 100};
  std::vector<std::string> cases{"0", "5", "7", "backend", "db"};
  std::string tree_dir = (fs::temp_directory_path() / "asv_bench_scale").string();
  std::int64_t plda_vectors = kPldaVectors;
  bool quick = false;
  std::string json_path;
  std::string one_case;
  double case_scale = 0;
  std::string case_json;
  CLI::App app{"asv_bench_scale: stage bookkeeping at 1 %, 10 % and 100 % of VoxCeleb1+2's counts"};
  app.add_option("--scales", scales, "Percentages of VoxCeleb1+2's counts")->delimiter(',')->capture_default_str();
  app.add_option("--cases", cases, "Cases: 0, 5, 7, backend, db")->delimiter(',')->capture_default_str();
  app.add_option("--tree-dir", tree_dir,
                 "Folder of the VoxCeleb-layout trees (kept and reused) and the cases' scratch files")
      ->capture_default_str();
  app.add_option("--plda-vectors", plda_vectors, "PLDA training vectors at 100 %")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--quick", quick, "1 % only (seconds)");
  app.add_option("--json", json_path, "Also write everything as JSON here");
  app.add_option("--case", one_case, "(internal) run one case in this process");
  app.add_option("--scale", case_scale, "(internal) scale of --case");
  app.add_option("--case-json", case_json, "(internal) where --case writes its result");
  app.footer(
      "Examples:\n  asv_bench_scale --quick\n  asv_bench_scale --tree-dir /tmp/asv_bench_scale --json scale.json");
  CLI11_PARSE(app, argc, argv);
  if (!one_case.empty()) return RunCase(one_case, case_scale, tree_dir, plda_vectors, case_json);
  if (quick) scales = {1};
  for (const auto& c : cases) {
    if (kCaseNames.count(c) == 0) throw asv::ConfigError(fmt::format("--cases: unknown case '{}'", c));
  }
  fs::create_directories(tree_dir);
  const fs::path scratch = fs::path(tree_dir) / fmt::format("case.{}.json", getpid());
  const auto spawn = [&](const std::string& c, double scale) {
    return Spawn({argv[0], "--case", c, "--scale", fmt::format("{}", scale), "--tree-dir", tree_dir,
                  "--plda-vectors", std::to_string(plda_vectors), "--case-json", scratch.string()},
                 scratch);
  };

  Json report{{"meta",
               {{"date", [] {
                   char text[32];
                   const std::time_t now = std::time(nullptr);
                   std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
                   return std::string(text);
                 }()},
                {"cpu", CpuModel()},
                {"cores", static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN))},
                {"scales", scales},
                {"plda_vectors_at_100", plda_vectors}}},
              {"trees", Json::array()},
              {"cases", Json::array()},
              {"failures", Json::array()}};
  if (std::find(cases.begin(), cases.end(), "0") != cases.end()) {
    for (double scale : scales) {
      ASV_LOG(Info, "tree at {} under {}", Percent(scale), tree_dir);
      const Child child = spawn("tree", scale);
      if (child.report.is_null()) {
        report["failures"].push_back(fmt::format("tree at {}: exit status {}", Percent(scale), child.status));
        continue;
      }
      Json tree = child.report;
      tree["scale"] = scale;
      report["trees"].push_back(tree);
    }
  }
  for (const auto& c : cases) {
    for (double scale : scales) {
      ASV_LOG(Info, "case {} at {}", c, Percent(scale));
      const Child child = spawn(c, scale);
      if (child.report.is_null()) {
        report["failures"].push_back(fmt::format("case {} at {}: exit status {}", c, Percent(scale), child.status));
        continue;
      }
      Json row = child.report;
      row["case"] = c;
      row["scale"] = scale;
      row["peak_rss_mb"] = child.peak_rss_mb;
      row["process_seconds"] = child.seconds;
      report["cases"].push_back(row);
    }
  }

  // The table: per case its sizes, every step's seconds, the peak RSS; growth between scales.
  std::string header = "| case | step |";
  std::string rule = "|---|---|";
  for (double s : scales) {
    header += fmt::format(" {} |", Percent(s));
    rule += "---:|";
  }
  header += " growth | CPU time growth |";
  rule += "---|---|";
  fmt::print(
      "Stage bookkeeping at {} of VoxCeleb1+2 ({}; {}, {} cores): wall seconds, growth of wall and CPU "
      "(user + system) time from scale to scale, resident memory in MB\n\n",
             fmt::format("{}", fmt::join(scales, " / ")) + " %", report["meta"]["date"].get<std::string>(),
             report["meta"]["cpu"].get<std::string>(), report["meta"]["cores"].get<int>());
  fmt::print("{}\n{}\n", header, rule);
  for (const auto& c : cases) {
    std::vector<const Json*> rows;
    for (double s : scales) {
      const Json* found = nullptr;
      for (const auto& row : report["cases"]) {
        if (row["case"] == c && row["scale"].get<double>() == s) found = &row;
      }
      rows.push_back(found);
    }
    const auto line = [&](const std::string& step, const std::function<std::string(const Json&)>& cell,
                          const std::function<double(const Json&)>& value,
                          const std::function<double(const Json&)>& cpu = nullptr) {
      std::string text = fmt::format("| {} | {} |", kCaseNames.at(c), step);
      std::vector<double> values, cpu_values;
      for (const Json* row : rows) {
        text += fmt::format(" {} |", row ? cell(*row) : "failed");
        if (row && value) values.push_back(value(*row));
        if (row && cpu) cpu_values.push_back(cpu(*row));
      }
      text += fmt::format(" {} |", value && values.size() == rows.size() ? Growth(values) : "");
      text += fmt::format(" {} |", cpu && cpu_values.size() == rows.size() ? Growth(cpu_values) : "");
      fmt::print("{}\n", text);
    };
    line("size", [](const Json& row) { return SizeText(row["size"]); }, nullptr);
    const Json* any = nullptr;
    for (const Json* row : rows) any = any ? any : row;
    if (any == nullptr) continue;
    for (std::size_t k = 0; k < (*any)["steps"].size(); ++k) {
      const std::string name = (*any)["steps"][k]["name"].get<std::string>();
      const auto seconds = [k](const Json& row) { return row["steps"][k]["seconds"].get<double>(); };
      const auto cpu = [k](const Json& row) { return row["steps"][k]["cpu_seconds"].get<double>(); };
      line(name, [&](const Json& row) { return Figure(seconds(row)); }, seconds, cpu);
    }
    const auto before = [](const Json& row) { return row["rss_before_steps_mb"].get<double>(); };
    line("RSS before the steps (MB)", [&](const Json& row) { return Figure(before(row)); }, before);
    const auto peak = [](const Json& row) { return row["peak_rss_mb"].get<double>(); };
    line("peak RSS (MB)", [&](const Json& row) { return Figure(peak(row)); }, peak);
  }
  for (const auto& tree : report["trees"]) {
    fmt::print("\nTree at {}: {} files, {} inodes, {:.0f} MB of disk; {}.\n", Percent(tree["scale"].get<double>()),
               tree["files"].get<std::int64_t>(), tree["inodes"].get<std::int64_t>(), tree["disk_mb"].get<double>(),
               tree["reused"].get<bool>() ? "reused"
                                          : fmt::format("made in {:.1f} s", tree["seconds"].get<double>()));
  }
  for (const auto& failure : report["failures"]) fmt::print("\nFAILED: {}\n", failure.get<std::string>());
  fs::remove(scratch);
  if (!json_path.empty()) asv::bench::WriteJson(report, json_path);
  return report["failures"].empty() ? asv::kExitOk : asv::kExitFailure;
}

}  // namespace

int main(int argc, char** argv) {
  return asv::bench::RunMain(Main, argc, argv);
}
