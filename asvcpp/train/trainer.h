// Speaker-network training: the loop of ASVtorch's train_network
// (asvtorch/src/networks/network_training.py) for any nnet::SpeakerNet (x-vectors; embedding
// models with margin heads, trained WeSpeaker's way with a per-step schedule), with fixes of
// ASVtorch's weak points: learning-rate
// schedule state kept in the checkpoint rather than in fake Parameters, checkpoints without DDP
// prefixes and with sampler/RNG state (exact resume), loss and decisions that go through the
// GradientReducer so that every rank agrees, a prefetching loader that reports how long the
// training step waited for data.
//
// Per epoch g (all ranks):
//   the batch source's minibatches for this rank (batch_source.h; by default the clips of
//   BuildEpoch(seed, g), epoch_sampler.h), loaded on `dataloader_workers` threads and turned into
//   network input on the device (device_batch.h); before each optimizer step the per-step
//   schedule's learning rate and margin, if any; forward and cross-entropy (batch mean), under bfloat16
//   autocast when `precision` says so (precision.h); loss / optimizer_step_interval, backward;
//   with network.sync_batch_norm and several ranks, every BatchNorm of the training forward pass
//   normalises with the statistics of all ranks' minibatches (batch_norm_sync.h);
//   every optimizer_step_interval batches: ReduceGradients,
//   optimizer step (network.optimizer: sgd.h or adamw.h, two weight-decay groups), zero gradients (left-over gradients at the end
//   of an epoch are dropped, as ASVtorch's zero_grad at the epoch start does);
//   every print_interval batches a progress line (ASVtorch's format), every
//   print_interval·accuracy_print_interval batches and at the end of the epoch validation on
//   the held-out utterances and on an equally large training subset;
//   the LR rule of lr_schedule.h on the epoch's mean loss over all ranks (unless off); rank 0 writes
//   checkpoint_folder/epoch.g.pt (checkpoint_io.h).
// No LibTorch in this header.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/settings/settings.h"
#include "asvcpp/train/checkpoint.h"
#include "asvcpp/train/embedding_extractor.h"
#include "asvcpp/train/training_data.h"
#include "asvcpp/train/lr_schedule.h"
#include "asvcpp/train/precision.h"

namespace asv::nnet {
class SpeakerNet;
}

