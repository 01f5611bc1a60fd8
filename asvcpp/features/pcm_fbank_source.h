// Features of whole utterances of a PCM store (asvcpp/data/pcm_store.h), computed when read:
// Kaldi-compatible fbank without dither, then the utterance's mean subtracted, as WeSpeaker
// extracts embeddings (wespeaker/dataset/processor.py compute_fbank with dither 0.0 and apply_cmvn
// norm_var=False). For validation and embedding extraction of recipes that train on segments of
// a PCM store; no files besides the store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "asvcpp/data/feature_source.h"
#include "asvcpp/data/pcm_store.h"
#include "asvcpp/features/fbank.h"

namespace asv::features {

class PcmFbankSource : public data::FeatureSource {
 public:
  /// Utterance i of this source is utterance `utterances[i]` of `store`. `options` with any dither
  /// (it is set to 0). Throws std::out_of_range for an index outside the store, DataError for
  /// options features::Fbank rejects or a sample rate other than the store's.
  PcmFbankSource(std::shared_ptr<const data::PcmStore> store, std::vector<std::size_t> utterances,
                 FbankOptions options);

  int NumUtterances() const override { return static_cast<int>(utterances_.size()); }
  int FeatDim() const override { return fbank_.Dim(); }
  /// Kaldi's frame count of the utterance's samples (0 when shorter than one frame).
  std::int64_t NumFrames(int utterance) const override;
  /// [NumFrames, FeatDim] fbank minus its mean over frames. Throws std::out_of_range for a bad index.
  Matrix Frames(int utterance) const override;
  std::string Name(int utterance) const override;

  /// The store ids of this source's utterances, in order.
  std::vector<std::string> Ids() const;

 private:
  std::size_t StoreIndex(int utterance) const;

  std::shared_ptr<const data::PcmStore> store_;
  std::vector<std::size_t> utterances_;
  Fbank fbank_;
};

}  // namespace asv::features
