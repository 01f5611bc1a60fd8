// The models of voxceleb/margin outside its stages: a run's model as stage 8 uses it, described
// in WeSpeaker's config.yaml terms (asvcpp/models/wespeaker_config.h) for `asvrun export` and
// `asvrun embed`, and WeSpeaker model directories given by recipe.pretrained_model.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "asvcpp/features/fbank.h"
#include "asvcpp/models/wespeaker_config.h"
#include "asvcpp/train/embedding_extractor.h"

namespace asv::recipe {
class RunContext;
}
namespace torch::nn {
class Module;
}

namespace asv::recipes::voxceleb_margin {

class MarginSettings;

/// WeSpeaker's config.yaml fields of the model of `settings`: recipe.model, embedding_size,
/// num_mel_bins (feat_dim), head (project_type), scale, easy_margin, the margin the model was
/// trained with last (recipe.lm_margin after fine-tuning, else recipe.final_margin),
/// frame_length, frame_shift, dither and 16 kHz (the PCM stores' rate); num_class = `classes`.
models::WespeakerConfig WespeakerConfigOf(const MarginSettings& settings, std::optional<std::int64_t> classes);

/// Why the model of `settings` has no WeSpeaker form ("" when it has one): recipe.channels set
/// (WeSpeaker's ResNet34 and ECAPA_TDNN_* constructors take no width).
std::string WespeakerIncompatibility(const MarginSettings& settings);

/// Checks that the WeSpeaker model of `config` (read from `where`) is the model of `settings`:
/// recipe.model, embedding_size, num_mel_bins, frame_length and frame_shift equal to its model,
/// model_args.embed_dim, fbank_args and 16 kHz as its resample_rate. Throws ConfigError naming
/// each setting that differs, with both values.
void CheckPretrained(const MarginSettings& settings, const models::WespeakerConfig& config, const std::string& where);

/// Initialises `net` (a network of MakeNetwork for `settings`) from the WeSpeaker model at `path`
/// (models::ImportWespeakerModel, then CheckPretrained): every tensor of the embedding model, and
/// the head's rows c mod C of the model's C classes (train::CopyModelState) when the model has a
/// head; without one the head keeps its initialisation. Throws what those throw.
void InitFromPretrained(const std::filesystem::path& path, const MarginSettings& settings, torch::nn::Module& net);

/// The model stage 8 of a run with `settings` extracts with, loaded onto `device` exactly as
/// stage 8 loads it (ModelForExtraction; recipe.pretrained_model when that is what stage 8
/// uses), with stage 8's extraction options and fbank. `output_folder`: the run's absolute
/// paths.output_folder.
struct RunModel {
  train::EmbeddingExtractor extractor;
  std::filesystem::path file;    ///< the checkpoint or WeSpeaker weights file read
  features::FbankOptions fbank;  ///< FbankOf(settings), without dither
  train::ExtractionOptions extraction;
  std::int64_t classes = 0;  ///< rows of the head
};
/// Throws DataError when the model file is missing or does not fit the settings.
RunModel LoadRunModel(MarginSettings& settings, const std::filesystem::path& output_folder, const std::string& device);

}  // namespace asv::recipes::voxceleb_margin