namespace asv::train {

class BatchSource;
class DeviceBatchTransform;
class GradientReducer;
class Optimizer;

/// "cuda:<gpu_id>" when `use_gpu` and LibTorch sees a CUDA device, else "cpu".
std::string SelectDevice(bool use_gpu, int gpu_id);

/// Builds the network to train for `feat_dim`-dimensional features and `n_speakers` classes
/// (TrainerOptions::n_classes)
/// (weights from LibTorch's global generator, which the Trainer seeds first).
using SpeakerNetFactory =
    std::function<std::shared_ptr<nnet::SpeakerNet>(std::int64_t feat_dim, std::int64_t n_speakers)>;

/// What a per-step schedule sets before an optimizer step.
struct StepSettings {
  std::optional<double> learning_rate;  ///< every parameter group's rate
  std::optional<double> margin;         ///< the head's margin (nnet::SpeakerNet::UpdateMargin)
};

/// A per-step schedule (WeSpeaker's recipes: exponential_lr.h, margin_schedule.h): called before
/// every optimizer step with the epoch (1-based), the step's index in the epoch (0-based) and
/// the optimizer steps per epoch on this rank. It must depend on these only (every rank and a
/// resumed run get the same values).
using StepSchedule = std::function<StepSettings(int epoch, std::int64_t step, std::int64_t steps_per_epoch)>;

struct TrainerOptions {
  settings::NetworkSettings network;
  /// The network; empty: the x-vector network of `network` (nnet::MakeXvectorNet). Its
  /// info().layout says how batches are handed to it (host batches are [batch, feat_dim, frames]).
  SpeakerNetFactory make_net;
  /// Classes of the training head; 0: the training data's speakers. More when the batch source
  /// makes new classes of them (speed-perturbed copies as new speakers: 3x).
  std::int64_t n_classes = 0;
  /// The training minibatches (batch_source.h); empty: ASVtorch's clips of the training data's
  /// features (ClipBatchSource over the utterances left after the validation split).
  std::shared_ptr<BatchSource> batches;
  /// Host batch -> network input on the device (device_batch.h); empty: the copy alone.
  std::shared_ptr<DeviceBatchTransform> device_transform;
  int dataloader_workers = 2;               ///< computing.network_dataloader_workers (0: load on the training thread)
  int prefetch_batches = 0;                 ///< batches prepared ahead; 0: 2 per worker (at least 2)
  std::string device = "cpu";               ///< "cpu" or "cuda:N" (see SelectDevice)
  /// Per-step learning rate and margin; empty: rates change only by the loss rule.
  StepSchedule step_schedule;
  /// ASVtorch's rule after each epoch (lr_schedule.h): halve the rates when the loss fell too
  /// little, stop after network.max_consecutive_lr_updates halvings. Off for a per-step schedule.
  bool loss_rule = true;
  bool nesterov = false;  ///< Nesterov momentum (sgd.h), as WeSpeaker's recipes train; SGD only
  /// network.precision: kBFloat16 runs the training forward pass and loss under
  /// bfloat16 autocast on `device` (precision.h); backward, the optimizer, validation and
  /// extraction stay float32, as do parameters and checkpoints.
  Precision precision = Precision::kFloat32;
  std::filesystem::path checkpoint_folder;  ///< where epoch.N.pt go (networks/); empty: none written
  std::filesystem::path log_folder;         ///< per-epoch log files epoch.N.log; empty: none
  std::uint64_t seed = 0;                   ///< weight initialisation (torch::manual_seed) and sampler seed
  std::uint64_t validation_seed = 101;      ///< validation split (ASVtorch: numpy seed 101)
  /// Before the first epoch this Trainer trains: one forward and backward pass of a minibatch of
  /// the longest clips (network.max_clip_size frames, zeros), with no optimizer step; gradients
  /// are zeroed and BatchNorm statistics restored, so training is unchanged (bit for bit). The
  /// largest step's memory is then taken at the start: an out-of-memory error comes before the
  /// first epoch, as a StageError naming the minibatch shape, instead of hours in when the
  /// longest clips are first drawn, and the caching allocators (cpu_allocator.h, CUDA's) hold
  /// blocks for the largest training step from the start (other shapes, e.g. the embedding
  /// extraction of an in-training evaluation, still add theirs when they first run). Costs one
  /// step. Each rank runs it alone (no collective, BatchNorm unsynchronised even with
  /// network.sync_batch_norm).
  bool preflight = true;
  /// What the pre-flight step's out-of-memory error tells the user to lower.
  std::string memory_advice = "lower network.minibatch_size or network.max_clip_size";
};

/// Loss (mean cross-entropy per utterance) and accuracy (%) on the validation sets.
struct ValidationResult {
  double subset_loss = 0;
  double subset_accuracy = 0;
  double validation_loss = 0;
  double validation_accuracy = 0;
  std::int64_t subset_utterances = 0;
  std::int64_t validation_utterances = 0;
};

struct EpochStats {
  int epoch = 0;
  std::int64_t batches = 0;  ///< over all ranks
  std::int64_t clips = 0;
  std::int64_t frames = 0;
  double loss = 0;                ///< mean minibatch loss over all ranks
  double accuracy = 0;            ///< training-clip accuracy (%), train-mode outputs
  double learning_rate = 0;       ///< group 0's learning rate at the epoch's first step
  double margin = 0;              ///< the head's margin at the end of the epoch (0 without one)
  double next_learning_rate = 0;  ///< after the LR rule
  double seconds = 0;             ///< wall time of the epoch incl. validation and checkpoint
  double frames_per_second = 0;   ///< training frames / training time (validation excluded), all ranks
  double data_wait_fraction = 0;  ///< share of training time the step waited for batches (rank 0)
  LrDecision lr;
  std::optional<ValidationResult> validation;  ///< end-of-epoch validation (none without validation data)
  bool evaluation_due = false;                 ///< epoch is a multiple of network.epochs_per_train_call
  std::filesystem::path checkpoint;            ///< written file (rank 0), empty if none
};

enum class EpochAction { kContinue, kStop };
/// Called on every rank after each epoch (after its checkpoint is written); rank 0's answer
/// decides. The recipe computes EERs here when stats.evaluation_due.
using EpochCallback = std::function<EpochAction(const EpochStats&)>;

enum class StopReason { kMaxEpochs, kLearningRate, kCallback, kEvaluateOnly };

struct TrainResult {
  int last_epoch = 0;  ///< epoch the network is at
  StopReason stop_reason = StopReason::kMaxEpochs;
  std::vector<EpochStats> epochs;  ///< epochs trained by this call
};

class Trainer {
 public:
  /// Splits off the validation utterances, builds the network (seeded) on the device, the
  /// optimizer and the sampler. Throws DataError for invalid data (feature_source.h) or
  /// validation_utterances >= number of utterances, ConfigError for network settings the
  /// architecture cannot use. `reducer` null: single process (NoOpReducer).
  Trainer(TrainerOptions options, TrainingData data, std::shared_ptr<GradientReducer> reducer = nullptr);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Applies network.resume_epoch once (later calls return the same plan): 0 new network;
  /// N > 0 load checkpoint_folder/epoch.N.pt and continue; N < 0 load epoch |N| for
  /// evaluation only (Train then trains nothing). Throws DataError for a missing or mismatching
  /// checkpoint.
  ResumePlan Start();

  /// Trains epoch epoch()+1 (calls Start() first if needed).
  EpochStats TrainEpoch();

  /// Trains until network.max_epochs, the LR criterion (max_consecutive_lr_updates consecutive
  /// halvings) or the callback asks to stop; the callback also runs after the epoch that
  /// triggers the LR stop.
  TrainResult Train(const EpochCallback& on_epoch = {});

  /// Validation loss/accuracy now (eval mode; train mode restored). Empty sets give zeros.
  ValidationResult Validate();

  /// Writes / reads the full training state (checkpoint_io.h). LoadCheckpoint checks that the
  /// architecture and sizes match and restores the epoch, optimizer, LR schedule and RNG state.
  void SaveCheckpoint(const std::filesystem::path& path) const;
  void LoadCheckpoint(const std::filesystem::path& path);

  /// Embeddings with the current network (embedding_extractor.h).
  ExtractionResult ExtractEmbeddings(const data::FeatureSource& source, const std::vector<int>& utterances,
                                     const ExtractionOptions& options) const;

  int epoch() const;
  std::vector<double> learning_rates() const;  ///< per parameter group (0: no decay, 1: decay)
  const LrScheduleState& schedule() const;
  nnet::SpeakerNet& net() const;
  std::shared_ptr<nnet::SpeakerNet> shared_net() const;
  /// The optimizer of network.optimizer: Sgd (sgd.h) or AdamW (adamw.h).
  Optimizer& optimizer() const;
  /// Names of the parameters with (true) or without (false) weight decay.
  std::vector<std::string> ParameterNames(bool with_weight_decay) const;
  /// Source indices of the training, validation and training-subset utterances.
  const std::vector<int>& training_utterances() const;
  const std::vector<int>& validation_utterances() const;
  const std::vector<int>& subset_utterances() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace asv::train
