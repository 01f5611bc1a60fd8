// Augmented copies of a dataset's utterances and the "combined" dataset that training reads
// (what ASVtorch's asvtorch_augment.sh does with Kaldi's reverberate_data_dir.py,
// augment_data_dir.py, subset_data_dir.sh, make_mfcc.sh and combine_data.sh), without Kaldi.
//
// For a dataset and a factor (1..5: the combined data holds factor times as many utterances as
// the clean data), from the dataset's lists and features (prep::ExtractDatasetFeatures) under
// <dataset_root>:
//   <dataset>_aug_subset/features/mfcc.ark   MFCCs of n (factor - 1) augmented copies (n clean
//   + lists/feats.scp                       utterances), drawn without replacement from the 4n
//                                            copies <utt>-reverb, <utt>-noise, <utt>-music and
//                                            <utt>-babble (augment::Augmenter: Kaldi's VoxCeleb v2
//                                            settings), at random with the seed (Kaldi's
//                                            subset_data_dir.sh takes an evenly spread, not random,
//                                            subset of the ids sorted, which ASVtorch inherits);
//                                            stored as stage 1 stores features (same mfcc.conf,
//                                            compression, dither seeded by the copy's id)
//   <dataset>_aug_subset/lists/              utt2spk (the clean utterance's speaker), vad.scp (the
//                                            clean utterance's VAD: the copy has as many frames, as
//                                            in Kaldi's recipe), utt2num_frames, spk2utt, and
//                                            `augmentation`: "<copy id> <what was mixed in>"
//   <dataset>_combined/lists/                utt2spk, spk2utt, feats.scp, vad.scp, utt2num_frames
//                                            of the clean dataset and its aug_subset together
//                                            (no wav.scp: the copies have no audio file)
// Noises and RIRs come from the Augmenter (MUSAN, RIRS_NOISES: augmenter.h, noise_sets.h).
//
// Determinism: each copy draws from a generator seeded by the seed and the copy's id, so reruns give
// the same files whatever the thread count. Atomicity: stale aug_subset and combined lists are
// removed first; aug_subset's feats.scp is renamed into place after its other lists, and the
// combined lists are written after it, their feats.scp last.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "asvcpp/prep/dataset_features.h"

namespace asv::augment {

class Augmenter;

/// Name of the list in <dataset>_aug_subset/lists that says what went into each copy.
inline constexpr std::string_view kAugmentationList = "augmentation";

/// What AugmentDataset did.
struct AugmentationReport {
  std::string dataset;
  std::size_t clean = 0;                        ///< Utterances of the clean dataset (with features).
  std::size_t augmented = 0;                    ///< Copies written to <dataset>_aug_subset.
  std::vector<prep::SkippedUtterance> skipped;  ///< Copies left out: clean audio unreadable or changed since stage 1.
  double audio_seconds = 0.0;                   ///< Seconds of augmented audio written.
  double wall_seconds = 0.0;
  std::filesystem::path aug_list_folder;
  std::filesystem::path combined_list_folder;

  /// One line: dataset, copies, skipped, hours, real-time factor.
  std::string Summary() const;
};

/// Augments one dataset (see the header comment). `factor` in 1..5; 1 makes <dataset>_combined
/// a copy of the clean lists. The copies' MFCCs use `options` (as the clean features should).
/// Throws DataError naming the folder when the dataset lacks its lists or features (wav.scp,
/// utt2spk, feats.scp, vad.scp, utt2num_frames), when every copy had to be skipped, or when a
/// noise or RIR file cannot be read; std::invalid_argument for a factor outside 1..5.
AugmentationReport AugmentDataset(const std::string& dataset, int factor, const std::filesystem::path& dataset_root,
                                  const Augmenter& augmenter, const prep::FeatureExtractionOptions& options,
                                  std::uint64_t seed);

}  // namespace asv::augment
