#include "recipes/shared/xvector/stage_embeddings.h"

#include <map>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "asvcpp/backend/evaluation.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/table.h"
#include "asvcpp/features/feature_options.h"
#include "asvcpp/features/kaldi_feature_source.h"
#include "asvcpp/features/kaldi_options.h"
#include "asvcpp/train/checkpoint.h"
#include "asvcpp/train/embedding_extractor.h"
#include "asvcpp/train/precision.h"
#include "recipes/shared/recipe_stages.h"
#include "recipes/shared/xvector/data_selection.h"
#include "recipes/shared/xvector/xvector_model.h"
#include "recipes/shared/xvector/xvector_settings.h"

namespace asv::recipes::xvector {
namespace stdfs = std::filesystem;
using backend::Embeddings;

namespace {

// The frame shift of paths.kaldi_mfcc_conf_file (Kaldi's default 10 ms when it cannot be read):
// the embeddings' durations only feed the log-durations of quality-aware calibration.
double FrameShiftSeconds(const settings::Settings& common) {
  try {
    return features::ReadKaldiConfig<features::MfccOptions>(common.paths.kaldi_mfcc_conf_file)
               .frame_opts.frame_shift_ms /
           1000.0;
  } catch (const std::exception&) {
    return 0.01;
  }
}

}  // namespace

void RunEmbeddingExtraction(recipe::RunContext& context) {
  auto& s = SettingsOf(context);
  const auto& r = s.recipe();
  const auto [checkpoint, epoch] = NetworkForExtraction(s, context);
  const std::string device = context.device();
  train::ApplyMathModes(s.common().computing.allow_tf32);
  ASV_LOG(Info, "embedding extraction with {} on {}", checkpoint.string(), device);
  const auto extractor = train::EmbeddingExtractor::FromCheckpoint(checkpoint, s.common().network, device);
  shared::RecordCheckpointsUsed(context, {checkpoint});
  auto options =
      train::ExtractionOptions::FromSettings(s.common().network, s.common().computing.network_dataloader_workers);
  options.skip_empty = true;

  // Trial utterances: both sides of every existing trial list, first-appearance order.
  std::vector<std::string> names;
  for (const auto& entry : r.trial_lists) names.push_back(entry.first);
  const auto lists = backend::TrialListFiles(
      names, r.trial_lists, data::ListFolder(context.feature_and_list_folder(), r.trial_dataset), false);
  if (lists.empty()) {
    throw DataError(fmt::format("none of the trial lists of recipe.trial_lists exists in {}",
                                data::ListFolder(context.feature_and_list_folder(), r.trial_dataset).string()));
  }
  const auto trial_ids = backend::TrialSides(lists);
  const auto trial_data = features::LoadDatasets(context.feature_and_list_folder(), {r.trial_dataset});
  const features::KaldiFeatureSource trial_source(trial_ids, trial_data.stored, s.common().features);
  const double shift = FrameShiftSeconds(s.common());
  const auto trial = shared::ExtractAll(
      trial_source, "trial", [&](const std::vector<int>& u) { return extractor.Extract(trial_source, u, options); },
      shift);

  const auto plda_data = LoadSelectedData(context.feature_and_list_folder(), r.plda_datasets, r, "PLDA data");
  const features::KaldiFeatureSource plda_source(plda_data.ids, plda_data.stored, s.common().features);
  const auto plda = shared::ExtractAll(
      plda_source, "PLDA", [&](const std::vector<int>& u) { return extractor.Extract(plda_source, u, options); },
      shift);

  const stdfs::path folder = context.system_folder() / "embeddings";
  backend::WriteEmbeddings(folder / "trial", trial);
  backend::WriteEmbeddings(folder / "plda", plda);
  std::map<std::string, std::string> speaker_of;
  for (std::size_t i = 0; i < plda_data.ids.size(); ++i) speaker_of[plda_data.ids[i]] = plda_data.speakers[i];
  data::Table utt2spk;
  for (const auto& id : plda.ids) utt2spk[id] = speaker_of.at(id);
  data::WriteTable(folder / "plda.utt2spk", utt2spk);
  std::vector<std::string> speakers;
  for (const auto& id : plda.ids) speakers.push_back(speaker_of.at(id));
  shared::WriteSpeakerCohort(context, folder / "cohort", backend::SpeakerMeans(plda, speakers),
                               folder / "plda.ark");
  asv::fs::WriteFileAtomic(folder / "info.json",
                           nlohmann::json{{"epoch", epoch}, {"checkpoint", checkpoint.string()}}.dump(2) + "\n");
  for (const char* name :
       {"trial.ark", "trial.scp", "trial.utt2dur", "plda.ark", "plda.scp", "plda.utt2spk", "plda.utt2dur"}) {
    context.RecordArtifact(folder / name, "embeddings");
  }
}

}  // namespace asv::recipes::xvector
