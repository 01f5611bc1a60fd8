#include "asvcpp/train/trainer.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include "asvcpp/base/checksum.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/nnet/ecapa_tdnn.h"
#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/train/batch_source.h"
#include "asvcpp/train/checkpoint_io.h"
#include "asvcpp/train/device_batch.h"
#include "asvcpp/train/embedding_extractor.h"
#include "asvcpp/train/sgd.h"
#include "asvcpp/train/step_schedules.h"
#include "tests/asvcpp/train/synthetic_data.h"

namespace asv::train {
namespace {

namespace stdfs = std::filesystem;

stdfs::path TempFolder(const std::string& name) {
  auto p = stdfs::temp_directory_path() / ("asv_trainer_test_" + name + "_" + std::to_string(::getpid()));
  stdfs::remove_all(p);
  stdfs::create_directories(p);
  return p;
}

// A small StandardNet on 8 Gaussian-blob speakers: 8 minibatches of 16 clips per epoch.
TrainerOptions SmallOptions(const stdfs::path& folder) {
  TrainerOptions o = testing::SmallTrainerOptions();
  o.network.max_epochs = 4;
  o.dataloader_workers = 2;
  o.checkpoint_folder = folder.empty() ? folder : folder / "networks";
  o.log_folder = folder.empty() ? folder : folder / "logs";
  return o;
}

std::vector<std::pair<std::string, torch::Tensor>> State(const torch::nn::Module& m) {
  std::vector<std::pair<std::string, torch::Tensor>> s;
  for (const auto& p : m.named_parameters()) s.emplace_back(p.key(), p.value().detach().clone());
  for (const auto& b : m.named_buffers()) s.emplace_back(b.key(), b.value().detach().clone());
  return s;
}

void ExpectSameState(const torch::nn::Module& a, const torch::nn::Module& b) {
  const auto sa = State(a);
  const auto sb = State(b);
  ASSERT_EQ(sa.size(), sb.size());
  for (std::size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].first, sb[i].first);
    EXPECT_TRUE(torch::equal(sa[i].second, sb[i].second)) << sa[i].first;
  }
}

TEST(TrainerTest, TrainingReducesLossAndReachesHighAccuracy) {
  const auto dir = TempFolder("learn");
  Trainer trainer(SmallOptions(dir), testing::MakeSyntheticData({}));
  const auto result = trainer.Train();
  ASSERT_EQ(result.epochs.size(), 4u);
  EXPECT_EQ(result.stop_reason, StopReason::kMaxEpochs);
  EXPECT_EQ(result.last_epoch, 4);
  const auto& first = result.epochs.front();
  const auto& last = result.epochs.back();
  EXPECT_LT(last.loss, 0.5 * first.loss);
  EXPECT_GT(last.accuracy, 90.0);
  ASSERT_TRUE(last.validation.has_value());
  EXPECT_GE(last.validation->validation_accuracy, 90.0);
  EXPECT_GE(last.validation->subset_accuracy, 90.0);
  EXPECT_EQ(last.validation->validation_utterances, 16);
  for (const auto& e : result.epochs) {
    EXPECT_EQ(e.batches, 8);
    EXPECT_EQ(e.clips, 128);
    EXPECT_GE(e.frames, 128 * 20);
    EXPECT_LE(e.frames, 128 * 40);
    EXPECT_GT(e.frames_per_second, 0);
    EXPECT_GE(e.data_wait_fraction, 0);
    EXPECT_LE(e.data_wait_fraction, 1);
    EXPECT_TRUE(stdfs::exists(e.checkpoint));
  }
  EXPECT_EQ(FindLastEpoch(dir / "networks"), 4);
  EXPECT_TRUE(stdfs::exists(dir / "logs" / "epoch.4.log"));
  stdfs::remove_all(dir);
}

// A small ECAPA-TDNN (32 channels, no global context) with an AAM head (margin 0: a scaled
// cosine softmax), fed [batch, frames, feat_dim] by the trainer.
std::shared_ptr<nnet::SpeakerNet> SmallMarginNet(std::int64_t feat_dim, std::int64_t n_speakers) {
  nnet::EcapaTdnnOptions o;
  o.channels = 32;
  o.feat_dim = feat_dim;
  o.embed_dim = 16;
  o.global_context = false;
  auto model = nnet::EcapaTdnn(o);
  nnet::SpeakerNetInfo info;
  info.architecture = "SmallEcapa";
  info.feat_dim = feat_dim;
  info.n_speakers = n_speakers;
  info.embedding_size = 16;
  info.layout = nnet::FeatureLayout::kFramesFirst;
  nnet::MarginHeadOptions head;
  head.embed_dim = 16;
  head.num_classes = n_speakers;
  head.scale = 16;
  return nnet::MarginNet(model.ptr(), [model](const torch::Tensor& x) mutable { return model->forward(x); }, info,
                         nnet::MakeMarginHead(head))
      .ptr();
}

