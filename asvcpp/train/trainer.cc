#include "asvcpp/train/trainer.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>

#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/nn/functional/loss.h>

#include "asvcpp/base/check.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/base/progress.h"
#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/train/batch_loader.h"
#include "asvcpp/train/batch_norm_sync.h"
#include "asvcpp/train/batch_source.h"
#include "asvcpp/train/checkpoint_io.h"
#include "asvcpp/train/cpu_allocator.h"
#include "asvcpp/train/device_batch.h"
#include "asvcpp/train/onednn_cache.h"
#include "asvcpp/train/epoch_sampler.h"
#include "asvcpp/train/gradient_reducer.h"
#include "asvcpp/train/host_to_device.h"
#include "asvcpp/train/train_step.h"
#include "asvcpp/train/precision.h"
#include "asvcpp/train/rng.h"
#include "asvcpp/train/adamw.h"
#include "asvcpp/train/sgd.h"
#include "asvcpp/train/step_readings.h"
#include "asvcpp/train/test_batching.h"

namespace asv::train {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A host batch as CPU tensors [batch, feat_dim, frames] (a view of its buffer) and [batch].
torch::Tensor HostFeatures(HostBatch& hb) {
  return torch::from_blob(hb.features.data(), {hb.batch, hb.feat_dim, hb.frames}, torch::kFloat32);
}

torch::Tensor HostLabels(const HostBatch& hb) {
  return torch::tensor(hb.labels, torch::kInt64);
}

// On a GPU: pinned, asynchronous (host_to_device.h); in the network's layout.
torch::Tensor Features(HostBatch& hb, const torch::Device& device, nnet::FeatureLayout layout) {
  return nnet::ToLayout(HostToDevice(HostFeatures(hb), device), layout);
}

torch::Tensor Labels(const HostBatch& hb, const torch::Device& device) {
  return HostToDevice(HostLabels(hb), device);
}

}  // namespace

std::string SelectDevice(bool use_gpu, int gpu_id) {
  if (use_gpu && torch::cuda::is_available()) return fmt::format("cuda:{}", gpu_id);
  return "cpu";
}

struct Trainer::Impl {
  // First member: alive until the network, optimizer and batches are gone (cpu_allocator.h).
  CachingCpuAllocatorScope cpu_allocator;
  TrainerOptions options;
  TrainingData data;
  std::shared_ptr<GradientReducer> reducer;
  // network.sync_batch_norm with world size > 1 (batch_norm_sync.h); null otherwise.
  std::shared_ptr<nnet::CrossRankSum> batch_norm_sync;
  torch::Device device{torch::kCPU};
  std::shared_ptr<nnet::SpeakerNet> net;
  nnet::SpeakerNetInfo info;
  std::unique_ptr<Optimizer> optimizer;
  LrScheduleOptions lr_options;
  LrScheduleState schedule;
  int epoch = 0;
  bool preflight_done = false;
  std::optional<ResumePlan> plan;

  std::vector<int> training;                         // source indices
  std::vector<int> validation;                       // source indices
  std::vector<int> subset;                           // source indices (subset of training)
  std::vector<SamplerUtterance> sampler_utterances;  // parallel to `training`
  std::shared_ptr<BatchSource> batches;             // options.batches or the clips of `training`

  bool is_rank0() const { return reducer->rank() == 0; }

  std::size_t prefetch() const {
    if (options.prefetch_batches > 0) return static_cast<std::size_t>(options.prefetch_batches);
    return static_cast<std::size_t>(std::max(2, 2 * options.dataloader_workers));
  }

  void Split() {
    const int n = data.source->NumUtterances();
    const int k = options.network.validation_utterances;
    if (k >= n) {
      throw DataError(
          fmt::format("network.validation_utterances ({}) must be smaller than the number of training "
                      "utterances ({})",
                      k, n));
    }
    Rng rng(options.validation_seed);
    auto held_out = rng.Sample(static_cast<std::size_t>(n), static_cast<std::size_t>(k));
    std::sort(held_out.begin(), held_out.end());
    std::vector<bool> is_validation(static_cast<std::size_t>(n), false);
    for (auto i : held_out) is_validation[i] = true;
    for (int i = 0; i < n; ++i) {
      (is_validation[static_cast<std::size_t>(i)] ? validation : training).push_back(i);
    }
    auto picked = rng.Sample(training.size(), static_cast<std::size_t>(k));
    std::sort(picked.begin(), picked.end());
    for (auto i : picked) subset.push_back(training[i]);
    for (int u : training) {
      sampler_utterances.push_back({data.speakers[static_cast<std::size_t>(u)], data.source->NumFrames(u)});
    }
    ASV_LOG0(Info, "Training set of {} utterances divided randomly to sets of {} and {} for training and validation", n,
             training.size(), validation.size());
  }

