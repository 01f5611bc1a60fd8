// Features of Kaldi-style datasets as the network sees them (ASVtorch KaldiFeatureLoader,
// reference/asvtorch.md section 4.4): for each part of an utterance (a trial id may join several
// utterances with '&'), the stored MFCCs -> deltas (features.deltas 'bv'/'bva', window
// features.delta_reach) -> centred sliding CMN over all frames (features.cmvn 'm' or 'mv',
// window features.cmvn_window) -> the VAD-selected frames (unless features.sad_enabled is
// False); the parts are concatenated. VAD vectors longer or shorter than the features by at
// most features.vad_mismatch_tolerance frames are trimmed or padded with unvoiced frames.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "asvcpp/settings/settings.h"
#include "asvcpp/train/feature_source.h"

namespace asv::recipes::voxceleb_xvector {

/// Where one utterance's stored features and VAD are: Kaldi rxspecifiers (`/abs/mfcc.ark:1234`).
struct StoredUtterance {
  std::string feats;
  std::string vad;
};

/// feats.scp and vad.scp of a dataset's list folder, keyed by utterance id. Throws DataError
/// naming the folder when the dataset has no features yet (stage 1 not run) or the two lists do
/// not hold the same utterances.
std::map<std::string, StoredUtterance> ReadStoredFeatures(const std::filesystem::path& list_folder);

class KaldiFeatureSource : public train::FeatureSource {
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

}  // namespace asv::recipes::voxceleb_xvector
