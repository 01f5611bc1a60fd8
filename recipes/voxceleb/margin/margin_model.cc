#include "recipes/voxceleb/margin/margin_model.h"

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/recipe/run_context.h"
#include "asvcpp/train/checkpoint_io.h"
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

RunModel LoadRunModel(MarginSettings& settings, const stdfs::path& output_folder, const std::string& device) {
  recipe::RunContext context("voxceleb/margin", "", settings, output_folder, nullptr, 0);
  const stdfs::path model = ModelForExtraction(settings, context);
  if (!stdfs::exists(model))
    throw DataError(fmt::format("{} does not exist: the run has no such model", model.string()));
  auto extractor = train::EmbeddingExtractor::FromCheckpoint(
      model,
      [&settings, &device](const std::string&, std::int64_t feat_dim, std::int64_t classes, std::int64_t) {
        return MakeNetwork(settings, feat_dim, classes, device);
      },
      device);
  auto extraction = train::ExtractionOptions::FromSettings(settings.common().network,
                                                           settings.common().computing.network_dataloader_workers);
  extraction.skip_empty = true;
  const std::int64_t classes = extractor.net().info().n_speakers;
  auto fbank = FbankOf(settings);
  fbank.frame_opts.dither = 0.0f;
  return RunModel{std::move(extractor), model, fbank, extraction, classes};
}

}  // namespace asv::recipes::voxceleb_margin