  CheckpointMeta Meta() const {
    CheckpointMeta m;
    m.architecture = info.architecture;
    m.feat_dim = info.feat_dim;
    m.n_speakers = info.n_speakers;
    m.embedding_size = info.embedding_size;
    m.epoch = epoch;
    m.schedule = schedule;
    m.sampler_seed = options.seed;
    m.torch_rng_state = GetTorchRngState();
    if (device.is_cuda()) m.torch_cuda_rng_state = GetTorchCudaRngState(device);
    return m;
  }

  void Load(const std::filesystem::path& path) {
    const auto file = ReadCheckpointMeta(path);
    const auto& o = info;
    if (file.architecture != o.architecture || file.feat_dim != o.feat_dim || file.n_speakers != o.n_speakers ||
        file.embedding_size != o.embedding_size) {
      throw DataError(fmt::format(
          "{} holds a {} for {}-dim input, {} speakers, {}-dim embeddings; this training builds a {} for {}, {}, {}",
          path.string(), file.architecture, file.feat_dim, file.n_speakers, file.embedding_size, o.architecture,
          o.feat_dim, o.n_speakers, o.embedding_size));
    }
    const auto meta = ReadCheckpoint(path, *net, optimizer.get());
    if (meta.sampler_seed != options.seed) {
      ASV_LOG0(Warning, "{} was trained with seed {}; continuing with seed {}", path.string(), meta.sampler_seed,
               options.seed);
    }
    epoch = meta.epoch;
    schedule = meta.schedule;
    if (meta.torch_rng_state.defined()) SetTorchRngState(meta.torch_rng_state);
    // A GPU checkpoint resumed on the CPU has no use for the CUDA state; a CPU checkpoint resumed
    // on a GPU leaves the CUDA generator as seeded.
    if (meta.torch_cuda_rng_state.defined() && device.is_cuda()) SetTorchCudaRngState(device, meta.torch_cuda_rng_state);
    reducer->SyncModel(*net);
  }

