// Features of a prepared dataset on disk: Kaldi-compatible MFCCs and energy VAD for every
// utterance of a Kaldi list folder (what Kaldi's steps/make_mfcc.sh, sid/compute_vad_decision.sh
// and utils/fix_data_dir.sh do, and ASVtorch's asvtorch_extract_feats.sh runs). Recipes call it
// from their feature stage.
//
// Per dataset, from <dataset_root>/<dataset>/lists (wav.scp, utt2spk, spk2utt):
//   features/mfcc.ark + lists/feats.scp   MFCCs [frames, num_ceps], options of
//                                          paths.kaldi_mfcc_conf_file. Stored as Kaldi compressed
//                                          matrices (CM, CompressionMethod::kAutomatic: one byte
//                                          per value with per-column percentile headers) by
//                                          default, as make_mfcc.sh --compress=true (its default,
//                                          and so what ASVtorch and Kaldi x-vector systems train
//                                          on) does: about a quarter of the size of float
//                                          matrices (VoxCeleb2: ~25 GB instead of ~100 GB).
//                                          FeatureExtractionOptions::compress = false stores
//                                          float matrices instead.
//   features/vad.ark + lists/vad.scp      0/1 float vectors [frames]: Kaldi's ComputeVadEnergy
//                                          with voxceleb/v2's vad.conf (VadOptions::VoxcelebV2())
//                                          on column 0 (the log energy; mfcc.conf keeps
//                                          --use-energy=true) of the matrix as stored, i.e. after
//                                          compression, exactly as compute_vad_decision.sh reads
//                                          feats.scp.
//   lists/utt2num_frames                  frames per utterance.
//   lists/skipped_utterances              "<utt> <reason>" for every utterance whose audio could
//                                          not be used (missing, unreadable, truncated or empty
//                                          file, NaN/infinite/impossibly large samples, shorter
//                                          than one frame); empty when none was.
// Skipped utterances are removed from wav.scp, utt2spk and spk2utt (data::FixDataDir), so all
// lists stay aligned; prepare the lists again to bring them back after fixing the audio.
//
// Determinism: utterances are processed in sorted id order by worker threads and written by one
// writer in that order (base::ParallelForOrdered); dither noise is seeded per utterance with
// features::DitherSeed(utt id). Reruns give bit-identical files whatever the thread count or
// timing.
//
// Atomicity: archives are written under temporary names, and the outputs of an earlier run
// (archives and lists) stay untouched until every utterance is done, so a failed or interrupted
// extraction leaves the previous complete features usable. Then old feats.scp, vad.scp,
// utt2num_frames and skipped_utterances are deleted, the new archives and lists put in place,
// and lists/feats.scp renamed into place last: its presence means the dataset's stage-1 outputs
// are complete.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "asvcpp/base/progress.h"
#include "asvcpp/features/feature_options.h"
#include "asvcpp/features/vad.h"

namespace asv::settings {
struct Settings;
}

namespace asv::prep {

/// Name of the list of skipped utterances in a dataset's list folder.
inline constexpr std::string_view kSkippedUtterances = "skipped_utterances";

/// How one dataset's features are computed and stored.
struct FeatureExtractionOptions {
  features::MfccOptions mfcc;                                     ///< From mfcc.conf.
  features::VadOptions vad = features::VadOptions::VoxcelebV2();  ///< Kaldi voxceleb/v2 vad.conf.
  bool compress = true;           ///< Kaldi compressed matrices (see the header comment); false: float.
  int threads = 1;                ///< Worker threads computing features (the writer is the caller's thread).
  std::size_t max_warnings = 20;  ///< Skipped utterances warned about one by one; the rest summarised.
  base::ProgressMode progress = base::ProgressMode::kAuto;
};

/// One utterance left out and why.
struct SkippedUtterance {
  std::string utterance;
  std::string reason;  ///< The decoder's message (names the file) or "shorter than one frame".
};

/// What ExtractDatasetFeatures did.
struct FeatureExtractionReport {
  std::string dataset;
  std::size_t utterances = 0;  ///< Utterances with features written.
  std::vector<SkippedUtterance> skipped;
  std::int64_t frames = 0;     ///< Feature frames written over all utterances.
  double audio_seconds = 0.0;  ///< Duration of the audio of the written utterances.
  double wall_seconds = 0.0;   ///< Wall-clock time of the extraction.
  std::size_t resampled = 0;   ///< Utterances whose audio was resampled.
  std::filesystem::path list_folder;
  std::filesystem::path feature_folder;

  /// Seconds of audio processed per wall-clock second (the "x real time" figure).
  double RealTimeFactor() const { return wall_seconds > 0 ? audio_seconds / wall_seconds : 0.0; }
  /// "voxceleb1: 4,874 utterances, 0 skipped, 11.20 h of audio in 412.3 s (97.8x real time)".
  std::string Summary() const;
};

/// Helpers that feature extraction and dataset augmentation (asvcpp/augment/dataset_augmentation.h)
/// share.
/// `text` with newlines and tabs replaced by spaces (one line of a list such as skipped_utterances).
std::string OneLine(std::string text);
/// Removes `path` if it exists (an output of an earlier run). Throws DataError naming it when it
/// cannot be removed.
void RemoveStaleOutput(const std::filesystem::path& path);
/// Progress of a pass over utterances: counted in "utt", the amount in seconds of audio shown as
/// "x real time".
base::ProgressOptions UtteranceProgress(base::ProgressMode mode);

/// Computes the features of dataset `dataset` under `dataset_root`
/// (<output_folder>/<feature_and_list_folder>) as described in the header comment. Audio is
/// decoded (and resampled if needed) to options.mfcc.frame_opts.samp_freq.
/// Throws DataError when the list folder or its wav.scp/utt2spk is missing or malformed, or
/// when an output path contains ',' (not representable in a Kaldi wspecifier); StageError
/// naming the dataset when every utterance fails (with the first reason) or a non-data error
/// (e.g. the resampler) occurs for an utterance; DataError when writing fails. Nothing is
/// presented as complete after an exception (see "Atomicity").
FeatureExtractionReport ExtractDatasetFeatures(const std::string& dataset, const std::filesystem::path& dataset_root,
                                               const FeatureExtractionOptions& options);

/// The options of a recipe's feature stage for `settings`: MFCC options from
/// paths.kaldi_mfcc_conf_file (relative to the current folder), VoxCeleb v2 VAD, compression, and
/// computing.feature_extraction_workers threads capped at std::thread::hardware_concurrency().
/// Throws DataError for an unreadable or invalid mfcc.conf and StageError when its
/// --sample-frequency disagrees with features.sampling_rate.
FeatureExtractionOptions FeatureOptionsFromSettings(const settings::Settings& settings);

}  // namespace asv::prep
