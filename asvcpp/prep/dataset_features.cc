#include "asvcpp/prep/dataset_features.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "asvcpp/audio/decode.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/base/thread_pool.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/table.h"
#include "asvcpp/features/compressed_matrix.h"
#include "asvcpp/features/dither_seed.h"
#include "asvcpp/features/kaldi_io.h"
#include "asvcpp/features/kaldi_options.h"
#include "asvcpp/features/mfcc.h"
#include "asvcpp/settings/settings.h"

namespace asv::prep {
namespace {

namespace stdfs = std::filesystem;

// What a worker computed for one utterance.
struct Computed {
  Matrix feats;  // [frames, num_ceps] as computed (uncompressed)
  std::vector<float> vad;
  double seconds = 0.0;
  bool resampled = false;
  std::optional<std::string> skip_reason;
};

std::string Count(std::size_t n) {
  return base::Progress::FormatCount(static_cast<std::int64_t>(n));
}

void CheckWspecifierPath(const stdfs::path& path) {
  if (path.string().find(',') != std::string::npos) {
    throw DataError(
        fmt::format("{}: output paths must not contain ',' (Kaldi wspecifiers split on it); "
                    "choose another paths.output_folder",
                    path.string()));
  }
}

}  // namespace

std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return text;
}

void RemoveStaleOutput(const stdfs::path& path) {
  std::error_code ec;
  stdfs::remove(path, ec);
  if (ec) throw DataError(fmt::format("{}: cannot remove stale output: {}", path.string(), ec.message()));
}

base::ProgressOptions UtteranceProgress(base::ProgressMode mode) {
  base::ProgressOptions options;
  options.unit = "utt";
  options.mode = mode;
  options.amount_rate_suffix = "x real time";
  return options;
}

std::string FeatureExtractionReport::Summary() const {
  return fmt::format("{}: {} utterances, {} skipped, {:.2f} h of audio in {:.1f} s ({:.1f}x real time)", dataset,
                     Count(utterances), Count(skipped.size()), audio_seconds / 3600.0, wall_seconds, RealTimeFactor());
}