  // Size-weighted loss sum and correct count over `utterances` on this rank's share of batches.
  std::array<double, 3> Evaluate(const std::vector<int>& utterances) {
    std::vector<int> usable;
    std::vector<std::int64_t> lengths;
    for (int u : utterances) {
      const auto n = data.source->NumFrames(u);
      if (n >= 1) {
        usable.push_back(u);
        lengths.push_back(n);
      }
    }
    const auto all =
        MakeTestBatches(lengths, options.network.max_batch_size_in_frames, options.network.max_val_cut_portion);
    std::vector<const TestBatch*> mine;
    for (std::size_t b = 0; b < all.size(); ++b) {
      if (static_cast<int>(b % static_cast<std::size_t>(reducer->world_size())) == reducer->rank()) {
        mine.push_back(&all[b]);
      }
    }
    Prefetcher<HostBatch> loader(
        mine.size(),
        [&](std::size_t b) {
          std::vector<int> items;
          std::vector<std::int64_t> labels;
          for (std::size_t k : mine[b]->items) {
            items.push_back(usable[k]);
            labels.push_back(data.speakers[static_cast<std::size_t>(usable[k])]);
          }
          return LoadTestBatch(*data.source, items, mine[b]->frames, labels);
        },
        options.dataloader_workers, prefetch());
    double loss_sum = 0, correct = 0, count = 0;
    StepReadings readings;  // read every few batches, as in training (step_readings.h)
    const auto read_batches = [&] {
      for (const auto& batch : readings.Read()) {
        loss_sum += batch.loss;
        correct += batch.correct;
      }
    };
    while (auto hb = loader.Next()) {
      auto labels = Labels(*hb, device);
      auto logits = net->Logits(Features(*hb, device, info.layout), labels);
      const auto loss = torch::nn::functional::cross_entropy(
          logits, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
      if (readings.Add(loss, logits.argmax(1).eq(labels).sum())) read_batches();
      count += static_cast<double>(hb->batch);
    }
    read_batches();
    return {loss_sum, correct, count};
  }

  ValidationResult Validate() {
    ValidationResult r;
    if (validation.empty()) return r;
    const CpuAllocatorPhase phase;  // whole-utterance batches: their blocks go when it ends
    const OneDnnPrimitiveCachePhase primitives;  // ... and their convolutions' primitives
    const bool was_training = net->is_training();
    net->eval();
    torch::NoGradGuard no_grad;
    const auto s = Evaluate(subset);
    const auto v = Evaluate(validation);
    if (was_training) net->train();
    const auto sums = reducer->AllReduceSum({s[0], s[1], s[2], v[0], v[1], v[2]});
    auto mean = [](double x, double n) { return n > 0 ? x / n : 0.0; };
    r.subset_loss = mean(sums[0], sums[2]);
    r.subset_accuracy = 100.0 * mean(sums[1], sums[2]);
    r.subset_utterances = static_cast<std::int64_t>(sums[2]);
    r.validation_loss = mean(sums[3], sums[5]);
    r.validation_accuracy = 100.0 * mean(sums[4], sums[5]);
    r.validation_utterances = static_cast<std::int64_t>(sums[5]);
    return r;
  }

  EpochSamplerOptions SamplerOptions() const {
    EpochSamplerOptions o;
    o.minibatch_size = options.network.minibatch_size;
    o.world_size = reducer->world_size();
    o.rank = reducer->rank();
    o.min_clip_size = options.network.min_clip_size;
    o.max_clip_size = options.network.max_clip_size;
    o.utts_per_speaker_in_epoch = options.network.utts_per_speaker_in_epoch;
    o.seed = options.seed;
    return o;
  }

  // TrainerOptions::preflight. The pass runs like a training step (train mode, autocast) on
  // zeros; BeginBackward is not called, so a distributed reducer launches no all-reduce.
  void Preflight(std::int64_t batch_size, std::int64_t frames) {
    std::vector<std::pair<torch::Tensor, torch::Tensor>> buffers;  // (buffer, saved copy)
    for (const auto& b : net->buffers()) buffers.emplace_back(b, b.detach().clone());
    net->train();
    optimizer->ZeroGrad();
    try {
      torch::Tensor loss;
      {
        const AutocastGuard autocast(options.precision, options.device);
        const auto x = torch::zeros({batch_size, data.source->FeatDim(), frames}, torch::TensorOptions(device));
        const auto y = torch::zeros({batch_size}, torch::TensorOptions(device).dtype(torch::kInt64));
        loss = torch::nn::functional::cross_entropy(net->Logits(nnet::ToLayout(x, info.layout), y), y);
      }
      loss.backward();
    } catch (const c10::Error& e) {
      const std::string what = e.what_without_backtrace();
      // CUDA: "CUDA out of memory"; CPU (LibTorch's and cpu_allocator.h's): "not enough memory".
      if (what.find("out of memory") == std::string::npos && what.find("not enough memory") == std::string::npos) throw;
      throw StageError(fmt::format(
          "a training minibatch of {} clips of {} frames does not fit in the memory of {} (tried before the "
          "first epoch); {}: {}",
          batch_size, frames, options.device, options.memory_advice, what));
    }
    optimizer->ZeroGrad();
    torch::NoGradGuard no_grad;
    for (auto& [buffer, saved] : buffers) buffer.copy_(saved);
    if (device.is_cpu()) {
      const auto memory = GetCpuAllocatorStats();
      ASV_LOG0(Debug, "Pre-flight step ({} clips of {} frames): CPU tensor memory peak {} MB, {} MB cached",
               batch_size, frames, memory.peak_in_use_bytes >> 20, memory.cached_bytes >> 20);
    }
  }

  // ASVtorch's LR rule on the loss averaged over ranks; rank 0's decision is broadcast.
  template <class Print>
  void ApplyLossRule(EpochStats& stats, const Print& print) {
    LrScheduleState next = schedule;
    stats.lr = UpdateLrSchedule(next, stats.loss, lr_options);
    stats.lr.halve = reducer->BroadcastFlag(stats.lr.halve);
    next.consecutive_lr_updates = stats.lr.halve ? schedule.consecutive_lr_updates + 1 : 0;
    stats.lr.stop = reducer->BroadcastFlag(next.consecutive_lr_updates >= lr_options.max_consecutive_lr_updates);
    schedule = next;
    print(fmt::format("Average training loss reduced {:.2f}% from the previous epoch", stats.lr.change_ratio * 100));
    if (stats.lr.halve) {
      const double old_lr = optimizer->groups().front().lr;
      for (auto& g : optimizer->groups()) g.lr /= 2;
      print(
          fmt::format("Loss change {:.2f}% < {:.2f}%: learning rate halved {:.6g} -> {:.6g} (consecutive halvings: "
                      "{})",
                      stats.lr.change_ratio * 100, lr_options.min_loss_change_ratio * 100, old_lr,
                      optimizer->groups().front().lr, schedule.consecutive_lr_updates));
    }
  }

  EpochStats TrainEpoch() {
    const auto& ns = options.network;
    const auto epoch_start = Clock::now();
    EpochStats stats;
    stats.epoch = epoch + 1;
    stats.learning_rate = optimizer->groups().front().lr;
    std::vector<std::string> log_lines;
    auto print = [&](const std::string& line) {
      ASV_LOG(Info, "{}", line);
      log_lines.push_back(line);
    };

    const EpochBatches plan = batches->PlanEpoch(stats.epoch);
    const std::size_t n_batches = plan.batches;
    ASV_LOG0(Info, "Epoch {}: {} minibatches of {} clips per rank ({} in all), {}", stats.epoch, n_batches, plan.batch_size,
             plan.global_batches, plan.description);
    if (options.preflight && !preflight_done) {
      Preflight(plan.batch_size, plan.max_frames);
      preflight_done = true;
    }
    reducer->Barrier();

    net->train();
    optimizer->ZeroGrad();
    const int interval = std::max(1, ns.optimizer_step_interval);
    double loss_sum = 0, correct = 0, clips = 0, frames = 0, window_loss = 0, validation_seconds = 0;
    // Loss and accuracy stay on the device and are read every few steps (step_readings.h).
    TrainStep train_step(net, *optimizer, reducer, options.device, options.precision, batch_norm_sync);
    std::size_t batches_read = 0;
    const auto read_steps = [&] {
      for (const auto& step : train_step.readings().Read()) {
        ++batches_read;
        if (!std::isfinite(step.loss)) {
          throw StageError(
              fmt::format("training diverged: epoch {}, batch {}: loss is {}; lower "
                          "network.initial_learning_rate",
                          stats.epoch, batches_read, step.loss));
        }
        loss_sum += step.loss;
        window_loss += step.loss;
        correct += step.correct;
      }
    };
    const auto train_start = Clock::now();
    Prefetcher<HostBatch> loader(
        n_batches, [&](std::size_t b) { return batches->Load(b); }, options.dataloader_workers, prefetch());
    const auto steps_per_epoch = std::max<std::int64_t>(1, static_cast<std::int64_t>(n_batches) / interval);
    // Batches of this rank with rate and ETA (printed by rank 0, published by every rank).
    base::ProgressOptions progress_options;
    progress_options.unit = "batches";
    base::Progress progress(fmt::format("epoch {}/{}", stats.epoch, ns.max_epochs),
                            static_cast<std::int64_t>(n_batches), progress_options);
    for (std::size_t i = 0; i < n_batches; ++i) {
      if (options.step_schedule && i % static_cast<std::size_t>(interval) == 0) {
        const auto step = options.step_schedule(stats.epoch, static_cast<std::int64_t>(i) / interval, steps_per_epoch);
        if (step.learning_rate) {
          for (auto& g : optimizer->groups()) g.lr = *step.learning_rate;
        }
        if (step.margin) net->UpdateMargin(*step.margin);
        if (i == 0) stats.learning_rate = optimizer->groups().front().lr;
      }
      HostBatch hb = *loader.Next();
      const bool last_of_interval = static_cast<int>(i % static_cast<std::size_t>(interval)) == interval - 1;
      const auto [x, y] =
          options.device_transform ? options.device_transform->Apply(hb, device) : CopyFeatureBatch(hb, device);
      if (train_step.Run(x, y, interval, last_of_interval)) read_steps();
      clips += static_cast<double>(x.size(0));
      frames += static_cast<double>(x.size(0) * x.size(2));
      progress.Add(1);

      if ((i + 1) % static_cast<std::size_t>(ns.print_interval) == 0) {
        read_steps();
        std::string line = fmt::format("Epoch {}, Time: {:.0f} s, Batch {}/{}, lr: {:.6f}, train-loss: {:.3f}",
                                       stats.epoch, SecondsSince(epoch_start), i + 1, n_batches,
                                       optimizer->groups().front().lr,
                                       window_loss / ns.print_interval);
        if ((i + 1) % static_cast<std::size_t>(ns.print_interval * ns.accuracy_print_interval) == 0 &&
            !validation.empty()) {
          const auto v_start = Clock::now();
          if (!batch_norm_sync) reducer->SyncBuffers(*net);
          const auto v = Validate();
          validation_seconds += SecondsSince(v_start);
          line += fmt::format(", subset-loss: {:.3f}, val-loss: {:.3f}, subset-acc: {:.3f} val-acc: {:.3f}",
                              v.subset_loss, v.validation_loss, v.subset_accuracy, v.validation_accuracy);
        }
        print(line);
        window_loss = 0;
      }
    }
    read_steps();
    progress.Finish();
    const double train_seconds = SecondsSince(train_start) - validation_seconds;
    const double wait_seconds = loader.wait_seconds();
    // BatchNorm running statistics: averaged over ranks before validation and the checkpoint
    // (with SyncBatchNorm they are the same on every rank already).
    if (!batch_norm_sync) reducer->SyncBuffers(*net);

    const auto sums =
        reducer->AllReduceSum({loss_sum, static_cast<double>(n_batches), correct, clips, frames, train_seconds});
    stats.batches = static_cast<std::int64_t>(sums[1]);
    stats.loss = sums[1] > 0 ? sums[0] / sums[1] : 0;
    stats.accuracy = sums[3] > 0 ? 100.0 * sums[2] / sums[3] : 0;
    stats.clips = static_cast<std::int64_t>(sums[3]);
    stats.frames = static_cast<std::int64_t>(sums[4]);
    // Ranks run concurrently: global rate = total frames / mean per-rank training time.
    const double mean_train_seconds = sums[5] / reducer->world_size();
    stats.frames_per_second = mean_train_seconds > 0 ? sums[4] / mean_train_seconds : 0;
    stats.data_wait_fraction = train_seconds > 0 ? wait_seconds / train_seconds : 0;

    if (!validation.empty()) {
      const auto v_start = Clock::now();
      stats.validation = Validate();
      validation_seconds += SecondsSince(v_start);
      print(
          fmt::format("Epoch {} validation: subset-loss: {:.3f}, val-loss: {:.3f}, subset-acc: {:.3f} val-acc: {:.3f}",
                      stats.epoch, stats.validation->subset_loss, stats.validation->validation_loss,
                      stats.validation->subset_accuracy, stats.validation->validation_accuracy));
    }

    if (options.loss_rule) {
      ApplyLossRule(stats, print);
    } else {
      stats.lr.previous_loss = schedule.training_loss;
      stats.lr.loss = stats.loss;
      schedule.training_loss = stats.loss;
    }
    stats.margin = net->margin();
    stats.next_learning_rate = optimizer->groups().front().lr;
    epoch = stats.epoch;
    stats.evaluation_due = epoch % std::max(1, ns.epochs_per_train_call) == 0;

    if (!options.checkpoint_folder.empty()) {
      stats.checkpoint = CheckpointPath(options.checkpoint_folder, epoch);
      if (is_rank0()) {
        WriteCheckpoint(stats.checkpoint, Meta(), *net, optimizer.get());
        ASV_LOG(Info, "{} model saved to: {}", info.architecture, stats.checkpoint.string());
      }
      reducer->Barrier();
    }
    stats.seconds = SecondsSince(epoch_start);
    print(
        fmt::format("Epoch {} done: loss {:.4f}, accuracy {:.2f} %, lr {:.6f}, {:.1f} s, {:.0f} frames/s, waited "
                    "for data {:.1f} % of the time",
                    stats.epoch, stats.loss, stats.accuracy, stats.learning_rate, stats.seconds,
                    stats.frames_per_second, 100 * stats.data_wait_fraction));
    const auto memory = GetCpuAllocatorStats();
    ASV_LOG0(Debug, "CPU tensor memory: {} MB in use, peak {} MB, {} MB cached; {} of {} large allocations from the cache",
             memory.in_use_bytes >> 20, memory.peak_in_use_bytes >> 20, memory.cached_bytes >> 20, memory.cache_hits,
             memory.allocations);
    if (!options.log_folder.empty()) {
      const std::string name =
          is_rank0() ? fmt::format("epoch.{}.log", epoch) : fmt::format("rank{}_epoch.{}.log", reducer->rank(), epoch);
      std::string text;
      for (const auto& l : log_lines) text += l + "\n";
      fs::WriteFileAtomic(options.log_folder / name, text);
    }
    return stats;
  }
};

Trainer::Trainer(TrainerOptions options, TrainingData data, std::shared_ptr<GradientReducer> reducer)
    : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.options = std::move(options);
  m.data = std::move(data);
  m.reducer = reducer ? std::move(reducer) : std::make_shared<NoOpReducer>();
  ValidateTrainingData(m.data);
  m.device = torch::Device(m.options.device);
  m.lr_options = LrScheduleOptions::FromSettings(m.options.network);
  m.Split();
  if (m.options.batches) {
    m.batches = m.options.batches;
  } else {
    m.batches = std::make_shared<ClipBatchSource>(m.data.source, m.sampler_utterances, m.training, m.SamplerOptions());
  }

