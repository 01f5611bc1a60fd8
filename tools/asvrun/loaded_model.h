// The model behind `asvrun export`, `embed` and `verify` (--model M): one loader for run ids,
// system folders and WeSpeaker model directories, and one function that embeds audio with the
// model's own front end, so the three commands cannot drift apart. Linked into asvrun-torch only
// (model_commands.cc implements it; cli.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/backend/evaluation.h"
#include "asvcpp/data/pcm_store.h"
#include "asvcpp/features/fbank.h"
#include "asvcpp/models/wespeaker_config.h"
#include "asvcpp/recipe/recipe.h"
#include "asvcpp/settings/settings.h"
#include "asvcpp/train/embedding_extractor.h"
#include "recipes/shared/xvector/xvector_model.h"
#include "tools/asvrun/commands.h"

namespace asv::tools {

/// The system a run's model belongs to: what `asvrun verify` scores with.
struct RunSystem {
  std::int64_t run_id = 0;
  std::string config;
  std::filesystem::path folder;       ///< <paths.output_folder>/<paths.system_folder>, absolute
  settings::BackendSettings backend;  ///< the run's backend.* settings
};

/// A model ready to extract embeddings with, and what it was trained with.
struct LoadedModel {
  enum class FrontEnd {
    kFbank,  ///< whole-utterance fbank minus its mean: voxceleb/margin runs, WeSpeaker models
    kMfcc,   ///< the x-vector recipes' MFCCs, energy VAD and sliding CMN (their stages 1 and 7)
  };
  FrontEnd front_end = FrontEnd::kFbank;
  std::optional<train::EmbeddingExtractor> extractor;
  models::WespeakerConfig config;  ///< kFbank: architecture, head and front end in WeSpeaker's terms
  features::FbankOptions fbank;    ///< kFbank: without dither
  std::optional<recipes::xvector::FrontEnd> mfcc;  ///< kMfcc: the run's stage-1 and stage-7 front end
  train::ExtractionOptions extraction;
  /// The run's resolved settings (nullptr for a WeSpeaker model), paths.kaldi_mfcc_conf_file made
  /// absolute (LoadModel).
  std::shared_ptr<recipe::RecipeSettings> settings;
  std::optional<RunSystem> system;  ///< the run's system (nullopt for a WeSpeaker model)
  std::optional<int> epoch;         ///< kMfcc: the epoch of the network's checkpoint
  std::filesystem::path weights;    ///< the file the weights were read from
  std::string incompatibility;      ///< why WeSpeaker cannot hold it ("" when it can)
  bool has_head = true;             ///< false: a WeSpeaker model without projection.*
  std::string description;
};

/// The model of `options` (ModelOptions in commands.h) on options.device: a run of voxceleb/margin
/// (recipes/voxceleb/margin/margin_model.h LoadRunModel: stage 8's model), a run of
/// voxceleb/xvector or sitw/xvector (recipes/shared/xvector/xvector_model.h LoadRunModel: stage 7's
/// network and the run's front end), or a WeSpeaker model directory. An x-vector run's relative
/// paths.kaldi_mfcc_conf_file is taken against the folder the run ran in (its absolute output
/// folder less the relative paths.output_folder it recorded), else against the current folder.
/// Throws ConfigError for a bad --device, DbError for a run id the database does not hold,
/// DataError for anything else that cannot be read or is of another recipe.
LoadedModel LoadModel(const ModelOptions& options);

/// Embeddings of audio and the inputs that gave none, with the reason.
using AudioEmbeddings = recipes::shared::GivenAudioEmbeddings;

/// Embeds `entries` (ids unique, without whitespace; sources wav.scp values) with the model's own
/// front end, as `asvrun embed` documents it, in `scratch` (created and removed): kFbank decodes
/// into a PCM store and computes fbank with the utterance mean subtracted (stage 8's batching);
/// kMfcc computes the run's stage-1 features (Kaldi's dither seeded by the id, compressed storage,
/// energy VAD) and reads them as its stage 7 does (recipes::xvector::EmbedAudio), or with
/// `clean_features` without dither and compression (what the ONNX graph with the front end
/// computes; kFbank has neither anyway). `threads`: audio decoding threads. Inputs that cannot be
/// decoded or give no frame for the network are skipped with their reason. Throws DataError when
/// the extraction fails as a whole, and what the extractor throws.
AudioEmbeddings EmbedAudio(const LoadedModel& model, const std::vector<data::PcmStoreEntry>& entries,
                           const std::filesystem::path& scratch, int threads, bool clean_features = false);

}  // namespace asv::tools