FeatureExtractionReport ExtractDatasetFeatures(const std::string& dataset, const stdfs::path& dataset_root,
                                               const FeatureExtractionOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  FeatureExtractionReport report;
  report.dataset = dataset;
  report.list_folder = data::ListFolder(dataset_root, dataset);
  report.feature_folder = data::FeatureFolder(dataset_root, dataset);
  const stdfs::path& lists = report.list_folder;

  // Inputs: the lists of stage 0, without any stage-1 outputs of an earlier run.
  data::DataDir data = data::DataDir::Load(lists);
  if (data.wav_scp.empty()) throw DataError(fmt::format("{}: wav.scp is missing or empty", lists.string()));
  if (data.utt2spk.empty()) throw DataError(fmt::format("{}: utt2spk is missing or empty", lists.string()));
  data.feats_scp.clear();
  data.vad_scp.clear();
  data.utt2num_frames.clear();
  const data::FixReport input_fix = data::FixDataDir(data);
  if (input_fix.dropped_total() > 0) {
    ASV_LOG(Warning, "{}: wav.scp and utt2spk disagree; using the {} utterances in both:\n{}", lists.string(),
            Count(input_fix.kept), input_fix.Describe());
  }
  if (data.wav_scp.empty())
    throw DataError(fmt::format("{}: no utterance is in both wav.scp and utt2spk", lists.string()));

  const features::Mfcc mfcc(options.mfcc);  // validates the options
  const float samp_freq = options.mfcc.frame_opts.samp_freq;
  if (samp_freq != std::round(samp_freq)) {
    throw DataError(fmt::format("--sample-frequency={} is not a whole number of Hz", samp_freq));
  }
  audio::DecodeOptions decode_options;
  decode_options.sample_rate = static_cast<int>(samp_freq);

  const stdfs::path mfcc_ark = report.feature_folder / "mfcc.ark";
  const stdfs::path vad_ark = report.feature_folder / "vad.ark";
  const stdfs::path feats_scp = lists / data::kFeatsScp;
  const stdfs::path vad_scp = lists / data::kVadScp;
  for (const auto& p : {mfcc_ark, vad_ark, feats_scp, vad_scp}) CheckWspecifierPath(p);

  // The outputs of an earlier run stay untouched until this one is complete (see "Atomicity").
  stdfs::create_directories(report.feature_folder);
  features::TableWriter mfcc_writer(fmt::format("ark,scp:{},{}", mfcc_ark.string(), feats_scp.string()));
  features::TableWriter vad_writer(fmt::format("ark,scp:{},{}", vad_ark.string(), vad_scp.string()));

  std::vector<const std::pair<const std::string, std::string>*> utterances;
  utterances.reserve(data.wav_scp.size());
  for (const auto& entry : data.wav_scp) utterances.push_back(&entry);

  const int threads = std::max(1, options.threads);
  ASV_LOG(Info, "{}: computing MFCCs and VAD of {} utterances with {} thread{}", dataset, Count(utterances.size()),
          threads, threads == 1 ? "" : "s");
  audio::ResampleReporter resample_reporter(dataset);
  base::Progress progress(dataset, static_cast<std::int64_t>(utterances.size()), UtteranceProgress(options.progress));

  auto produce = [&](std::size_t i) {
    const std::string& utt = utterances[i]->first;
    Computed out;
    audio::Audio audio;
    try {
      audio = audio::Decode(utterances[i]->second, decode_options);
    } catch (const DataError& e) {
      out.skip_reason = OneLine(e.what());
      return out;
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw StageError(fmt::format("{}: utterance {}: {}", dataset, utt, e.what()));
    }
    out.seconds = audio.Seconds();
    out.resampled = audio.resampled;
    resample_reporter.Note(utt, audio);
    out.feats =
        mfcc.Compute(audio.samples.data(), static_cast<std::int64_t>(audio.samples.size()), features::DitherSeed(utt));
    if (out.feats.rows() == 0) {
      out.skip_reason = fmt::format("{} samples: shorter than one frame", audio.samples.size());
      return out;
    }
    const float* values = out.feats.data();
    if (!std::all_of(values, values + out.feats.rows() * out.feats.cols(), [](float v) { return std::isfinite(v); })) {  // the decoder rejects bad samples; this guards the features
      out.skip_reason = "features are NaN or infinite (corrupt audio)";
      return out;
    }
    // VAD on the matrix as stored, as compute_vad_decision.sh reads feats.scp.
    out.vad = options.compress ? features::ComputeVadEnergy(
                                     options.vad, features::CompressedMatrix::Compress(out.feats).Decompress())
                               : features::ComputeVadEnergy(options.vad, out.feats);
    return out;
  };

  auto consume = [&](std::size_t i, Computed&& c) {
    const std::string& utt = utterances[i]->first;
    if (c.skip_reason) {
      if (report.skipped.size() < options.max_warnings) {
        ASV_LOG(Warning, "{}: skipping utterance {}: {}", dataset, utt, *c.skip_reason);
      } else if (report.skipped.size() == options.max_warnings) {
        ASV_LOG(Warning, "{}: more utterances skipped; all are listed in {}", dataset,
                (lists / kSkippedUtterances).string());
      }
      report.skipped.push_back({utt, *c.skip_reason});
      progress.Add(1, 0.0);
      return;
    }
    if (options.compress) {
      mfcc_writer.WriteCompressed(utt, c.feats);
    } else {
      mfcc_writer.Write(utt, c.feats);
    }
    vad_writer.Write(utt, c.vad);
    data.utt2num_frames[utt] = c.feats.rows();
    report.frames += c.feats.rows();
    report.audio_seconds += c.seconds;
    ++report.utterances;
    if (c.resampled) ++report.resampled;
    progress.Add(1, c.seconds);
  };

  base::ParallelForOrdered<Computed>(utterances.size(), threads, 4 * static_cast<std::size_t>(threads), produce,
                                     consume);
  progress.Finish();
  resample_reporter.LogSummary();

  if (report.utterances == 0) {
    throw StageError(fmt::format("{}: no utterance could be used ({} skipped); the first: {}: {}", dataset,
                                 Count(report.skipped.size()), report.skipped.front().utterance,
                                 report.skipped.front().reason));
  }

  // Complete: the old outputs go, feats.scp (the marker of a complete dataset) first; then the
  // new archives and lists, feats.scp last (see the header).
  for (std::string_view name : {data::kFeatsScp, data::kVadScp, data::kUtt2NumFrames, kSkippedUtterances}) {
    RemoveStaleOutput(lists / name);
  }
  vad_writer.Close();
  data::Table skipped_table;
  for (const auto& s : report.skipped) {
    data.wav_scp.erase(s.utterance);
    data.utt2spk.erase(s.utterance);
    skipped_table[s.utterance] = s.reason;
  }
  const data::FixReport output_fix = data::FixDataDir(data);
  if (output_fix.dropped_total() > 0) {  // cannot happen: every table holds the same utterances
    throw StageError(fmt::format("{}: lists disagree after feature extraction:\n{}", dataset, output_fix.Describe()));
  }
  data.Save(lists);
  data::WriteTable(lists / kSkippedUtterances, skipped_table);
  mfcc_writer.Close();

  report.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

FeatureExtractionOptions FeatureOptionsFromSettings(const settings::Settings& common) {
  std::error_code ec;
  stdfs::path conf = stdfs::absolute(common.paths.kaldi_mfcc_conf_file, ec);
  if (ec) conf = common.paths.kaldi_mfcc_conf_file;
  FeatureExtractionOptions options;
  options.mfcc = features::ReadKaldiConfig<features::MfccOptions>(conf.string());
  const float samp_freq = options.mfcc.frame_opts.samp_freq;
  if (samp_freq != static_cast<float>(common.features.sampling_rate)) {
    throw StageError(
        fmt::format("features.sampling_rate = {} disagrees with --sample-frequency={} of {}; the features would be "
                    "computed at a rate the rest of the recipe does not expect (remove the override of "
                    "features.sampling_rate or change mfcc.conf)",
                    common.features.sampling_rate, samp_freq, conf.string()));
  }
  options.threads = base::EffectiveThreads(common.computing.feature_extraction_workers);
  return options;
}

}  // namespace asv::prep
