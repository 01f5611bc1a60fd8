// Synchronised batch normalisation for data-parallel training (SyncBatchNorm): in training mode
// every BatchNorm normalises with the statistics of the global minibatch, all ranks' shares
// together, instead of its own rank's share. The algorithm is PyTorch's torch.nn.SyncBatchNorm
// (torch/nn/modules/_functions.py, class SyncBatchNorm, forward and backward):
//
//   forward   each rank computes, per channel c over every dimension but 1, its count n_r, mean
//             μ_r and biased variance σ²_r; these 2C+1 numbers are all-gathered (every rank gets
//             every rank's); the global count n = Σ n_r, mean μ = Σ n_r μ_r / n and
//             M2 = Σ (n_r σ²_r + n_r (μ_r − μ)²) (Chan et al.'s parallel combination, as
//             PyTorch's batch_norm_gather_stats_with_counts); the output is
//             y = (x − μ) / sqrt(M2/n + eps) · weight + bias (biased variance), and the running
//             statistics move towards μ and the unbiased variance M2/(n − 1) with the module's
//             momentum (the global count, so they are the same on every rank);
//   backward  each rank computes Σ dy and Σ dy·(x − μ) per channel, all-reduces (sums) them, and
//             dx = weight/σ · (dy − Σdy/n − (x − μ)/σ² · Σdy(x − μ)/n), σ = sqrt(M2/n + eps);
//             the weight and bias gradients are the rank's own (Σ dy(x − μ)/σ and Σ dy): the
//             gradient reducer averages them over ranks like every other gradient.
//
// Cost: one all-reduce of W·(2C+1) values per BatchNorm in the forward pass (W ranks: the
// all-gather is an all-reduce of a zero matrix in which each rank fills its own row) and one of
// 2C values in the backward pass, where C is the BatchNorm's channels.
//
// The networks keep their torch::nn::BatchNorm1d/2d modules (so parameter and buffer names, and
// checkpoints, are unchanged) and call ApplyBatchNorm instead of the module's forward. It computes
// the module's own forward unless the module is in training mode and a SyncBatchNormScope of
// world size > 1 is active on the calling thread. The scope is thread-local because forward runs
// on the thread that calls it; backward may run on another thread (LibTorch runs a CUDA graph's
// backward on a device thread), so the autograd node keeps the CrossRankSum it was created with.
//
// Every rank must run the same BatchNorms in the same order (the same network and code path), as
// with PyTorch's SyncBatchNorm: each is a collective. This library does not depend on the
// data-parallel runtime: the trainer supplies the CrossRankSum (asvcpp/train/batch_norm_sync.h).
#pragma once

#include <memory>

#include <torch/nn/modules/batchnorm.h>
#include <torch/types.h>

namespace asv::nnet {

/// Sums tensors over the ranks of a data-parallel job. Implemented by the trainer on top of its
/// process group; tests implement it over a Gloo group of threads.
class CrossRankSum {
 public:
  virtual ~CrossRankSum() = default;
  /// This process's rank, 0 .. world_size() − 1.
  virtual int rank() const = 0;
  /// Number of ranks (1: no other rank, nothing to synchronise).
  virtual int world_size() const = 0;
  /// Replaces `tensor` by the element-wise sum of every rank's `tensor`, blocking (on CUDA the
  /// current stream waits for the result). `tensor` is contiguous and on the device the ranks
  /// train on; every rank calls with the same shape and dtype, in the same order relative to
  /// its other collectives. Throws (std::runtime_error) when the collective fails.
  virtual void AllReduceSum(torch::Tensor& tensor) = 0;
};

/// While alive, ApplyBatchNorm on this thread synchronises the batch statistics of modules in
/// training mode over `sync`'s ranks (when sync is non-null and its world size is > 1). Scopes
/// nest: the destructor restores the previous one. Not copyable.
class SyncBatchNormScope {
 public:
  explicit SyncBatchNormScope(std::shared_ptr<CrossRankSum> sync);
  ~SyncBatchNormScope();
  SyncBatchNormScope(const SyncBatchNormScope&) = delete;
  SyncBatchNormScope& operator=(const SyncBatchNormScope&) = delete;

 private:
  std::shared_ptr<CrossRankSum> previous_;
};

/// The CrossRankSum of the innermost SyncBatchNormScope on this thread, or null.
std::shared_ptr<CrossRankSum> CurrentBatchNormSync();

/// `bn(x)`, synchronised across ranks when `bn` is in training mode and a SyncBatchNormScope of
/// world size > 1 is active on this thread (then exactly what SyncBatchNorm computes: see the top
/// of this file; num_batches_tracked counts the step as the module's forward does). x: [batch,
/// channels] or [batch, channels, frames] for BatchNorm1d, [batch, channels, H, W] for
/// BatchNorm2d, float32 or float64 (bfloat16 and float16 are normalised in float32 and returned
/// in their own type); the result has x's shape. Errors: what `bn(x)` throws for a wrong rank or
/// channel count (c10::Error); DataError when the synchronised minibatch holds fewer than two
/// values per channel over all ranks (all ranks throw alike); the CrossRankSum's errors.
torch::Tensor ApplyBatchNorm(torch::nn::BatchNorm1dImpl& bn, const torch::Tensor& x);
torch::Tensor ApplyBatchNorm(torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& x);

/// The functional form, always synchronised over `sync` (any world size, 1 included): the
/// batch-norm training forward pass of x [batch, channels, *] with `weight` and `bias` ([channels]
/// or undefined: no affine transform), updating `running_mean` and `running_var` ([channels];
/// undefined: not tracked) in place with `momentum` (PyTorch convention: new = (1 − momentum) ·
/// old + momentum · batch value), normalising with eps. A custom autograd function: gradients
/// flow to x, weight and bias (the backward pass all-reduces over `sync` when x needs a gradient).
/// Errors: std::invalid_argument for x with fewer than 2 dimensions or parameters and running
/// statistics that are not [channels]; DataError as ApplyBatchNorm; the CrossRankSum's errors.
torch::Tensor SyncBatchNorm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                            const torch::Tensor& running_mean, const torch::Tensor& running_var, double momentum,
                            double eps, const std::shared_ptr<CrossRankSum>& sync);

}  // namespace asv::nnet