// The same loop trains an embedding model with a margin head: it learns, its checkpoints resume
// exactly, and the extractor rebuilds it from a checkpoint and embeds whole utterances.
TEST(TrainerTest, TrainsAMarginNetworkInTheSameLoop) {
  const auto dir = TempFolder("margin");
  const auto data = testing::MakeSyntheticData({});
  auto options = SmallOptions(dir);
  options.make_net = SmallMarginNet;
  options.network.max_epochs = 3;
  Trainer trainer(options, data);
  EXPECT_EQ(trainer.net().info().architecture, "SmallEcapa");
  const auto result = trainer.Train();
  ASSERT_EQ(result.epochs.size(), 3u);
  EXPECT_LT(result.epochs.back().loss, 0.7 * result.epochs.front().loss);
  EXPECT_GT(result.epochs.back().accuracy, 80.0);
  EXPECT_EQ(ReadCheckpointMeta(dir / "networks" / "epoch.3.pt").architecture, "SmallEcapa");

  auto resumed_options = options;
  resumed_options.network.resume_epoch = -3;
  Trainer resumed(resumed_options, data);
  resumed.Start();
  ExpectSameState(resumed.net(), trainer.net());

  const auto extractor = EmbeddingExtractor::FromCheckpoint(
      dir / "networks" / "epoch.3.pt",
      [](const std::string&, std::int64_t feat_dim, std::int64_t n_speakers, std::int64_t) {
        return SmallMarginNet(feat_dim, n_speakers);
      },
      "cpu");
  const std::vector<int> utterances{0, 1, 8};
  ExtractionOptions extraction;
  extraction.workers = 0;
  const auto embedded = extractor.Extract(*data.source, utterances, extraction);
  ASSERT_EQ(embedded.embeddings.rows(), 3);
  ASSERT_EQ(embedded.embeddings.cols(), 16);
  // Utterances 0 and 8 are of speaker 0, utterance 1 of speaker 1: cosine similarity ranks them.
  auto cosine = [&](std::int64_t a, std::int64_t b) {
    double ab = 0, aa = 0, bb = 0;
    for (std::int64_t k = 0; k < 16; ++k) {
      ab += embedded.embeddings(a, k) * embedded.embeddings(b, k);
      aa += embedded.embeddings(a, k) * embedded.embeddings(a, k);
      bb += embedded.embeddings(b, k) * embedded.embeddings(b, k);
    }
    return ab / std::sqrt(aa * bb);
  };
  EXPECT_GT(cosine(0, 2), cosine(0, 1));
  stdfs::remove_all(dir);
}

// WeSpeaker's per-step schedule drives the learning rate and the margin; ASVtorch's loss rule is
// off, so no epoch halves the rate or stops training.
TEST(TrainerTest, PerStepScheduleSetsLearningRateAndMargin) {
  auto options = SmallOptions({});
  options.make_net = SmallMarginNet;
  options.network.max_epochs = 4;
  options.network.validation_utterances = 0;
  options.loss_rule = false;
  options.nesterov = true;
  ExponentialLrOptions lr;
  lr.initial_lr = 0.2;
  lr.final_lr = 0.01;
  lr.num_epochs = 4;
  lr.warm_up_epochs = 1;
  MarginScheduleOptions margin;
  margin.final_margin = 0.2;
  margin.increase_start_epoch = 2;
  margin.fix_start_epoch = 3;
  options.step_schedule = WeSpeakerStepSchedule(lr, &margin);
  Trainer trainer(options, testing::MakeSyntheticData({}));
  EXPECT_TRUE(dynamic_cast<Sgd&>(trainer.optimizer()).nesterov());
  const auto result = trainer.Train();
  ASSERT_EQ(result.epochs.size(), 4u);
  EXPECT_EQ(result.stop_reason, StopReason::kMaxEpochs);
  const std::int64_t steps = result.epochs[0].batches;  // one process: every batch is a step
  lr.epoch_iter = steps;
  margin.epoch_iter = steps;
  for (const auto& e : result.epochs) {
    EXPECT_DOUBLE_EQ(e.learning_rate, ExponentialLrAt(lr, GlobalIteration(e.epoch, steps, 0))) << e.epoch;
    EXPECT_DOUBLE_EQ(e.next_learning_rate, ExponentialLrAt(lr, GlobalIteration(e.epoch, steps, steps - 1)));
    EXPECT_DOUBLE_EQ(e.margin, MarginAt(margin, GlobalIteration(e.epoch, steps, steps - 1))) << e.epoch;
    EXPECT_FALSE(e.lr.halve);
  }
  EXPECT_DOUBLE_EQ(result.epochs[0].margin, 0.0);
  EXPECT_GT(result.epochs[1].margin, 0.0);
  EXPECT_LT(result.epochs[1].margin, 0.2);
  EXPECT_DOUBLE_EQ(result.epochs[3].margin, 0.2);
  EXPECT_DOUBLE_EQ(trainer.net().margin(), 0.2);
}

