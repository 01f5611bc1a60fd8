#include "recipes/voxceleb/margin/margin_model.h"

#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/nn/module.h>

#include "asvcpp/base/error.h"
#include "asvcpp/models/wespeaker_model.h"
#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/recipe/run_context.h"
#include "asvcpp/train/checkpoint_io.h"
#include "asvcpp/train/model_init.h"
#include "recipes/voxceleb/margin/margin_data.h"
#include "recipes/voxceleb/margin/margin_recipe.h"
#include "recipes/voxceleb/margin/stage_train.h"

namespace asv::recipes::voxceleb_margin {
namespace stdfs = std::filesystem;

models::WespeakerConfig WespeakerConfigOf(const MarginSettings& settings, std::optional<std::int64_t> classes) {
  const auto& r = settings.recipe();
  models::WespeakerConfig c;
  c.model = r.model;
  c.feat_dim = r.num_mel_bins;
  c.embed_dim = r.embedding_size;
  c.project_type = r.head;
  c.scale = r.scale;
  c.easy_margin = r.easy_margin;
  c.margin = r.lm_epochs > 0 && !r.selected_epoch ? r.lm_margin : r.final_margin;
  c.num_class = classes;
  c.sample_rate = static_cast<int>(FbankOf(settings).frame_opts.samp_freq);
  c.num_mel_bins = r.num_mel_bins;
  c.frame_length = r.frame_length;
  c.frame_shift = r.frame_shift;
  c.dither = r.dither;
  return c;
}

std::string WespeakerIncompatibility(const MarginSettings& settings) {
  const auto& r = settings.recipe();
  if (r.channels) {
    return fmt::format("recipe.channels = {}: WeSpeaker's {} has a fixed width and its constructor takes none",
                       *r.channels, r.model);
  }
  return "";
}

void CheckPretrained(const MarginSettings& settings, const models::WespeakerConfig& config, const std::string& where) {
  const auto& r = settings.recipe();
  std::vector<std::string> problems;
  const auto compare = [&](const char* setting, const auto& ours, const auto& theirs, const char* key) {
    if (ours != theirs)
      problems.push_back(fmt::format("recipe.{} is {} but the model's {} is {}", setting, ours, key, theirs));
  };
  compare("model", r.model, config.model, "model");
  compare("embedding_size", static_cast<std::int64_t>(r.embedding_size), config.embed_dim, "model_args.embed_dim");
  compare("num_mel_bins", r.num_mel_bins, config.num_mel_bins, "dataset_args.fbank_args.num_mel_bins");
  compare("frame_length", r.frame_length, config.frame_length, "dataset_args.fbank_args.frame_length");
  compare("frame_shift", r.frame_shift, config.frame_shift, "dataset_args.fbank_args.frame_shift");
  compare("pcm sample rate (Hz)", static_cast<int>(FbankOf(settings).frame_opts.samp_freq), config.sample_rate,
          "dataset_args.resample_rate");
  if (!problems.empty()) {
    throw ConfigError(fmt::format("recipe.pretrained_model = '{}' does not fit the run's settings: {}", where,
                                  fmt::join(problems, "; ")));
  }
}

void InitFromPretrained(const stdfs::path& path, const MarginSettings& settings, torch::nn::Module& net) {
  const auto pretrained = models::ImportWespeakerModel(path);
  CheckPretrained(settings, pretrained.config, path.string());
  if (pretrained.has_head) {
    train::CopyModelState(*pretrained.net, net, "projection.");
    return;
  }
  // No head in the file: copy the embedding model, keep the new head's initialisation.
  std::map<std::string, torch::Tensor> from;
  for (const auto& p : pretrained.net->named_parameters()) from[p.key()] = p.value();
  for (const auto& b : pretrained.net->named_buffers()) from[b.key()] = b.value();
  torch::NoGradGuard no_grad;
  const auto copy = [&from](const std::string& key, torch::Tensor& to) {
    if (key.rfind("projection.", 0) == 0) return;
    to.copy_(from.at(key));
  };
  for (auto& p : net.named_parameters()) copy(p.key(), p.value());
  for (auto& b : net.named_buffers()) copy(b.key(), b.value());
}

RunModel LoadRunModel(MarginSettings& settings, const stdfs::path& output_folder, const std::string& device) {
  recipe::RunContext context("voxceleb/margin", "", settings, output_folder, nullptr, 0);
  const stdfs::path model = ModelForExtraction(settings, context);
  if (!stdfs::exists(model)) {
    throw DataError(fmt::format("{} does not exist: the run has no such model", model.string()));
  }
  std::optional<train::EmbeddingExtractor> loaded;
  stdfs::path file = model;
  if (settings.recipe().PretrainedIsExtracted() && models::LooksLikeWespeakerModel(model)) {
    auto pretrained = models::ImportWespeakerModel(model);
    CheckPretrained(settings, pretrained.config, model.string());
    loaded.emplace(pretrained.net, device);
    file = pretrained.files.weights;
  } else {
    loaded.emplace(train::EmbeddingExtractor::FromCheckpoint(
        model,
        [&settings, &device](const std::string&, std::int64_t feat_dim, std::int64_t classes, std::int64_t) {
          return MakeNetwork(settings, feat_dim, classes, device);
        },
        device));
  }
  auto extractor = std::move(*loaded);
  auto extraction = train::ExtractionOptions::FromSettings(settings.common().network,
                                                           settings.common().computing.network_dataloader_workers);
  extraction.skip_empty = true;
  const std::int64_t classes = extractor.net().info().n_speakers;
  auto fbank = FbankOf(settings);
  fbank.frame_opts.dither = 0.0f;
  return RunModel{std::move(extractor), file, fbank, extraction, classes};
}

}  // namespace asv::recipes::voxceleb_margin
