// Features of Kaldi-style datasets as the network sees them (ASVtorch's KaldiFeatureLoader,
// asvtorch/src/frontend/featureloaders/kaldi_featureloader.py): for each part of an utterance (a trial id may join
// several utterances with '&'), the stored MFCCs -> deltas (features.deltas 'bv'/'bva', window features.delta_reach) ->
// centred sliding CMN over all frames (features.cmvn 'm' or 'mv', window features.cmvn_window) -> the VAD-selected
// frames (unless features.sad_enabled is False); the parts are concatenated. VAD vectors longer or shorter than the
// features by at most features.vad_mismatch_tolerance frames are trimmed or padded with unvoiced frames.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "asvcpp/data/feature_source.h"
#include "asvcpp/settings/settings.h"

namespace asv::features {

/// Where one utterance's stored features and VAD are: Kaldi rxspecifiers (`/abs/mfcc.ark:1234`).
struct StoredUtterance {
  std::string feats;
  std::string vad;
};

/// feats.scp and vad.scp of a dataset's list folder, keyed by utterance id. Throws DataError
/// naming the folder when the dataset has no features yet (stage 1 not run) or the two lists do
/// not hold the same utterances.
std::map<std::string, StoredUtterance> ReadStoredFeatures(const std::filesystem::path& list_folder);

/// The utterances of one or more datasets with their features: ids sorted, speaker of each.
struct DatasetUtterances {
  std::vector<std::string> ids;
  std::vector<std::string> speakers;  ///< [ids.size()]
  std::map<std::string, StoredUtterance> stored;
};

/// Reads utt2spk, feats.scp and vad.scp of every dataset in `names` under `dataset_root`
/// (<dataset_root>/<name>/lists). Utterances without features are left out with a warning (the
/// feature extraction may have skipped unreadable audio). Throws DataError when `names` is empty,
/// a dataset has no lists or no features, or two datasets share an utterance id.
DatasetUtterances LoadDatasets(const std::filesystem::path& dataset_root, const std::vector<std::string>& names);

class KaldiFeatureSource : public data::FeatureSource {
 public:
  /// `ids`: utterance ids, or '&'-joined ids for multi-session trial sides; every part must be
  /// in `stored`. Reads every VAD vector once to count the speech frames (NumFrames). Throws
  /// DataError naming the first unknown id, an unreadable file, or a VAD/feature length
  /// mismatch beyond the tolerance.
  KaldiFeatureSource(std::vector<std::string> ids, const std::map<std::string, StoredUtterance>& stored,
                     const settings::FeatureSettings& features);

  int NumUtterances() const override { return static_cast<int>(ids_.size()); }
  int FeatDim() const override { return feat_dim_; }
  std::int64_t NumFrames(int utterance) const override { return speech_frames_.at(utterance); }
  asv::Matrix Frames(int utterance) const override;
  std::string Name(int utterance) const override { return ids_.at(utterance); }

  const std::vector<std::string>& ids() const { return ids_; }

 private:
  asv::Matrix PartFrames(const StoredUtterance& part, const std::string& id) const;

  std::vector<std::string> ids_;
  std::vector<std::vector<StoredUtterance>> parts_;
  std::vector<std::int64_t> speech_frames_;
  settings::FeatureSettings features_;
  int feat_dim_ = 0;
};

}  // namespace asv::features