// A batch source of the recipe's own (here: the clips, counting what is loaded) and a device
// transform (here: each clip repeated to twice its frames, speakers relabelled by a
// permutation): the trainer trains on what the transform returns.
class CountingClips : public BatchSource {
 public:
  explicit CountingClips(std::shared_ptr<ClipBatchSource> clips) : clips_(std::move(clips)) {}
  EpochBatches PlanEpoch(int epoch) override {
    epochs.push_back(epoch);
    return clips_->PlanEpoch(epoch);
  }
  HostBatch Load(std::size_t index) const override {
    ++loads;
    HostBatch batch = clips_->Load(index);
    batch.extra = static_cast<int>(index);
    return batch;
  }
  std::vector<int> epochs;
  mutable std::atomic<int> loads{0};

 private:
  std::shared_ptr<ClipBatchSource> clips_;
};

class RepeatAndRelabel : public DeviceBatchTransform {
 public:
  std::pair<torch::Tensor, torch::Tensor> Apply(HostBatch& batch, const torch::Device& device) override {
    EXPECT_TRUE(batch.extra.has_value());
    auto [x, y] = CopyFeatureBatch(batch, device);
    return {x.repeat({1, 1, 2}), (y + 3).remainder(8)};
  }
};

TEST(TrainerTest, TrainsOnWhatTheBatchSourceAndDeviceTransformGive) {
  const auto data = testing::MakeSyntheticData({});
  auto options = SmallOptions({});
  options.network.max_epochs = 4;
  options.network.validation_utterances = 0;
  std::vector<SamplerUtterance> utterances;
  std::vector<int> index;
  for (int u = 0; u < data.source->NumUtterances(); ++u) {
    utterances.push_back({data.speakers[static_cast<std::size_t>(u)], data.source->NumFrames(u)});
    index.push_back(u);
  }
  EpochSamplerOptions sampler;
  sampler.minibatch_size = options.network.minibatch_size;
  sampler.min_clip_size = options.network.min_clip_size;
  sampler.max_clip_size = options.network.max_clip_size;
  sampler.utts_per_speaker_in_epoch = options.network.utts_per_speaker_in_epoch;
  sampler.seed = options.seed;
  auto source =
      std::make_shared<CountingClips>(std::make_shared<ClipBatchSource>(data.source, utterances, index, sampler));
  options.batches = source;
  options.device_transform = std::make_shared<RepeatAndRelabel>();
  Trainer trainer(options, data);
  const auto result = trainer.Train();
  ASSERT_EQ(result.epochs.size(), 4u);
  EXPECT_EQ(source->epochs, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(source->loads.load(), 4 * 8);
  // The frames the network saw: every clip twice its 20-40 frames.
  for (const auto& e : result.epochs) {
    EXPECT_GE(e.frames, 128 * 40);
    EXPECT_LE(e.frames, 128 * 80);
  }
  // Accuracy is measured against the relabelled speakers, which the network learns.
  EXPECT_GT(result.epochs.back().accuracy, 90.0);
}

// Losses are read every few steps (StepReadings), but a divergence still names the minibatch
// whose loss was not finite: with a learning rate of 1e30 the first step is finite and the
// second is not, and the trainer reads both only at its progress line after batch 4.
TEST(TrainerTest, DivergenceNamesTheFirstMinibatchWithANonFiniteLoss) {
  auto options = SmallOptions({});
  options.network.initial_learning_rate = 1e30;
  ASSERT_EQ(options.network.print_interval, 4);
  Trainer trainer(options, testing::MakeSyntheticData({}));
  try {
    trainer.Train();
    FAIL() << "training with a learning rate of 1e30 did not diverge";
  } catch (const StageError& e) {
    EXPECT_NE(std::string(e.what()).find("training diverged: epoch 1, batch 2: loss is "), std::string::npos)
        << e.what();
  }
}

void ExpectResumeIsExact(OptimizerKind optimizer) {
  const auto straight_dir = TempFolder("straight");
  const auto split_dir = TempFolder("split");
  const auto data = testing::MakeSyntheticData({});

  auto straight_options = SmallOptions(straight_dir);
  straight_options.network.optimizer = optimizer;
  if (optimizer == OptimizerKind::kAdamW) straight_options.network.initial_learning_rate = 0.01;
  straight_options.network.max_epochs = 2;
  Trainer straight(straight_options, data);
  const auto straight_result = straight.Train();

  auto first_options = SmallOptions(split_dir);
  first_options.network = straight_options.network;
  first_options.network.max_epochs = 1;
  {
    Trainer first(first_options, data);
    first.Train();
  }
  auto second_options = first_options;
  second_options.network.max_epochs = 2;
  second_options.network.resume_epoch = 1;
  second_options.seed = 11;
  Trainer second(second_options, data);
  EXPECT_EQ(second.Start().load_epoch, 1);
  EXPECT_EQ(second.epoch(), 1);
  const auto second_result = second.Train();

  ASSERT_EQ(second_result.epochs.size(), 1u);
  EXPECT_EQ(second_result.epochs[0].epoch, 2);
  EXPECT_EQ(second_result.epochs[0].loss, straight_result.epochs[1].loss);
  EXPECT_EQ(second_result.epochs[0].accuracy, straight_result.epochs[1].accuracy);
  EXPECT_EQ(second.learning_rates(), straight.learning_rates());
  EXPECT_EQ(second.schedule().training_loss, straight.schedule().training_loss);
  EXPECT_EQ(second.schedule().consecutive_lr_updates, straight.schedule().consecutive_lr_updates);
  ExpectSameState(second.net(), straight.net());
  EXPECT_EQ(second.optimizer().name(), straight.optimizer().name());
  const auto a = second.optimizer().State();
  const auto b = straight.optimizer().State();
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].param + a[i].key, b[i].param + b[i].key);
    EXPECT_TRUE(torch::equal(a[i].value, b[i].value)) << a[i].param << " " << a[i].key;
  }
  stdfs::remove_all(straight_dir);
  stdfs::remove_all(split_dir);
}

