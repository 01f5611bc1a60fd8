// The data of voxceleb/margin's stages besides the training segments: PCM stores, the speakers
// of their utterances, the back-end utterances and the trial utterances, as fbank feature sources
// (features/pcm_fbank_source.h: fbank without dither, utterance mean subtracted).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "asvcpp/data/pcm_store.h"
#include "asvcpp/features/feature_options.h"
#include "asvcpp/features/pcm_fbank_source.h"

namespace asv::recipe {
class RunContext;
}

namespace asv::recipes::voxceleb_margin {

class MarginSettings;

/// WeSpeaker's fbank (features::WespeakerFbankOptions) with recipe.num_mel_bins bins and
/// recipe.frame_length / recipe.frame_shift (ms).
features::FbankOptions FbankOf(const MarginSettings& settings);

/// The PCM store of `dataset` (stage 1). Throws DataError naming the folder when there is none
/// ("run stage 1") or it is incomplete.
std::shared_ptr<const data::PcmStore> OpenStore(recipe::RunContext& context, const std::string& dataset);

/// Speaker of every utterance of `store` by its dataset's utt2spk (empty for utterances utt2spk
/// does not list). Throws DataError when utt2spk cannot be read.
std::vector<std::string> StoreSpeakers(recipe::RunContext& context, const std::string& dataset,
                                       const data::PcmStore& store);

/// Utterances with speakers, as a feature source.
struct LabelledSource {
  std::shared_ptr<features::PcmFbankSource> source;
  std::vector<std::string> speakers;  ///< one per utterance of `source`
};

/// recipe.backend_utterances random utterances (seeded by recipe.seed; all when there are fewer)
/// of the training dataset that have a speaker: the data the back end's processing trains on.
LabelledSource BackendUtterances(recipe::RunContext& context);

/// The utterances of the trial dataset's store that the trial lists `lists` (display name, file)
/// name. Throws DataError naming the count and the first missing ids when a trial utterance is
/// not in the store (skipped by stage 1, or another dataset).
std::shared_ptr<features::PcmFbankSource> TrialUtterances(
    recipe::RunContext& context, const std::vector<std::pair<std::string, std::filesystem::path>>& lists);

}  // namespace asv::recipes::voxceleb_margin
