// One training step of a speaker network (nnet::SpeakerNet: an x-vector network, or an embedding
// model with a margin head), the same code in train::Trainer and in the training
// benchmark (tools/bench/train_throughput.cc), so that the benchmark measures what training runs:
// the minibatch copied to the device (HostToDevice: on a GPU through page-locked memory,
// asynchronous), forward pass and cross-entropy under the precision's autocast (backward outside
// it, as in PyTorch's automatic mixed precision recipe), the reducer's BeginBackward, backward of
// the loss divided by the optimizer step interval (gradient accumulation), then, on the last
// minibatch of an interval, the reducer's ReduceGradients, the optimizer step and zeroed
// gradients; the loss and the number of correctly classified clips are added to StepReadings,
// read every few steps by the caller. With a batch-norm sync (network.sync_batch_norm,
// batch_norm_sync.h) the forward pass runs inside a nnet::SyncBatchNormScope: BatchNorm statistics
// over all ranks' minibatches (the backward pass keeps the sync of its forward pass).
#pragma once

#include <memory>
#include <string>

#include <torch/types.h>

#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/nnet/sync_batch_norm.h"
#include "asvcpp/train/gradient_reducer.h"
#include "asvcpp/train/precision.h"
#include "asvcpp/train/sgd.h"
#include "asvcpp/train/step_readings.h"

namespace asv::train {

class TrainStep {
 public:
  /// `net` is trained on `device` ("cpu" or "cuda:N", where `net` already is) with `optimizer`
  /// over its parameters; `reducer` averages gradients over ranks (NoOpReducer in one process);
  /// `batch_norm_sync` (may be null: each rank's own statistics) synchronises BatchNorm.
  TrainStep(std::shared_ptr<nnet::SpeakerNet> net, Optimizer& optimizer, std::shared_ptr<GradientReducer> reducer,
            const std::string& device, Precision precision,
            std::shared_ptr<nnet::CrossRankSum> batch_norm_sync = nullptr);

  /// One minibatch: `features` [batch, feat_dim, frames] float32 (handed to the network in its
  /// layout, nnet::ToLayout) and `labels` [batch] int64 in 0..n_speakers-1, both on the CPU (or
  /// already on the device). The gradients are scaled by 1 / `interval` (>= 1); `step`:
  /// this is the interval's last minibatch (reduce, optimizer step, zero gradients). Returns true
  /// when readings() are due to be read (StepReadings::Add). Throws what LibTorch throws (c10::Error,
  /// e.g. out of memory).
  bool Run(const torch::Tensor& features, const torch::Tensor& labels, int interval, bool step);

  StepReadings& readings() noexcept { return readings_; }

 private:
  std::shared_ptr<nnet::SpeakerNet> net_;
  nnet::FeatureLayout layout_;
  Optimizer& optimizer_;
  std::shared_ptr<GradientReducer> reducer_;
  std::string device_name_;
  torch::Device device_;
  Precision precision_;
  std::vector<torch::Tensor> parameters_;
  std::shared_ptr<nnet::CrossRankSum> batch_norm_sync_;
  StepReadings readings_;
};

}  // namespace asv::train