TEST(TrainerTest, ResumeIsExact) {
  ExpectResumeIsExact(OptimizerKind::kSgd);
}

TEST(TrainerTest, ResumeIsExactWithAdamW) {
  ExpectResumeIsExact(OptimizerKind::kAdamW);
}

// A checkpoint of one optimizer does not resume with another.
TEST(TrainerTest, ResumingWithAnotherOptimizerIsAnError) {
  const auto dir = TempFolder("other_optimizer");
  const auto data = testing::MakeSyntheticData({});
  auto options = SmallOptions(dir);
  options.network.max_epochs = 1;
  {
    Trainer first(options, data);
    first.Train();
  }
  options.network.max_epochs = 2;
  options.network.resume_epoch = 1;
  options.network.optimizer = OptimizerKind::kAdamW;
  Trainer second(options, data);
  try {
    second.Start();
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("trained with SGD, cannot resume with AdamW"), std::string::npos) << e.what();
  }
  stdfs::remove_all(dir);
}

// The pre-flight step (largest minibatch shape, before the first epoch) changes nothing: same
// parameters, BatchNorm statistics, momentum and losses as training without it.
TEST(TrainerTest, PreflightLeavesTrainingUnchanged) {
  const auto data = testing::MakeSyntheticData({});
  auto options = SmallOptions({});
  options.network.max_epochs = 2;
  options.preflight = false;
  Trainer without(options, data);
  const auto r0 = without.Train();
  options.preflight = true;
  Trainer with(options, data);
  const auto r1 = with.Train();
  ASSERT_EQ(r0.epochs.size(), 2u);
  ASSERT_EQ(r1.epochs.size(), 2u);
  for (std::size_t e = 0; e < 2; ++e) EXPECT_EQ(r1.epochs[e].loss, r0.epochs[e].loss) << e;
  ExpectSameState(with.net(), without.net());
  const auto a = dynamic_cast<Sgd&>(with.optimizer()).MomentumBuffers();
  const auto b = dynamic_cast<Sgd&>(without.optimizer()).MomentumBuffers();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i].second, b[i].second)) << a[i].first;
}

