// A Kaldi data directory (ASVtorch's list folder, `<output>/<feature_and_list_folder>/<dataset>/lists`).
//
// Files, all optional on disk: wav.scp, utt2spk, spk2utt, feats.scp, vad.scp, utt2num_frames
// (formats in table.h). spk2utt is always derived from utt2spk when saving. segments, reco2dur and
// the like are not used by asvcpp.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "asvcpp/data/table.h"

namespace asv::data {

inline constexpr std::string_view kWavScp = "wav.scp";
inline constexpr std::string_view kUtt2Spk = "utt2spk";
inline constexpr std::string_view kSpk2Utt = "spk2utt";
inline constexpr std::string_view kFeatsScp = "feats.scp";
inline constexpr std::string_view kVadScp = "vad.scp";
inline constexpr std::string_view kUtt2NumFrames = "utt2num_frames";

/// `<output_folder>/<feature_and_list_folder>`: the root under which every data set has a folder.
std::filesystem::path DatasetRoot(const std::filesystem::path& output_folder,
                                  std::string_view feature_and_list_folder);

/// `<dataset_root>/<dataset>/lists` (reference layout 3.8).
std::filesystem::path ListFolder(const std::filesystem::path& dataset_root, std::string_view dataset);

/// `<dataset_root>/<dataset>/features`.
std::filesystem::path FeatureFolder(const std::filesystem::path& dataset_root, std::string_view dataset);

/// In-memory content of a data directory; an empty table means "file absent".
struct DataDir {
  Table wav_scp;         ///< utt -> audio source (kRestOfLine).
  Table utt2spk;         ///< utt -> speaker.
  Table feats_scp;       ///< utt -> feature rxspecifier.
  Table vad_scp;         ///< utt -> VAD rxspecifier.
  Counts utt2num_frames; ///< utt -> number of feature frames.

  /// Reads every file that exists in `dir`. If spk2utt exists it must agree with utt2spk
  /// (DataError naming both files otherwise); if only spk2utt exists, utt2spk is derived from it.
  /// Throws DataError when `dir` is not a directory or holds none of the files, and for any
  /// malformed file (file:line).
  static DataDir Load(const std::filesystem::path& dir);

  /// Writes every non-empty table plus spk2utt (from utt2spk) into `dir` (created if missing),
  /// sorted and atomically. Files of empty tables are left alone (not deleted).
  void Save(const std::filesystem::path& dir) const;

  /// Number of utterances: the size of the largest table.
  std::size_t size() const;
};

/// What FixDataDir removed.
struct FixReport {
  std::size_t kept = 0;  ///< Utterances present in every non-empty table.
  /// file name (e.g. "wav.scp") -> ids removed from it, sorted.
  std::map<std::string, std::vector<std::string>> dropped;
  bool sorted_by_speaker = true;  ///< See IsSortedBySpeaker; Kaldi tools require it.

  /// Total number of removed entries over all tables.
  std::size_t dropped_total() const;
  /// One line per table with removals, e.g. "wav.scp: dropped 2 (u1, u7)"; at most
  /// `max_ids` ids named per table.
  std::string Describe(std::size_t max_ids = 5) const;
};

/// Keeps only the utterances present in every non-empty table (the job of Kaldi's
/// utils/fix_data_dir.sh, without its sorting which std::map does anyway) and reports what was
/// dropped from which table. Never throws.
FixReport FixDataDir(DataDir& data);

/// Load, FixDataDir, Save; throws DataError when no utterance survives. Logs the report (Warning when something was dropped or utterance ids
/// do not sort with their speakers) naming `dir`. Returns the report.
FixReport FixDataDirOnDisk(const std::filesystem::path& dir);

}  // namespace asv::data
