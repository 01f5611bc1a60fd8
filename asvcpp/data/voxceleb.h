// VoxCeleb1 and VoxCeleb2 preparation (recipe stage 0; reference section 3.7): Kaldi list folders
// under `<output_folder>/<feature_and_list_folder>/<dataset>/lists` (use DatasetRoot/ListFolder
// from data_dir.h) for the datasets voxceleb1 and voxceleb2 (one utterance per file) and
// voxceleb1_cat and voxceleb2_cat (one utterance per (speaker, video): the video's files
// concatenated, as ASVtorch's voxceleb1_cat and voxceleb2_cat).
//
// Differences from ASVtorch, on purpose:
//   * Folders and files are walked in sorted (byte) order, not os.listdir order, so ids, wav.scp
//     and concatenation order do not depend on the filesystem.
//   * Trial lists are not downloaded (the official URLs are gone): the six official lists are
//     taken from the corpus folder when present and converted WITHOUT dropping the first line.
//   * voxceleb2 wav.scp values are plain .m4a paths (asvcpp decodes them with FFmpeg's libraries),
//     not `ffmpeg ... |` pipes; voxceleb1_cat and voxceleb2_cat values are `cat:<list>`
//     (audio/audio_source.h) whose audio is the exact concatenation of the decoded files (for
//     VoxCeleb2 instead of an ADTS stream copy), with no concatenated audio file written.
#pragma once

#include <array>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace asv::data {

/// File names of the official VoxCeleb1 trial lists, looked up in the VoxCeleb1 corpus folder.
inline constexpr std::array<std::string_view, 6> kVoxCeleb1TrialLists = {
    "veri_test.txt",      "veri_test2.txt",      "list_test_hard.txt",
    "list_test_hard2.txt", "list_test_all.txt", "list_test_all2.txt"};

/// Options of the preparation functions.
struct VoxCelebOptions {
  /// When false (default) a trial list naming an utterance that is not in the corpus is a
  /// DataError listing file:line of each; when true it is a warning and the list is kept.
  bool allow_unknown_trial_utterances = false;
  /// Further trial-list file names (plain names) looked up in the corpus folder beside
  /// kVoxCeleb1TrialLists, e.g. the values of a recipe's trial_lists setting.
  std::vector<std::string> trial_list_files;
};

/// Summary of one prepared list folder.
struct PreparedDataset {
  std::string name;                      ///< "voxceleb1", "voxceleb1_cat", "voxceleb2", "voxceleb2_cat".
  std::filesystem::path list_folder;     ///< Where wav.scp, utt2spk, spk2utt were written.
  std::size_t utterances = 0;
  std::size_t speakers = 0;
  std::vector<std::string> trial_lists;  ///< File names of converted trial lists (VoxCeleb1).
  std::size_t trials = 0;                ///< Total trials over those lists.
};

/// Prepares `voxceleb1` from `<corpus>/wav/<spk>/<video>/<file>.wav`: utterance id
/// `<spk>-<video>-<file name up to its first '.'>`, wav.scp with absolute paths, utt2spk, spk2utt;
/// then converts each of kVoxCeleb1TrialLists and options.trial_list_files found directly in
/// `corpus` (official `label path path` or already id format) into the list folder under the same
/// name and checks that every trial utterance exists. Re-running rewrites the same files (atomic
/// writes). Throws DataError naming the folder when `<corpus>/wav` is missing or holds no .wav
/// file, for two files mapping to the same id, for malformed trial lists (file:line) and unknown
/// trial utterances (see VoxCelebOptions).
PreparedDataset PrepareVoxCeleb1(const std::filesystem::path& corpus,
                                 const std::filesystem::path& dataset_root,
                                 const VoxCelebOptions& options = {});

/// Prepares `voxceleb1_cat` from the files PrepareVoxCeleb1 walks
/// (`<corpus>/wav/<spk>/<video>/*.wav`, sorted byte order): one utterance per (speaker, video)
/// with .wav files, id `<spk>-<video>`, its files listed in sorted order (absolute paths,
/// audio::ConcatListText) in `<voxceleb1_cat lists>/cat/<spk>-<video>.txt`, wav.scp value
/// `cat:<absolute list path>`, utt2spk and spk2utt; no trial lists. Its audio (audio::Decode) is
/// the video's files decoded one after another. Lists left over from an earlier run that no
/// longer correspond to a video are deleted; re-running rewrites the same files (atomic writes).
/// Two folder pairs that join to one id (speaker `a-b` video `v`, speaker `a` video `b-v`) are
/// one utterance, its speaker that of the last in sorted order, as in voxceleb2_cat; files whose
/// voxceleb1 ids coincide (00001.wav, 00001.x.wav) are both parts, not an error. Throws DataError
/// naming the folder when `<corpus>/wav` is missing or holds no .wav file, or when a folder cannot
/// be listed or a list cannot be written.
PreparedDataset PrepareVoxCeleb1Cat(const std::filesystem::path& corpus,
                                    const std::filesystem::path& dataset_root);

/// Prepares `voxceleb2` and `voxceleb2_cat` from `<corpus>/{dev,test}/aac/<spk>/<video>/*.m4a`
/// (either part may be missing):
///   voxceleb2      one utterance per file, id `<spk>-<video>-<file>`, wav.scp value = absolute
///                  .m4a path.
///   voxceleb2_cat  one utterance per (speaker, video), id `<spk>-<video>`, its files listed in
///                  sorted order in `<voxceleb2_cat lists>/cat/<spk>-<video>.txt`, wav.scp value
///                  `cat:<absolute list path>`. Lists left over from an earlier run that no
///                  longer correspond to a video are deleted.
/// Returns {voxceleb2, voxceleb2_cat}. Throws DataError naming the corpus folder when neither
/// dev/aac nor test/aac exists or they hold no .m4a file, and for duplicate ids (naming both
/// files).
std::vector<PreparedDataset> PrepareVoxCeleb2(const std::filesystem::path& corpus,
                                              const std::filesystem::path& dataset_root);

}  // namespace asv::data
