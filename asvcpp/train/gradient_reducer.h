// The seam for data-parallel training (the idea of flashlight's fl::Reducer,
// flashlight/fl/distributed/reducers/Reducer.h; README.md, "GPUs and data-parallel training").
// The trainer calls it at fixed points; the single-process NoOpReducer does nothing. The
// process-group implementation (distributed::ProcessGroup::reducer() in asvcpp/distributed/process_group.h:
// NCCL/Gloo, bucketed all-reduce overlapped with the backward pass) plugs in here without
// touching the trainer.
//
// Call points in Trainer (all ranks, same order):
//   SyncModel          once after the model is built or loaded (broadcast from rank 0)
//   BeginBackward      before each backward pass; `will_step` true for the last minibatch of an
//                      accumulation window (an overlapping reducer starts all-reduces during it)
//   ReduceGradients    after the backward pass of the last minibatch of an accumulation window,
//                      before the optimizer step: gradients averaged over ranks, in place
//   SyncBuffers        at the end of each epoch, before validation and the checkpoint: BatchNorm
//                      running statistics averaged over ranks (each rank normalises with its own
//                      minibatch statistics during training); not called with network.sync_batch_norm,
//                      whose running statistics are the same on every rank
//   AllReduceTensorSum with network.sync_batch_norm: in every BatchNorm's forward and backward pass
//                      (batch_norm_sync.h, nnet/sync_batch_norm.h)
//   AllReduceSum       epoch statistics (loss sums, counts, frames) summed over ranks
//   BroadcastFlag      decisions made on rank 0 (halve the learning rate, stop)
//   Barrier            after rank 0 wrote a checkpoint
#pragma once

#include <stdexcept>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace asv::train {

class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// Makes every parameter and buffer of `module` equal to rank 0's.
  virtual void SyncModel(torch::nn::Module& module) = 0;
  /// Called before every backward pass (all ranks, same sequence).
  virtual void BeginBackward(bool will_step) { (void)will_step; }
  /// Replaces each defined gradient of `parameters` by its mean over all ranks.
  virtual void ReduceGradients(const std::vector<torch::Tensor>& parameters) = 0;
  /// Replaces every floating-point buffer of `module` by its mean over all ranks.
  virtual void SyncBuffers(torch::nn::Module& module) { (void)module; }
  /// Element-wise sum of `values` over all ranks.
  virtual std::vector<double> AllReduceSum(const std::vector<double>& values) = 0;
  /// Replaces `tensor` (contiguous, on the training device; same shape and dtype on every rank)
  /// by its element-wise sum over all ranks, blocking (on CUDA the current stream waits). Called
  /// from the forward pass and from autograd's backward threads, interleaved with the gradient
  /// all-reduces, in the same order on every rank. The default serves one process (the identity)
  /// and throws std::logic_error for a world size > 1.
  virtual void AllReduceTensorSum(torch::Tensor& tensor) {
    (void)tensor;
    if (world_size() > 1) throw std::logic_error("this gradient reducer cannot all-reduce tensors");
  }
  /// Rank 0's `flag` on every rank.
  virtual bool BroadcastFlag(bool flag) = 0;
  virtual void Barrier() = 0;
};

/// Single process: world size 1, everything is the identity.
class NoOpReducer final : public GradientReducer {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  void SyncModel(torch::nn::Module&) override {}
  void ReduceGradients(const std::vector<torch::Tensor>&) override {}
  std::vector<double> AllReduceSum(const std::vector<double>& values) override { return values; }
  bool BroadcastFlag(bool flag) override { return flag; }
  void Barrier() override {}
};

}  // namespace asv::train
