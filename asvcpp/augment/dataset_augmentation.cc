#include "asvcpp/augment/dataset_augmentation.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "asvcpp/audio/decode.h"
#include "asvcpp/augment/augmenter.h"
#include "asvcpp/augment/noise_sets.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/base/thread_pool.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/random.h"
#include "asvcpp/data/table.h"
#include "asvcpp/features/compressed_matrix.h"
#include "asvcpp/features/dither_seed.h"
#include "asvcpp/features/kaldi_io.h"
#include "asvcpp/features/mfcc.h"

namespace asv::augment {
namespace {

namespace stdfs = std::filesystem;

constexpr std::array<Kind, 4> kKinds = {Kind::kReverb, Kind::kNoise, Kind::kMusic, Kind::kBabble};

// One copy to make: the clean utterance and the kind.
struct Copy {
  const std::string* utterance;
  Kind kind;
  std::string id;  // <utt>-<kind>
};

// What a worker computed for one copy.
struct Computed {
  Matrix feats;
  std::string description;
  double seconds = 0.0;
  std::optional<std::string> skip_reason;
};

// The generator of one copy: recipe.seed and the copy's id (FNV-1a, as the dither seed).
std::mt19937_64 CopyGenerator(std::uint64_t seed, const std::string& id) {
  return std::mt19937_64(features::DitherSeed(id) ^ (seed * 0x9E3779B97F4A7C15ull));
}

}  // namespace

std::string AugmentationReport::Summary() const {
  return fmt::format(
      "{}: {} augmented copies of {} utterances ({} skipped), {:.2f} h of audio in {:.1f} s ({:.1f}x "
      "real time)",
      dataset, augmented, clean, skipped.size(), audio_seconds / 3600.0, wall_seconds,
      wall_seconds > 0 ? audio_seconds / wall_seconds : 0.0);
}

AugmentationReport AugmentDataset(const std::string& dataset, int factor, const stdfs::path& dataset_root,
                                  const Augmenter& augmenter, const prep::FeatureExtractionOptions& options,
                                  std::uint64_t seed) {
  if (factor < 1 || factor > 5) {
    throw std::invalid_argument(fmt::format("augmentation factor of {} must be 1..5, got {}", dataset, factor));
  }
  const auto start = std::chrono::steady_clock::now();
  AugmentationReport report;
  report.dataset = dataset;
  const stdfs::path lists = data::ListFolder(dataset_root, dataset);
  const std::string aug_name = dataset + "_aug_subset";
  const std::string combined_name = dataset + "_combined";
  report.aug_list_folder = data::ListFolder(dataset_root, aug_name);
  report.combined_list_folder = data::ListFolder(dataset_root, combined_name);

  data::DataDir clean = data::DataDir::Load(lists);
  for (const auto& [name, empty] : {std::pair<std::string_view, bool>{data::kWavScp, clean.wav_scp.empty()},
                                    {data::kUtt2Spk, clean.utt2spk.empty()},
                                    {data::kFeatsScp, clean.feats_scp.empty()},
                                    {data::kVadScp, clean.vad_scp.empty()},
                                    {data::kUtt2NumFrames, clean.utt2num_frames.empty()}}) {
    if (empty) {
      throw DataError(
          fmt::format("{}: {} is missing or empty; stage 2 augments datasets that have their features "
                      "(stage 1, recipe.feature_extraction_datasets)",
                      lists.string(), name));
    }
  }
  const data::FixReport fix = data::FixDataDir(clean);
  if (fix.dropped_total() > 0) {
    ASV_LOG(Warning, "{}: lists disagree; augmenting the {} utterances in all of them:\n{}", lists.string(), fix.kept,
            fix.Describe());
  }
  if (clean.utt2spk.empty()) throw DataError(fmt::format("{}: no utterance is in every list", lists.string()));
  report.clean = clean.utt2spk.size();

  // The copies: n (factor - 1) of the 4n, drawn without replacement, in id order.
  std::vector<const std::string*> utterances;
  for (const auto& entry : clean.utt2spk) utterances.push_back(&entry.first);
  const std::size_t n_copies = utterances.size() * static_cast<std::size_t>(factor - 1);
  std::vector<Copy> copies;
  for (const std::size_t c : data::SampleIndices(4 * utterances.size(), n_copies, seed)) {
    const std::string* utt = utterances[c / 4];
    const Kind kind = kKinds[c % 4];
    copies.push_back({utt, kind, fmt::format("{}-{}", *utt, KindName(kind))});
  }
  std::sort(copies.begin(), copies.end(), [](const Copy& a, const Copy& b) { return a.id < b.id; });

  // Stale outputs go first: a failure leaves the datasets visibly incomplete.
  const stdfs::path aug_features = data::FeatureFolder(dataset_root, aug_name);
  for (const stdfs::path& folder : {report.aug_list_folder, report.combined_list_folder}) {
    for (std::string_view name : {data::kFeatsScp, data::kVadScp, data::kUtt2NumFrames, data::kUtt2Spk, data::kSpk2Utt,
                                  data::kWavScp, kAugmentationList}) {
      prep::RemoveStaleOutput(folder / name);
    }
  }
  data::DataDir aug;
  data::Table descriptions;
  if (!copies.empty()) {
    stdfs::create_directories(report.aug_list_folder);
    stdfs::create_directories(aug_features);
    const stdfs::path mfcc_ark = aug_features / "mfcc.ark";
    const stdfs::path feats_scp = report.aug_list_folder / data::kFeatsScp;
    features::TableWriter writer(fmt::format("ark,scp:{},{}", mfcc_ark.string(), feats_scp.string()));
    const features::Mfcc mfcc(options.mfcc);
    audio::DecodeOptions decode_options;
    decode_options.sample_rate = augmenter.sample_rate();

    const int threads = std::max(1, options.threads);
    ASV_LOG(Info, "{}: {} augmented copies of {} utterances (factor {}) with {} thread{}", dataset, copies.size(),
            utterances.size(), factor, threads, threads == 1 ? "" : "s");
    base::Progress progress(aug_name, static_cast<std::int64_t>(copies.size()),
                            prep::UtteranceProgress(options.progress));

    auto produce = [&](std::size_t i) {
      const Copy& copy = copies[i];
      Computed out;
      audio::Audio audio;
      try {
        audio = audio::Decode(clean.wav_scp.at(*copy.utterance), decode_options);
      } catch (const DataError& e) {
        out.skip_reason = prep::OneLine(e.what());
        return out;
      }
      std::mt19937_64 rng = CopyGenerator(seed, copy.id);
      Augmented augmented = augmenter.Apply(copy.kind, audio.samples, rng);
      out.feats = mfcc.Compute(augmented.samples.data(), static_cast<std::int64_t>(augmented.samples.size()),
                               features::DitherSeed(copy.id));
      const std::int64_t expected = clean.utt2num_frames.at(*copy.utterance);
      if (out.feats.rows() != expected) {
        out.skip_reason = fmt::format("{} frames, but {} in stage 1's utt2num_frames: the audio changed since stage 1",
                                      out.feats.rows(), expected);
        return out;
      }
      out.description = std::move(augmented.description);
      out.seconds = audio.Seconds();
      return out;
    };
    auto consume = [&](std::size_t i, Computed&& c) {
      const Copy& copy = copies[i];
      if (c.skip_reason) {
        if (report.skipped.size() < options.max_warnings) {
          ASV_LOG(Warning, "{}: skipping {}: {}", aug_name, copy.id, *c.skip_reason);
        }
        report.skipped.push_back({copy.id, *c.skip_reason});
        progress.Add(1, 0.0);
        return;
      }
      if (options.compress) {
        writer.WriteCompressed(copy.id, c.feats);
      } else {
        writer.Write(copy.id, c.feats);
      }
      aug.utt2spk[copy.id] = clean.utt2spk.at(*copy.utterance);
      aug.vad_scp[copy.id] = clean.vad_scp.at(*copy.utterance);
      aug.utt2num_frames[copy.id] = c.feats.rows();
      descriptions[copy.id] = c.description;
      report.audio_seconds += c.seconds;
      ++report.augmented;
      progress.Add(1, c.seconds);
    };
    base::ParallelForOrdered<Computed>(copies.size(), threads, 4 * static_cast<std::size_t>(threads), produce, consume);
    progress.Finish();
    if (report.augmented == 0) {
      throw DataError(fmt::format("{}: every augmented copy was skipped; the first: {}: {}", aug_name,
                                  report.skipped.front().utterance, report.skipped.front().reason));
    }
    if (report.skipped.size() > options.max_warnings) {
      ASV_LOG(Warning, "{}: {} copies skipped in all", aug_name, report.skipped.size());
    }
    aug.Save(report.aug_list_folder);
    data::WriteTable(report.aug_list_folder / kAugmentationList, descriptions);
    writer.Close();  // feats.scp last: its presence means the aug_subset is complete
    aug.feats_scp = data::ReadTable(feats_scp, data::ValueFormat::kSingleToken);
  } else {
    prep::RemoveStaleOutput(aug_features / "mfcc.ark");
    ASV_LOG(Info, "{}: factor 1: no augmented copies; {} is the clean data", dataset, combined_name);
  }

  // The combined dataset: the clean lists and the copies'.
  data::DataDir combined;
  combined.utt2spk = clean.utt2spk;
  combined.feats_scp = clean.feats_scp;
  combined.vad_scp = clean.vad_scp;
  combined.utt2num_frames = clean.utt2num_frames;
  combined.utt2spk.insert(aug.utt2spk.begin(), aug.utt2spk.end());
  combined.feats_scp.insert(aug.feats_scp.begin(), aug.feats_scp.end());
  combined.vad_scp.insert(aug.vad_scp.begin(), aug.vad_scp.end());
  combined.utt2num_frames.insert(aug.utt2num_frames.begin(), aug.utt2num_frames.end());
  // feats.scp last: its presence means the combined lists are complete.
  data::Table combined_feats = std::move(combined.feats_scp);
  combined.feats_scp.clear();
  combined.Save(report.combined_list_folder);
  data::WriteTable(report.combined_list_folder / data::kFeatsScp, combined_feats);

  report.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace asv::augment
