#include "recipes/shared/xvector/xvector_model.h"

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/features/kaldi_feature_source.h"
#include "asvcpp/recipe/run_context.h"
#include "asvcpp/train/checkpoint.h"
#include "recipes/shared/recipe_stages.h"
#include "recipes/shared/xvector/xvector_settings.h"

namespace asv::recipes::xvector {
namespace stdfs = std::filesystem;

SelectedNetwork NetworkForExtraction(const XvectorSettings& settings, recipe::RunContext& context) {
  const auto& r = settings.recipe();
  const stdfs::path networks = context.system_folder() / "networks";
  const int epoch = r.selected_epoch ? *r.selected_epoch : shared::LastTrainedEpoch(context, networks);
  if (epoch <= 0) {
    throw DataError(
        fmt::format("{}: no network checkpoint epoch.1.pt: train first (stage 5) or set "
                    "recipe.selected_epoch",
                    networks.string()));
  }
  return {train::CheckpointPath(networks, epoch), epoch};
}

FrontEnd FrontEndOf(const XvectorSettings& settings) {
  FrontEnd front_end;
  front_end.stage1 = prep::FeatureOptionsFromSettings(settings.common());
  front_end.features = settings.common().features;
  front_end.frame_shift_seconds = front_end.stage1.mfcc.frame_opts.frame_shift_ms / 1000.0;
  return front_end;
}

RunModel LoadRunModel(XvectorSettings& settings, const stdfs::path& output_folder, const std::string& device) {
  recipe::RunContext context("", "", settings, output_folder, nullptr, 0);
  const SelectedNetwork network = NetworkForExtraction(settings, context);
  if (!stdfs::exists(network.checkpoint)) {
    throw DataError(fmt::format("{} does not exist: the run has no such network", network.checkpoint.string()));
  }
  auto front_end = FrontEndOf(settings);
  auto extractor = train::EmbeddingExtractor::FromCheckpoint(network.checkpoint, settings.common().network, device);
  auto extraction = train::ExtractionOptions::FromSettings(settings.common().network,
                                                           settings.common().computing.network_dataloader_workers);
  extraction.skip_empty = true;
  return RunModel{std::move(extractor), network.checkpoint, network.epoch, std::move(front_end), extraction};
}

shared::GivenAudioEmbeddings EmbedAudio(const train::EmbeddingExtractor& extractor,
                                        const train::ExtractionOptions& extraction, const FrontEnd& front_end,
                                        const std::vector<data::PcmStoreEntry>& entries, const stdfs::path& scratch,
                                        bool clean) {
  // A dataset of one speaker per utterance: prep::ExtractDatasetFeatures needs an utt2spk.
  const std::string dataset = "audio";
  const stdfs::path lists = data::ListFolder(scratch, dataset);
  const auto prepare = [&] {
    stdfs::create_directories(lists);
    std::string wav_scp, utt2spk;
    for (const auto& e : entries) {
      wav_scp += e.id + " " + e.source + "\n";
      utt2spk += e.id + " " + e.id + "\n";
    }
    asv::fs::WriteFileAtomic(lists / data::kWavScp, wav_scp);
    asv::fs::WriteFileAtomic(lists / data::kUtt2Spk, utt2spk);
    auto options = front_end.stage1;
    if (clean) {
      options.mfcc.frame_opts.dither = 0.0f;
      options.compress = false;
    }
    const auto report = prep::ExtractDatasetFeatures(dataset, scratch, options);
    shared::GivenAudioFeatures features;
    for (const auto& s : report.skipped) features.skipped.push_back({s.utterance, s.reason});
    const auto stored = features::ReadStoredFeatures(lists);
    std::vector<std::string> ids;
    for (const auto& e : entries) {
      if (stored.count(e.id) > 0) ids.push_back(e.id);
    }
    features.source = std::make_shared<const features::KaldiFeatureSource>(ids, stored, front_end.features);
    return features;
  };
  return shared::EmbedGivenAudio(
      scratch, prepare,
      [&](const data::FeatureSource& source, const std::vector<int>& u) {
        return extractor.Extract(source, u, extraction);
      },
      front_end.frame_shift_seconds, [](const data::FeatureSource&, int) {
        return std::string("no speech frame (energy VAD): nothing for the network");
      });
}

}  // namespace asv::recipes::xvector
