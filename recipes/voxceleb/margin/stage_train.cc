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
#include "asvcpp/train/model_init.h"
#include "asvcpp/train/precision.h"
#include "asvcpp/train/step_schedules.h"
#include "asvcpp/train/trainer.h"
#include "asvcpp/train/training_data.h"
#include "recipes/voxceleb/margin/margin_data.h"
#include "recipes/voxceleb/margin/margin_model.h"
#include "recipes/voxceleb/margin/margin_recipe.h"
#include "recipes/shared/recipe_stages.h"

namespace asv::recipes::voxceleb_margin {
namespace stdfs = std::filesystem;
using backend::Embeddings;

namespace {

std::shared_ptr<const augment::NoiseBank> NoiseBankOf(const MarginSettings& s, int sample_rate) {
  if (s.recipe().aug_prob <= 0) return nullptr;
  const auto& paths = s.common().paths;
  const stdfs::path rirs = paths.rirs_folder.empty() ? stdfs::path(paths.kaldi_recipe_folder) / "RIRS_NOISES"
                                                     : stdfs::path(paths.rirs_folder);
  return std::make_shared<const augment::NoiseBank>(augment::ScanMusan(paths.musan_folder),
                                                    augment::SimulatedRoomRirs(rirs), sample_rate);
}

}  // namespace

std::string AveragedModelName() {
  return "avg_model.pt";
}

std::shared_ptr<nnet::SpeakerNet> MakeNetwork(const MarginSettings& settings, std::int64_t feat_dim,
                                              std::int64_t classes, const std::string& device) {
  const auto& r = settings.recipe();
  nnet::MarginHeadOptions head;
  head.type = nnet::ParseHeadType(r.head);
  head.scale = r.scale;
  head.easy_margin = r.easy_margin;
  head.margin = r.initial_margin;
  const bool channels_last = r.channels_last && device.rfind("cuda", 0) == 0;
  return nnet::MakeMarginNet(r.model, feat_dim, r.embedding_size, classes, head, r.channels.value_or(0), channels_last)
      .ptr();
}

namespace {

// One training run of the recipe: the training of stage 5 or the fine-tuning of stage 7.
struct Phase {
  const char* what = "training";
  stdfs::path folder;       // checkpoints epoch.N.pt, logs, the EER stopper's state
  int epochs = 1;           // epochs of this phase (the trainer's max_epochs)
  int resume_epoch = 0;     // network.resume_epoch's meaning, for this phase's checkpoints
  int epoch_offset = 0;     // added to the epochs recorded in the database
  int minibatch_size = 1;   // over all ranks
  int num_frames = 200;
  bool speed_perturb = true;
  train::ExponentialLrOptions lr;
  train::MarginScheduleOptions margin;
  stdfs::path init_model;  // empty: random initialisation (or `pretrained`)
  stdfs::path pretrained;  // a WeSpeaker model directory to start from (recipe.pretrained_model)
  int epochs_per_evaluation = 1;
  bool early_stopping = true;
  std::string memory_advice;  // the settings to lower when a minibatch does not fit
};

void TrainPhase(recipe::RunContext& context, const Phase& phase) {
  auto& s = SettingsOf(context);
  const auto& r = s.recipe();
  const auto& network = s.common().network;

  if (network.optimizer == train::OptimizerKind::kSgd && r.nesterov && network.momentum <= 0) {
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
  data.sampler.batch_size = phase.minibatch_size / world_size;
  data.sampler.world_size = world_size;
  data.sampler.rank = context.rank();
  data.sampler.sample_rate = store->sample_rate();
  data.sampler.num_frames = phase.num_frames;
  data.sampler.frame_length_ms = r.frame_length;
  data.sampler.frame_shift_ms = r.frame_shift;
  data.sampler.min_num_frames = r.min_num_frames;
  data.sampler.max_num_frames = r.max_num_frames;
  data.sampler.speed_perturb = phase.speed_perturb;
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
           "{} data: {} utterances of {} speakers ({} with a speaker, {} after the {}-{} frame filter), {} "
           "classes{}, {} batches of {} segments of {} frames per rank and epoch",
           phase.what, store->NumUtterances(), n_speakers, labelled.size(), batches->sampler().NumKept(),
           r.min_num_frames, r.max_num_frames, classes, phase.speed_perturb ? " (speed perturbation)" : "",
           batches->sampler().BatchesPerEpoch(), data.sampler.batch_size, phase.num_frames);

  // Whole utterances (fbank without dither) for the trainer's validation split and extraction.
  train::TrainingData training{std::make_shared<features::PcmFbankSource>(store, labelled, FbankOf(s)), labels,
                               n_speakers};

  train::TrainerOptions options;
  options.network = network;
  options.network.max_epochs = phase.epochs;
  options.network.resume_epoch = phase.resume_epoch;
  options.network.minibatch_size = phase.minibatch_size;
  options.network.initial_learning_rate = phase.lr.initial_lr;
  options.network.epochs_per_train_call = phase.epochs_per_evaluation;
  const std::string device = context.device();
  options.make_net = [&s, &phase, device](std::int64_t feat_dim, std::int64_t n) {
    auto net = MakeNetwork(s, feat_dim, n, device);
    if (!phase.init_model.empty()) {
      train::InitFromCheckpoint(
          phase.init_model, *net,
          [&s](std::int64_t d, std::int64_t c) -> std::shared_ptr<torch::nn::Module> {
            return MakeNetwork(s, d, c, "cpu");
          },
          "projection.");
    } else if (!phase.pretrained.empty()) {
      InitFromPretrained(phase.pretrained, s, *net);
    }
    return net;
  };
  options.n_classes = classes;
  options.batches = batches;
  options.device_transform = segments::MakeSegmentTransform(data);
  options.dataloader_workers = s.common().computing.network_dataloader_workers;
  options.device = context.device();
  options.memory_advice = phase.memory_advice;
  options.precision = network.precision;
  train::ApplyMathModes(s.common().computing.allow_tf32);
  options.checkpoint_folder = phase.folder;
  options.log_folder = phase.folder / "logs";
  options.seed = static_cast<std::uint64_t>(r.seed);
  options.loss_rule = false;
  options.nesterov = r.nesterov;
  train::ExponentialLrOptions lr = phase.lr;
  lr.num_epochs = phase.epochs;
  lr.scale_ratio = train::ScaleRatio(world_size, data.sampler.batch_size);
  options.step_schedule = train::WeSpeakerStepSchedule(lr, r.head == "softmax" ? nullptr : &phase.margin);
  if (!phase.init_model.empty()) ASV_LOG0(Info, "{} starts from {}", phase.what, phase.init_model.string());
  if (!phase.pretrained.empty()) {
    ASV_LOG0(Info, "{} starts from the WeSpeaker model {} (recipe.pretrained_model)", phase.what,
             phase.pretrained.string());
  }
  ASV_LOG0(Info, "{} of {} with {} (scale {}) on {}", phase.what, r.model, r.head, r.scale, options.device);
  train::Trainer trainer(options, training, context.reducer());

  // Rank 0 scores the training trial lists with the back end of stage 9.
  std::vector<std::pair<std::string, stdfs::path>> lists;
  std::shared_ptr<features::PcmFbankSource> trial_source;
  LabelledSource backend_data;
  const stdfs::path stopper_file = phase.folder / "eer_stopper.json";
  train::EerStopper stopper(network.eer_stop_epochs, network.minimum_improvement);
  if (context.is_rank0()) {
    lists = backend::TrialListFiles(r.training_trial_lists, r.trial_lists,
                                    data::ListFolder(context.feature_and_list_folder(), r.trial_dataset), false);
    if (lists.empty()) {
      ASV_LOG(Warning, "none of recipe.training_trial_lists exists: no EER evaluation during {}", phase.what);
    } else {
      trial_source = TrialUtterances(context, lists);
      backend_data = BackendUtterances(context);
    }
    if (phase.resume_epoch > 0 && stdfs::exists(stopper_file)) stopper.Load(stopper_file);
  }
  auto extraction = train::ExtractionOptions::FromSettings(network, s.common().computing.network_dataloader_workers);
  extraction.skip_empty = true;

  auto on_epoch = [&](const train::EpochStats& epoch_stats) {
    if (!context.is_rank0()) return train::EpochAction::kContinue;
    train::EpochStats stats = epoch_stats;
    stats.epoch += phase.epoch_offset;
    shared::RecordTrainingEpoch(context, stats);
    const bool last = epoch_stats.epoch == phase.epochs;
    if (!(stats.evaluation_due || (last && !phase.early_stopping)) || !trial_source) {
      return train::EpochAction::kContinue;
    }

    const auto extract = [&](const data::FeatureSource& source, const char* what) {
      return shared::ExtractAll(
          source, what, [&](const std::vector<int>& u) { return trainer.ExtractEmbeddings(source, u, extraction); },
          FbankOf(s).frame_opts.frame_shift_ms / 1000.0);
    };
    const auto reference = extract(*backend_data.source, "back-end");
    std::map<std::string, std::string> speaker_of;
    const auto ids = backend_data.source->Ids();
    for (std::size_t i = 0; i < ids.size(); ++i) speaker_of[ids[i]] = backend_data.speakers[i];
    const auto trial = extract(*trial_source, "trial");
    const double mean_eer = shared::ScoreDuringTraining(context, reference, speaker_of, trial, lists, stats.epoch);
    if (!phase.early_stopping) return train::EpochAction::kContinue;
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
  ASV_LOG0(Info, "{} ended at epoch {} ({})", phase.what, result.last_epoch,
           result.stop_reason == train::StopReason::kCallback       ? "no EER improvement (network.eer_stop_epochs)"
           : result.stop_reason == train::StopReason::kEvaluateOnly ? "evaluation only (a negative resume epoch)"
                                                                    : "its last epoch reached");
}

// Averages the last `count` contiguous checkpoints of `folder` into folder/avg_model.pt.
void Average(recipe::RunContext& context, const stdfs::path& folder, int count, const char* stage) {
  auto& s = SettingsOf(context);
  const int last = shared::LastTrainedEpoch(context, folder);
  if (last <= 0) {
    throw DataError(fmt::format("{}: no network checkpoint epoch.1.pt: run {} first", folder.string(), stage));
  }
  count = std::min(count, last);
  const auto inputs = train::LastCheckpoints(folder, last, count);
  const auto meta = train::ReadCheckpointMeta(inputs.front());
  auto net = MakeNetwork(s, meta.feat_dim, meta.n_speakers, "cpu");
  const stdfs::path output = folder / AveragedModelName();
  train::AverageCheckpoints(inputs, *net, output);
  shared::RecordCheckpointsUsed(context, inputs);
  ASV_LOG(Info, "averaged epochs {}-{} into {}", last - count + 1, last, output.string());
  context.RecordArtifact(output, "model");
}

}  // namespace

stdfs::path TrainingFolder(const recipe::RunContext& context) {
  return context.system_folder() / "networks";
}

stdfs::path FineTuningFolder(const recipe::RunContext& context) {
  return context.system_folder() / "large_margin";
}

stdfs::path ModelForExtraction(const MarginSettings& settings, const recipe::RunContext& context) {
  const auto& r = settings.recipe();
  if (r.selected_epoch) return train::CheckpointPath(TrainingFolder(context), *r.selected_epoch);
  if (r.PretrainedIsExtracted()) return r.pretrained_model;
  if (r.lm_epochs > 0) return FineTuningFolder(context) / AveragedModelName();
  return TrainingFolder(context) / AveragedModelName();
}

void RunTraining(recipe::RunContext& context) {
  const auto& s = SettingsOf(context);
  const auto& r = s.recipe();
  const auto& network = s.common().network;
  Phase phase;
  phase.what = "training";
  phase.folder = TrainingFolder(context);
  phase.epochs = network.max_epochs;
  phase.resume_epoch = network.resume_epoch;
  phase.minibatch_size = network.minibatch_size;
  phase.num_frames = r.num_frames;
  phase.memory_advice = "lower network.minibatch_size or recipe.num_frames";
  phase.speed_perturb = r.speed_perturb;
  phase.lr.initial_lr = network.initial_learning_rate;
  phase.lr.final_lr = r.final_learning_rate;
  phase.lr.warm_up_epochs = r.warm_up_epochs;
  phase.margin.initial_margin = r.initial_margin;
  phase.margin.final_margin = r.final_margin;
  phase.margin.increase_start_epoch = r.increase_start_epoch;
  phase.margin.fix_start_epoch = r.fix_start_epoch;
  phase.margin.increase = train::ParseMarginIncrease(r.increase_type);
  phase.epochs_per_evaluation = network.epochs_per_train_call;
  phase.early_stopping = true;
  if (r.PretrainedStartsTraining()) phase.pretrained = r.pretrained_model;
  TrainPhase(context, phase);
}

void RunAveraging(recipe::RunContext& context) {
  Average(context, TrainingFolder(context), SettingsOf(context).recipe().num_average, "stage 5");
}

void RunFineTuning(recipe::RunContext& context) {
  const auto& s = SettingsOf(context);
  const auto& r = s.recipe();
  if (r.lm_epochs == 0) {
    ASV_LOG0(Info, "recipe.lm_epochs = 0: no large-margin fine-tuning; stage 8 uses {}",
             (TrainingFolder(context) / AveragedModelName()).string());
    return;
  }
  Phase phase;
  phase.what = "large-margin fine-tuning";
  phase.folder = FineTuningFolder(context);
  if (r.PretrainedStartsFineTuning()) {
    phase.pretrained = r.pretrained_model;
  } else {
    phase.init_model = TrainingFolder(context) / AveragedModelName();
    if (!stdfs::exists(phase.init_model)) {
      throw DataError(fmt::format("{} does not exist: average the trained checkpoints first (stage 6)",
                                  phase.init_model.string()));
    }
  }
  phase.epochs = r.lm_epochs;
  phase.resume_epoch = r.lm_resume_epoch;
  // Recorded after the epochs of the training that the averaged model ends: the last epoch it
  // averaged, from its own metadata (the stage-5 checkpoints may be gone or have gaps; counting
  // the files would number fine-tuning epochs over training epochs in the database).
  phase.epoch_offset = phase.init_model.empty() ? 0 : std::max(0, train::ReadCheckpointMeta(phase.init_model).epoch);
  phase.minibatch_size = r.lm_minibatch_size;
  phase.num_frames = r.lm_num_frames;
  phase.memory_advice = "lower recipe.lm_minibatch_size or recipe.lm_num_frames";
  phase.speed_perturb = r.lm_speed_perturb;
  phase.lr.initial_lr = r.lm_initial_learning_rate;
  phase.lr.final_lr = r.lm_final_learning_rate;
  phase.lr.warm_up_epochs = r.lm_warm_up_epochs;
  phase.margin.initial_margin = r.lm_margin;
  phase.margin.final_margin = r.lm_margin;
  phase.margin.increase_start_epoch = 1;
  phase.margin.fix_start_epoch = 1;
  phase.epochs_per_evaluation = s.common().network.epochs_per_train_call;
  phase.early_stopping = false;
  TrainPhase(context, phase);
  if (context.is_rank0()) Average(context, phase.folder, r.lm_num_average, "stage 7");
}

}  // namespace asv::recipes::voxceleb_margin