// network.sync_batch_norm needs other ranks: in one process training is unchanged, bit for bit
// (the two-rank behaviour: GroupTest.SyncBatchNorm* in tests/asvcpp/distributed/process_group_test.cc).
TEST(TrainerTest, SyncBatchNormChangesNothingInOneProcess) {
  const auto data = testing::MakeSyntheticData({});
  auto options = SmallOptions({});
  options.network.max_epochs = 1;
  Trainer without(options, data);
  const auto r0 = without.Train();
  options.network.sync_batch_norm = true;
  Trainer with(options, data);
  const auto r1 = with.Train();
  ASSERT_EQ(r1.epochs.size(), 1u);
  EXPECT_EQ(r1.epochs[0].loss, r0.epochs[0].loss);
  ExpectSameState(with.net(), without.net());
}

TEST(TrainerTest, NegativeResumeEpochOnlyLoads) {
  const auto dir = TempFolder("evaluate");
  const auto data = testing::MakeSyntheticData({});
  auto options = SmallOptions(dir);
  options.network.max_epochs = 1;
  Trainer first(options, data);
  first.Train();
  options.network.resume_epoch = -1;
  options.network.max_epochs = 5;
  Trainer evaluate(options, data);
  const auto result = evaluate.Train();
  EXPECT_EQ(result.stop_reason, StopReason::kEvaluateOnly);
  EXPECT_TRUE(result.epochs.empty());
  EXPECT_EQ(evaluate.epoch(), 1);
  ExpectSameState(evaluate.net(), first.net());
  EXPECT_EQ(FindLastEpoch(dir / "networks"), 1);

  options.network.resume_epoch = 3;  // missing checkpoint
  Trainer missing(options, data);
  EXPECT_THROW(missing.Start(), DataError);
  stdfs::remove_all(dir);
}

TEST(TrainerTest, CallbackCanStopAndSeesEvaluationCadence) {
  auto options = SmallOptions({});
  options.network.epochs_per_train_call = 2;
  options.network.max_epochs = 10;
  options.network.validation_utterances = 0;
  Trainer trainer(options, testing::MakeSyntheticData({}));
  std::vector<bool> due;
  const auto result = trainer.Train([&](const EpochStats& s) {
    due.push_back(s.evaluation_due);
    return s.epoch == 3 ? EpochAction::kStop : EpochAction::kContinue;
  });
  EXPECT_EQ(result.stop_reason, StopReason::kCallback);
  EXPECT_EQ(result.last_epoch, 3);
  EXPECT_EQ(due, (std::vector<bool>{false, true, false}));
  EXPECT_FALSE(result.epochs[0].validation.has_value());
}

TEST(TrainerTest, StopsAfterConsecutiveLearningRateHalvings) {
  auto options = SmallOptions({});
  options.network.min_loss_change_ratio = 2.0;  // every epoch counts as "no progress"
  options.network.max_epochs = 10;
  Trainer trainer(options, testing::MakeSyntheticData({}));
  const auto result = trainer.Train();
  EXPECT_EQ(result.stop_reason, StopReason::kLearningRate);
  ASSERT_EQ(result.epochs.size(), 2u);
  EXPECT_TRUE(result.epochs[0].lr.halve);
  EXPECT_DOUBLE_EQ(result.epochs[0].learning_rate, 0.1);
  EXPECT_DOUBLE_EQ(result.epochs[1].learning_rate, 0.05);
  EXPECT_EQ(trainer.learning_rates(), (std::vector<double>{0.025, 0.025}));
  EXPECT_EQ(trainer.schedule().consecutive_lr_updates, 2);
}