  torch::manual_seed(m.options.seed);
  const std::int64_t classes = m.options.n_classes > 0 ? m.options.n_classes : m.data.n_speakers;
  if (classes < m.data.n_speakers) {
    throw ConfigError(fmt::format("a training head of {} classes cannot learn the training data's {} speakers", classes,
                                  m.data.n_speakers));
  }
  if (m.options.make_net) {
    m.net = m.options.make_net(m.data.source->FeatDim(), classes);
  } else {
    m.net = nnet::MakeXvectorNet(m.options.network, m.data.source->FeatDim(), classes).ptr();
  }
  ASV_CHECK(m.net != nullptr);
  m.info = m.net->info();
  if (m.info.feat_dim != m.data.source->FeatDim() || m.info.n_speakers != classes) {
    throw ConfigError(fmt::format("the {} network takes {}-dim features and {} classes; the training needs {} and {}",
                                  m.info.architecture, m.info.feat_dim, m.info.n_speakers, m.data.source->FeatDim(),
                                  classes));
  }
  m.net->to(m.device);
  m.reducer->SyncModel(*m.net);
  const auto& ns = m.options.network;
  std::vector<std::string> skiplist(ns.weight_decay_skiplist.begin(), ns.weight_decay_skiplist.end());
  auto groups = WeightDecayGroups(*m.net, skiplist, ns.initial_learning_rate, ns.weight_decay);
  for (const auto& name : groups[0].names) ASV_LOG0(Debug, "No weight decay applied to {}", name);
  if (ns.optimizer == OptimizerKind::kAdamW) {
    if (m.options.nesterov) ASV_LOG0(Warning, "Nesterov momentum is an SGD option: AdamW ignores it");
    m.optimizer = std::make_unique<AdamW>(std::move(groups));
  } else {
    m.optimizer = std::make_unique<Sgd>(std::move(groups), ns.momentum, m.options.nesterov);
  }
  ASV_LOG0(Info,
           "{}: {} speakers ({} classes), {}-dim input, {} trainable parameters ({} without weight decay), "
           "device {}",
           m.info.architecture, m.data.n_speakers, m.info.n_speakers, m.data.source->FeatDim(),
           nnet::CountParameters(*m.net), m.optimizer->groups()[0].params.size(), m.options.device);
  if (ns.sync_batch_norm && m.reducer->world_size() > 1) {
    m.batch_norm_sync = MakeBatchNormSync(m.reducer);
    ASV_LOG0(Info,
             "SyncBatchNorm on (network.sync_batch_norm): BatchNorm normalises with the statistics of all {} ranks' "
             "minibatches, one all-reduce per BatchNorm in each forward and backward pass",
             m.reducer->world_size());
  } else if (ns.sync_batch_norm) {
    ASV_LOG0(Info, "network.sync_batch_norm has no effect in one process");
  }
}

