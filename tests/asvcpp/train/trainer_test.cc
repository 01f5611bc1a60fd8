#include "asvcpp/train/trainer.h"

#include <algorithm>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include "asvcpp/base/checksum.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/train/checkpoint_io.h"
#include "asvcpp/train/sgd.h"
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
  EXPECT_EQ(FindLastContiguousEpoch(dir / "networks"), 4);
  EXPECT_TRUE(stdfs::exists(dir / "logs" / "epoch.4.log"));
  stdfs::remove_all(dir);
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

TEST(TrainerTest, ResumeIsExact) {
  const auto straight_dir = TempFolder("straight");
  const auto split_dir = TempFolder("split");
  const auto data = testing::MakeSyntheticData({});

  auto straight_options = SmallOptions(straight_dir);
  straight_options.network.max_epochs = 2;
  Trainer straight(straight_options, data);
  const auto straight_result = straight.Train();

  auto first_options = SmallOptions(split_dir);
  first_options.network.max_epochs = 1;
  {
    Trainer first(first_options, data);
    first.Train();
  }
  auto second_options = SmallOptions(split_dir);
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
  const auto a = second.optimizer().MomentumBuffers();
  const auto b = straight.optimizer().MomentumBuffers();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i].second, b[i].second)) << a[i].first;
  stdfs::remove_all(straight_dir);
  stdfs::remove_all(split_dir);
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
  const auto a = with.optimizer().MomentumBuffers();
  const auto b = without.optimizer().MomentumBuffers();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i].second, b[i].second)) << a[i].first;
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
  EXPECT_EQ(FindLastContiguousEpoch(dir / "networks"), 1);

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
