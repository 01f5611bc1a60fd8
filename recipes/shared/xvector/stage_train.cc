#include "recipes/shared/xvector/stage_train.h"

#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "asvcpp/backend/evaluation.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/feature_source.h"
#include "asvcpp/data/utterance_list.h"
#include "asvcpp/db/database.h"
#include "asvcpp/features/kaldi_feature_source.h"
#include "asvcpp/train/eer_stopper.h"
#include "asvcpp/train/precision.h"
#include "asvcpp/train/trainer.h"
#include "recipes/shared/recipe_stages.h"
#include "recipes/shared/xvector/data_selection.h"
#include "recipes/shared/xvector/xvector_settings.h"

namespace asv::recipes::xvector {
namespace stdfs = std::filesystem;
using backend::Embeddings;

namespace {

// What rank 0 needs for the evaluations during training.
struct TrainingEvaluation {
  std::shared_ptr<features::KaldiFeatureSource> plda;
  std::vector<std::string> plda_speakers;
  std::shared_ptr<features::KaldiFeatureSource> trials;
  std::vector<std::pair<std::string, stdfs::path>> lists;
};

TrainingEvaluation PrepareEvaluation(recipe::RunContext& context) {
  auto& s = SettingsOf(context);
  const auto& r = s.recipe();
  TrainingEvaluation e;
  e.lists = backend::TrialListFiles(r.training_trial_lists, r.trial_lists,
                                    data::ListFolder(context.feature_and_list_folder(), r.trial_dataset), false);
  if (e.lists.empty()) {
    ASV_LOG(Warning, "none of recipe.training_trial_lists exists: no EER evaluation during training");
    return e;
  }
  const auto plda_data = LoadSelectedData(context.feature_and_list_folder(), r.EvaluationPldaDatasets(), r,
                                          "evaluation PLDA data");
  data::UtteranceList all;
  for (std::size_t i = 0; i < plda_data.ids.size(); ++i)
    all.utterances.push_back({plda_data.ids[i], plda_data.speakers[i]});
  const auto chosen = data::SelectRandomSpeakers(all, static_cast<std::size_t>(r.plda_speakers_during_training),
                                                 static_cast<std::uint64_t>(r.seed));
  std::vector<std::string> ids;
  for (const auto& u : chosen.utterances) {
    ids.push_back(u.id);
    e.plda_speakers.push_back(u.speaker);
  }
  e.plda = std::make_shared<features::KaldiFeatureSource>(ids, plda_data.stored, s.common().features);

  const auto trial_data = features::LoadDatasets(context.feature_and_list_folder(), {r.trial_dataset});
  const auto trial_ids = backend::TrialSides(e.lists);
  e.trials = std::make_shared<features::KaldiFeatureSource>(trial_ids, trial_data.stored, s.common().features);
  ASV_LOG(Info, "evaluation during training: {} PLDA utterances of {} speakers, {} trial utterances, lists {}",
          ids.size(), chosen.utterances.empty() ? 0 : data::Speakers(chosen).size(), trial_ids.size(),
          fmt::format("{}", fmt::join(r.training_trial_lists, ", ")));
  return e;
}

}  // namespace

void RunTraining(recipe::RunContext& context) {
  auto& s = SettingsOf(context);
  const auto& r = s.recipe();
  const auto& network = s.common().network;

  // Training data with ASVtorch's filters.
  const auto data = LoadSelectedData(context.feature_and_list_folder(), r.training_datasets, r, "training data");
  auto all = std::make_shared<features::KaldiFeatureSource>(data.ids, data.stored, s.common().features);
  std::map<std::string, int> per_speaker;
  std::vector<int> long_enough;
  for (int u = 0; u < all->NumUtterances(); ++u) {
    if (all->NumFrames(u) >= r.min_speech_frames) {
      long_enough.push_back(u);
      ++per_speaker[data.speakers[static_cast<std::size_t>(u)]];
    }
  }
  std::vector<int> kept;
  std::vector<std::string> kept_speakers;
  for (int u : long_enough) {
    const auto& spk = data.speakers[static_cast<std::size_t>(u)];
    if (per_speaker[spk] >= r.min_utterances_per_speaker) {
      kept.push_back(u);
      kept_speakers.push_back(spk);
    }
  }
  int n_speakers = 0;
  const auto labels = train::SpeakerLabels(kept_speakers, &n_speakers);
  ASV_LOG0(Info,
           "training data: {} utterances of {} speakers ({} dropped with fewer than {} speech frames, {} of "
           "speakers with fewer than {} such utterances)",
           kept.size(), n_speakers, data.ids.size() - long_enough.size(), r.min_speech_frames,
           long_enough.size() - kept.size(), r.min_utterances_per_speaker);
  if (n_speakers < 2) {
    throw DataError(
        fmt::format("too little training data in {}: {} usable speakers (lower recipe.min_speech_frames "
                    "or recipe.min_utterances_per_speaker, or add data)",
                    fmt::format("{}", fmt::join(r.training_datasets, ", ")), n_speakers));
  }
  train::TrainingData training{std::make_shared<data::SubsetFeatureSource>(all, kept), labels, n_speakers};

  const stdfs::path networks = context.system_folder() / "networks";
  train::TrainerOptions options;
  options.network = network;
  options.dataloader_workers = s.common().computing.network_dataloader_workers;
  options.device = context.device();
  options.precision = network.precision;
  train::ApplyMathModes(s.common().computing.allow_tf32);
  options.checkpoint_folder = networks;
  options.log_folder = networks / "logs";
  options.seed = static_cast<std::uint64_t>(r.seed);
  ASV_LOG0(Info, "training {} on {} ({} speakers, feature dim {})", network.ArchitectureName(), options.device,
           n_speakers, training.source->FeatDim());
  train::Trainer trainer(options, training, context.reducer());

  TrainingEvaluation evaluation;
  const stdfs::path stopper_file = networks / "eer_stopper.json";
  train::EerStopper stopper(network.eer_stop_epochs, network.minimum_improvement);
  if (context.is_rank0()) {
    evaluation = PrepareEvaluation(context);
    if (network.resume_epoch > 0 && stdfs::exists(stopper_file)) stopper.Load(stopper_file);
  }
  auto extraction = train::ExtractionOptions::FromSettings(network, s.common().computing.network_dataloader_workers);
  extraction.skip_empty = true;

  auto on_epoch = [&](const train::EpochStats& stats) {
    if (!context.is_rank0()) return train::EpochAction::kContinue;
    shared::RecordTrainingEpoch(context, stats);
    if (!stats.evaluation_due || !evaluation.plda) return train::EpochAction::kContinue;

    const auto extract = [&](const data::FeatureSource& source, const char* what) {
      return shared::ExtractAll(
          source, what, [&](const std::vector<int>& u) { return trainer.ExtractEmbeddings(source, u, extraction); },
          0.01);
    };
    const auto plda = extract(*evaluation.plda, "evaluation PLDA");
    std::map<std::string, std::string> speaker_of;
    for (std::size_t i = 0; i < evaluation.plda->ids().size(); ++i) {
      speaker_of[evaluation.plda->ids()[i]] = evaluation.plda_speakers[i];
    }
    const auto trial = extract(*evaluation.trials, "evaluation trial");
    const double mean_eer =
        shared::ScoreDuringTraining(context, plda, speaker_of, trial, evaluation.lists, stats.epoch);
    const bool stop = stopper.Update(mean_eer);
    stopper.Save(stopper_file);
    if (stop) {
      ASV_LOG(Info, "stopping: mean EER has not improved by {} for {} evaluations (best {:.4f})",
              network.minimum_improvement, network.eer_stop_epochs, stopper.best());
      return train::EpochAction::kStop;
    }
    return train::EpochAction::kContinue;
  };

  const auto result = trainer.Train(on_epoch);
  const char* reason = "network.max_epochs reached";
  switch (result.stop_reason) {
    case train::StopReason::kMaxEpochs:
      break;
    case train::StopReason::kLearningRate:
      reason = "network.max_consecutive_lr_updates learning-rate halvings";
      break;
    case train::StopReason::kCallback:
      reason = "no EER improvement (network.eer_stop_epochs)";
      break;
    case train::StopReason::kEvaluateOnly:
      reason = "evaluation only (negative network.resume_epoch)";
      break;
  }
  ASV_LOG0(Info, "training ended at epoch {}: {}", result.last_epoch, reason);
}

}  // namespace asv::recipes::xvector
