// The networks of the x-vector recipes (voxceleb/xvector, sitw/xvector) outside their stages: a
// run's network as its stage 7 extracts with it, and embeddings of new audio through the run's
// own front end (stage 1's MFCCs and energy VAD, stage 7's deltas, sliding CMN and frame
// selection), for `asvrun embed`, `asvrun verify` and `asvrun export`. Stage 7 chooses its network
// through the same function.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "asvcpp/backend/evaluation.h"
#include "asvcpp/data/pcm_store.h"
#include "asvcpp/prep/dataset_features.h"
#include "asvcpp/settings/settings.h"
#include "asvcpp/train/embedding_extractor.h"
#include "recipes/shared/recipe_stages.h"

namespace asv::recipe {
class RunContext;
}

namespace asv::recipes::xvector {

class XvectorSettings;

/// The checkpoint stage 7 extracts with: networks/epoch.<recipe.selected_epoch>.pt, else the
/// newest of <system>/networks (shared::LastTrainedEpoch, which also checks the database of
/// `context` when it has one). Throws DataError when there is none ("train first").
struct SelectedNetwork {
  std::filesystem::path checkpoint;
  int epoch = 0;
};
SelectedNetwork NetworkForExtraction(const XvectorSettings& settings, recipe::RunContext& context);

/// The front end of an x-vector run: how stage 1 computes and stores the features of audio and how
/// stage 7 reads them for the network.
struct FrontEnd {
  /// prep::FeatureOptionsFromSettings: the MFCCs of paths.kaldi_mfcc_conf_file (with its dither,
  /// Kaldi's default 1.0), voxceleb/v2's energy VAD on the stored (compressed) MFCCs.
  prep::FeatureExtractionOptions stage1;
  /// features.* (deltas, sliding CMN, VAD frame selection) as features::KaldiFeatureSource applies
  /// them.
  settings::FeatureSettings features;
  double frame_shift_seconds = 0.01;  ///< the MFCC frame shift: durations are speech frames x this
};

/// Stage 1's front end of `settings` (paths.kaldi_mfcc_conf_file taken against the current
/// folder). Throws what prep::FeatureOptionsFromSettings throws (DataError for an unreadable
/// mfcc.conf, StageError when its rate disagrees with features.sampling_rate).
FrontEnd FrontEndOf(const XvectorSettings& settings);

/// The network stage 7 of a run with `settings` extracts with (NetworkForExtraction, without a
/// database), loaded onto `device` as stage 7 loads it, with stage 7's extraction options (utterances
/// without speech frames skipped) and the run's front end. `output_folder`: the run's absolute
/// paths.output_folder.
struct RunModel {
  train::EmbeddingExtractor extractor;
  std::filesystem::path file;  ///< the checkpoint read
  int epoch = 0;
  FrontEnd front_end;
  train::ExtractionOptions extraction;
};
/// Throws DataError when there is no checkpoint or it does not fit network.*, and what FrontEndOf
/// throws.
RunModel LoadRunModel(XvectorSettings& settings, const std::filesystem::path& output_folder, const std::string& device);

/// Embeds `entries` (unique ids without whitespace; wav.scp values) as the run's stages 1 and 7
/// would: a temporary dataset under `scratch` (created, then removed) whose features
/// prep::ExtractDatasetFeatures computes with `front_end.stage1` (threads included) — Kaldi's dither
/// seeded by each id (features::DitherSeed), compressed storage, VAD on the stored matrix — read
/// through features::KaldiFeatureSource with `front_end.features` and extracted with `extraction`.
/// The embedding of an utterance given with its id from the run's lists is then stage 7's, when
/// extracted in the same batches (the same utterances in the same order). With `clean`, no dither
/// and no compression: the features the ONNX graph of deploy::ExportOnnx with
/// XvectorOnnxFrontEnd computes. Audio that cannot be decoded, is shorter than one frame or has no
/// speech frame is skipped with the reason. Throws DataError when no input can be decoded, and
/// what the extractor throws.
shared::GivenAudioEmbeddings EmbedAudio(const train::EmbeddingExtractor& extractor, const train::ExtractionOptions& extraction,
                                        const FrontEnd& front_end, const std::vector<data::PcmStoreEntry>& entries,
                                        const std::filesystem::path& scratch, bool clean);

}  // namespace asv::recipes::xvector