TEST(TrainerTest, ValidationSplitAndWeightDecayGroups) {
  const auto data = testing::MakeSyntheticData({});
  Trainer trainer(SmallOptions({}), data);
  const auto& train = trainer.training_utterances();
  const auto& validation = trainer.validation_utterances();
  const auto& subset = trainer.subset_utterances();
  EXPECT_EQ(validation.size(), 16u);
  EXPECT_EQ(subset.size(), 16u);
  EXPECT_EQ(train.size(), 80u);
  std::set<int> train_set(train.begin(), train.end());
  for (int u : validation) EXPECT_FALSE(train_set.count(u));
  for (int u : subset) EXPECT_TRUE(train_set.count(u));
  // Same split on every construction (fixed seed 101).
  Trainer again(SmallOptions({}), data);
  EXPECT_EQ(again.validation_utterances(), validation);

  for (const auto& n : trainer.ParameterNames(false)) EXPECT_NE(n.find("batchnorm"), std::string::npos);
  const auto decayed = trainer.ParameterNames(true);
  EXPECT_NE(std::find(decayed.begin(), decayed.end(), "tdnn_layers.0.cnn.weight"), decayed.end());

  auto too_many = SmallOptions({});
  too_many.network.validation_utterances = 96;
  EXPECT_THROW(Trainer(too_many, data), DataError);
}

TEST(TrainerTest, CheckpointContentsAndMismatches) {
  const auto dir = TempFolder("contents");
  const auto data = testing::MakeSyntheticData({});
  Trainer trainer(SmallOptions(dir), data);
  trainer.TrainEpoch();
  const auto path = CheckpointPath(dir / "networks", 1);
  const auto meta = ReadCheckpointMeta(path);
  EXPECT_EQ(meta.architecture, "StandardNet");
  EXPECT_EQ(meta.feat_dim, 30);
  EXPECT_EQ(meta.n_speakers, 8);
  EXPECT_EQ(meta.embedding_size, 32);
  EXPECT_EQ(meta.epoch, 1);
  EXPECT_EQ(meta.sampler_seed, 11u);
  EXPECT_EQ(meta.schedule.training_loss, trainer.schedule().training_loss);
  EXPECT_TRUE(meta.torch_rng_state.defined());

  // Loads into a fresh network with the same names (no DDP prefixes) ...
  auto fresh = nnet::MakeXvectorNet(SmallOptions({}).network, 30, 8);
  ReadCheckpoint(path, *fresh, nullptr);
  ExpectSameState(*fresh, trainer.net());
  // ... but not into a different one.
  auto other = nnet::MakeXvectorNet(SmallOptions({}).network, 30, 9);
  EXPECT_THROW(ReadCheckpoint(path, *other, nullptr), DataError);
  auto options = SmallOptions(dir);
  options.network.embedding_size = 16;
  Trainer mismatched(options, data);
  EXPECT_THROW(mismatched.LoadCheckpoint(path), DataError);

  std::ofstream(dir / "junk.pt") << "not a checkpoint";
  EXPECT_THROW(ReadCheckpointMeta(dir / "junk.pt"), DataError);
  EXPECT_THROW(ReadCheckpointMeta(dir / "absent.pt"), DataError);
  stdfs::remove_all(dir);
}

// 16 flipped bytes inside the tensor data of a checkpoint load silently without a checksum (the
// file still parses); its checksum file makes them an error naming the file.
TEST(TrainerTest, CorruptCheckpointsAreCaughtByTheirChecksum) {
  const auto dir = TempFolder("corrupt");
  Trainer trainer(SmallOptions(dir), testing::MakeSyntheticData({}));
  trainer.TrainEpoch();
  const auto path = CheckpointPath(dir / "networks", 1);
  ASSERT_TRUE(stdfs::exists(fs::ChecksumFilePath(path)));
  EXPECT_TRUE(fs::VerifyFileChecksum(path));
  std::string bytes = fs::ReadFile(path);
  // The largest tensor's data lies in the second half of the file: flip 16 bytes there.
  for (std::size_t i = 0; i < 16; ++i) bytes[bytes.size() / 2 + 64 * i] ^= 0x40;
  { std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes; }
  auto fresh = nnet::MakeXvectorNet(SmallOptions({}).network, 30, 8);
  try {
    ReadCheckpoint(path, *fresh, nullptr);
    FAIL() << "a corrupt checkpoint was loaded";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string() + ": corrupt: its SHA-256 is "), std::string::npos) << e.what();
  }
  EXPECT_THROW(ReadCheckpointMeta(path), DataError);
  // Without the checksum file the same bytes load: what the check protects against.
  stdfs::remove(fs::ChecksumFilePath(path));
  EXPECT_NO_THROW(ReadCheckpoint(path, *fresh, nullptr));
  stdfs::remove_all(dir);
}

}  // namespace
}  // namespace asv::train