Trainer::~Trainer() = default;

ResumePlan Trainer::Start() {
  auto& m = *impl_;
  if (m.plan) return *m.plan;
  m.plan = PlanResume(m.options.network.resume_epoch);
  if (m.plan->load_epoch > 0) {
    if (m.options.checkpoint_folder.empty()) {
      throw DataError(
          fmt::format("network.resume_epoch = {} needs a checkpoint folder", m.options.network.resume_epoch));
    }
    const auto path = CheckpointPath(m.options.checkpoint_folder, m.plan->load_epoch);
    ASV_LOG0(Info, "{} epoch {} from {}", m.plan->evaluate_only ? "Evaluating" : "Resuming training from",
             m.plan->load_epoch, path.string());
    m.Load(path);
  }
  return *m.plan;
}

EpochStats Trainer::TrainEpoch() {
  Start();
  return impl_->TrainEpoch();
}

TrainResult Trainer::Train(const EpochCallback& on_epoch) {
  auto& m = *impl_;
  TrainResult result;
  if (Start().evaluate_only) {
    result.last_epoch = m.epoch;
    result.stop_reason = StopReason::kEvaluateOnly;
    return result;
  }
  result.stop_reason = StopReason::kMaxEpochs;
  while (m.epoch < m.options.network.max_epochs) {
    result.epochs.push_back(m.TrainEpoch());
    const auto& stats = result.epochs.back();
    const bool callback_stop = on_epoch && on_epoch(stats) == EpochAction::kStop;
    if (m.reducer->BroadcastFlag(callback_stop)) {
      result.stop_reason = StopReason::kCallback;
      break;
    }
    if (stats.lr.stop) {
      ASV_LOG0(Info, "Stopping training because reached {} consecutive LR updates",
               m.lr_options.max_consecutive_lr_updates);
      result.stop_reason = StopReason::kLearningRate;
      break;
    }
  }
  result.last_epoch = m.epoch;
  return result;
}

