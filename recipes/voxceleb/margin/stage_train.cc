#include "recipes/voxceleb/margin/stage_train.h"

#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "asvcpp/augment/noise_sets.h"
#include "asvcpp/augment/segment_draw.h"
#include "asvcpp/backend/evaluation.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/db/database.h"
#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/recipe/run_context.h"
#include "asvcpp/segments/segment_training.h"
#include "asvcpp/train/checkpoint.h"
#include "asvcpp/train/checkpoint_io.h"
#include "asvcpp/train/eer_stopper.h"
#include "asvcpp/train/exponential_lr.h"
#include "asvcpp/train/model_average.h"
#include "asvcpp/train/precision.h"
#include "asvcpp/train/step_schedules.h"
#include "asvcpp/train/trainer.h"
#include "asvcpp/train/training_data.h"
#include "recipes/voxceleb/margin/margin_data.h"
#include "recipes/voxceleb/margin/margin_recipe.h"
#include "recipes/voxceleb/shared/voxceleb_stages.h"

namespace asv::recipes::voxceleb_margin {
namespace fs = std::filesystem;
using backend::Embeddings;

namespace {

std::shared_ptr<const augment::NoiseBank> NoiseBankOf(const MarginSettings& s, int sample_rate) {
  if (s.recipe().aug_prob <= 0) return nullptr;
  const auto& paths = s.common().paths;
  const fs::path rirs = paths.rirs_folder.empty() ? fs::path(paths.kaldi_recipe_folder) / "RIRS_NOISES"
                                                  : fs::path(paths.rirs_folder);
  return std::make_shared<const augment::NoiseBank>(augment::ScanMusan(paths.musan_folder),
                                                    augment::SimulatedRoomRirs(rirs), sample_rate);
}

}  // namespace

std::string AveragedModelName() {
  return "avg_model.pt";
}

std::shared_ptr<nnet::SpeakerNet> MakeNetwork(const MarginSettings& settings, std::int64_t feat_dim,
                                              std::int64_t classes) {
  const auto& r = settings.recipe();
  nnet::MarginHeadOptions head;
  head.type = nnet::ParseHeadType(r.head);
  head.scale = r.scale;
  head.easy_margin = r.easy_margin;
  head.margin = r.initial_margin;
  return nnet::MakeMarginNet(r.model, feat_dim, r.embedding_size, classes, head, r.channels.value_or(0)).ptr();
}

void RunTraining(recipe::RunContext& context) {
  auto& s = SettingsOf(context);
  const auto& r = s.recipe();
  const auto& network = s.common().network;

  if (r.nesterov && network.momentum <= 0) {
    throw ConfigError(fmt::format("recipe.nesterov needs network.momentum > 0 (it is {})", network.momentum));
  }
  // Training utterances: the store's utterances with a speaker in utt2spk.
  const auto store = OpenStore(context, r.training_dataset);
  const auto store_speakers = StoreSpeakers(context, r.training_dataset, *store);
  std::vector<std::size_t> labelled;
  std::vector<std::string> labelled_speakers;
  for (std::size_t i = 0; i < store_speakers.size(); ++i) {
    if (store_speakers[i].empty()) continue;
    labelled.push_back(i);
    labelled_speakers.push_back(store_speakers[i]);
  }
  int n_speakers = 0;
  const auto labels = train::SpeakerLabels(labelled_speakers, &n_speakers);
  if (n_speakers < 2) {
    throw DataError(fmt::format("too little training data in {}: {} speakers with audio in its PCM store",
                                r.training_dataset, n_speakers));
  }
  std::vector<train::SegmentUtterance> utterances;
  for (std::size_t k = 0; k < labelled.size(); ++k) {
    utterances.push_back({static_cast<std::int64_t>(labelled[k]), store->NumSamples(labelled[k]), labels[k]});
  }

  segments::SegmentTrainingOptions data;
  const int world_size = context.world_size();
  data.sampler.batch_size = network.minibatch_size / world_size;
  data.sampler.world_size = world_size;
  data.sampler.rank = context.rank();
  data.sampler.sample_rate = store->sample_rate();
  data.sampler.num_frames = r.num_frames;
  data.sampler.min_num_frames = r.min_num_frames;
  data.sampler.max_num_frames = r.max_num_frames;
  data.sampler.speed_perturb = r.speed_perturb;
  data.sampler.seed = static_cast<std::uint64_t>(r.seed);
  data.augmentation.aug_prob = r.aug_prob;
  data.fbank = FbankOf(s);
  data.dither = static_cast<float>(r.dither);
  data.spec_augment = r.spec_augment;
  data.seed = static_cast<std::uint64_t>(r.seed);
  auto batches = std::make_shared<segments::SegmentBatchSource>(store, std::move(utterances), n_speakers, data,
                                                                NoiseBankOf(s, store->sample_rate()));
  const int classes = batches->NumLabels();
  ASV_LOG0(Info,
           "training data: {} utterances of {} speakers ({} with a speaker, {} after the {}-{} frame filter), {} "
           "classes{}, {} batches of {} segments per rank and epoch",
           store->NumUtterances(), n_speakers, labelled.size(), batches->sampler().NumKept(), r.min_num_frames,
           r.max_num_frames, classes, r.speed_perturb ? " (speed perturbation)" : "",
           batches->sampler().BatchesPerEpoch(), data.sampler.batch_size);

  // Whole utterances (fbank without dither) for the trainer's validation split and extraction.
  train::TrainingData training{std::make_shared<features::PcmFbankSource>(store, labelled, FbankOf(s)), labels,
                               n_speakers};

  const fs::path networks = context.system_folder() / "networks";
  train::TrainerOptions options;
  options.network = network;
  options.make_net = [&s](std::int64_t feat_dim, std::int64_t n) { return MakeNetwork(s, feat_dim, n); };
  options.n_classes = classes;
  options.batches = batches;
  options.device_transform = segments::MakeSegmentTransform(data);
  options.dataloader_workers = s.common().computing.network_dataloader_workers;
  options.device = context.device();
  options.precision = network.precision;
  train::ApplyMathModes(s.common().computing.allow_tf32);
  options.checkpoint_folder = networks;
  options.log_folder = networks / "logs";
  options.seed = static_cast<std::uint64_t>(r.seed);
  options.loss_rule = false;
  options.nesterov = r.nesterov;
  train::ExponentialLrOptions lr;
  lr.initial_lr = network.initial_learning_rate;
  lr.final_lr = r.final_learning_rate;
  lr.num_epochs = network.max_epochs;
  lr.warm_up_epochs = r.warm_up_epochs;
  lr.scale_ratio = train::ScaleRatio(world_size, data.sampler.batch_size);
  train::MarginScheduleOptions margin;
  margin.initial_margin = r.initial_margin;
  margin.final_margin = r.final_margin;
  margin.increase_start_epoch = r.increase_start_epoch;
  margin.fix_start_epoch = r.fix_start_epoch;
  margin.increase = train::ParseMarginIncrease(r.increase_type);
  options.step_schedule = train::WeSpeakerStepSchedule(lr, r.head == "softmax" ? nullptr : &margin);
  ASV_LOG0(Info, "training {} with {} (scale {}) on {}", r.model, r.head, r.scale, options.device);
  train::Trainer trainer(options, training, context.reducer());

  // Rank 0 scores the training trial lists with the back end of stage 9.
  std::vector<std::pair<std::string, fs::path>> lists;
  std::shared_ptr<features::PcmFbankSource> trial_source;
  LabelledSource backend_data;
  const fs::path stopper_file = networks / "eer_stopper.json";
  train::EerStopper stopper(network.eer_stop_epochs, network.minimum_improvement);
  if (context.is_rank0()) {
    lists = backend::TrialListFiles(r.training_trial_lists, r.trial_lists,
                                    data::ListFolder(context.feature_and_list_folder(), r.trial_dataset), false);
    if (lists.empty()) {
      ASV_LOG(Warning, "none of recipe.training_trial_lists exists: no EER evaluation during training");
    } else {
      trial_source = TrialUtterances(context, lists);
      backend_data = BackendUtterances(context);
    }
    if (network.resume_epoch > 0 && fs::exists(stopper_file)) stopper.Load(stopper_file);
  }
  auto extraction = train::ExtractionOptions::FromSettings(network, s.common().computing.network_dataloader_workers);
  extraction.skip_empty = true;

  auto on_epoch = [&](const train::EpochStats& stats) {
    if (!context.is_rank0()) return train::EpochAction::kContinue;
    voxceleb::RecordTrainingEpoch(context, stats);
    if (!stats.evaluation_due || !trial_source) return train::EpochAction::kContinue;

    const auto extract = [&](const data::FeatureSource& source, const char* what) {
      return voxceleb::ExtractAll(source, what, [&](const std::vector<int>& u) {
        return trainer.ExtractEmbeddings(source, u, extraction);
      });
    };
    const auto reference = extract(*backend_data.source, "back-end");
    std::map<std::string, std::string> speaker_of;
    const auto ids = backend_data.source->Ids();
    for (std::size_t i = 0; i < ids.size(); ++i) speaker_of[ids[i]] = backend_data.speakers[i];
    const auto trial = extract(*trial_source, "trial");
    const double mean_eer = voxceleb::ScoreDuringTraining(context, reference, speaker_of, trial, lists, stats.epoch);
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
  ASV_LOG0(Info, "training ended at epoch {} ({})", result.last_epoch,
           result.stop_reason == train::StopReason::kCallback       ? "no EER improvement (network.eer_stop_epochs)"
           : result.stop_reason == train::StopReason::kEvaluateOnly ? "evaluation only (negative network.resume_epoch)"
                                                                    : "network.max_epochs reached");
}

void RunAveraging(recipe::RunContext& context) {
  auto& s = SettingsOf(context);
  const fs::path networks = context.system_folder() / "networks";
  const int last = train::FindLastContiguousEpoch(networks);
  if (last <= 0) {
    throw DataError(fmt::format("{}: no network checkpoint epoch.1.pt: train first (stage 5)", networks.string()));
  }
  const int count = std::min(s.recipe().num_average, last);
  const auto inputs = train::LastCheckpoints(networks, last, count);
  const auto meta = train::ReadCheckpointMeta(inputs.front());
  auto net = MakeNetwork(s, meta.feat_dim, meta.n_speakers);
  const fs::path output = networks / AveragedModelName();
  train::AverageCheckpoints(inputs, *net, output);
  ASV_LOG(Info, "averaged epochs {}-{} into {}", last - count + 1, last, output.string());
  context.RecordArtifact(output, "model");
}

}  // namespace asv::recipes::voxceleb_margin