ValidationResult Trainer::Validate() {
  return impl_->Validate();
}

void Trainer::SaveCheckpoint(const std::filesystem::path& path) const {
  WriteCheckpoint(path, impl_->Meta(), *impl_->net, impl_->optimizer.get());
}

void Trainer::LoadCheckpoint(const std::filesystem::path& path) {
  impl_->Load(path);
}

ExtractionResult Trainer::ExtractEmbeddings(const data::FeatureSource& source, const std::vector<int>& utterances,
                                            const ExtractionOptions& options) const {
  return EmbeddingExtractor(impl_->net, impl_->options.device).Extract(source, utterances, options);
}

int Trainer::epoch() const {
  return impl_->epoch;
}

std::vector<double> Trainer::learning_rates() const {
  std::vector<double> lrs;
  for (const auto& g : impl_->optimizer->groups()) lrs.push_back(g.lr);
  return lrs;
}

const LrScheduleState& Trainer::schedule() const {
  return impl_->schedule;
}
nnet::SpeakerNet& Trainer::net() const {
  return *impl_->net;
}
std::shared_ptr<nnet::SpeakerNet> Trainer::shared_net() const {
  return impl_->net;
}
Optimizer& Trainer::optimizer() const {
  return *impl_->optimizer;
}

std::vector<std::string> Trainer::ParameterNames(bool with_weight_decay) const {
  return impl_->optimizer->groups()[with_weight_decay ? 1 : 0].names;
}

const std::vector<int>& Trainer::training_utterances() const {
  return impl_->training;
}
const std::vector<int>& Trainer::validation_utterances() const {
  return impl_->validation;
}
const std::vector<int>& Trainer::subset_utterances() const {
  return impl_->subset;
}

}  // namespace asv::train
