// Per-step scalars of the training loop (the minibatch loss and the number of correctly
// classified clips) kept where they were computed and read to the host in groups.
//
// Why: reading a tensor on the host (Tensor::item) waits until the device has finished every
// kernel queued before it, a CUDA synchronisation. Read every step, as ASVtorch does
// (loss.item() per minibatch), the CPU cannot queue the next step's kernels while the device
// works, and the device idles while it queues them. Trainer::TrainEpoch and asv_bench_train add
// each step's readings here and read them every kReadInterval steps (and at each progress line
// and the end of the epoch), validation likewise per batch: one synchronisation per 16 steps, the
// same values, in the same order. On the CPU a read costs nothing either way.
#pragma once

#include <cstddef>
#include <vector>

#include <torch/types.h>

namespace asv::train {

class StepReadings {
 public:
  /// Steps read together (see the file comment).
  static constexpr std::size_t kReadInterval = 16;

  struct Step {
    double loss = 0;     ///< the minibatch's loss (the float32 value, exactly, as Tensor::item<double>)
    double correct = 0;  ///< clips whose arg-max logit is their label
  };

  /// Adds one step: `loss` and `correct` are 0-dim tensors on any device, of any dtype (the loss
  /// is detached here, so the readings keep no autograd graph alive). Returns true when
  /// kReadInterval steps are pending, i.e. it is time to Read(). Throws std::invalid_argument
  /// for a tensor that is not 0-dim.
  bool Add(const torch::Tensor& loss, const torch::Tensor& correct);

  /// The pending steps in the order they were added, read with one device-to-host copy per
  /// quantity; none pending afterwards. Waits for the device.
  std::vector<Step> Read();

  std::size_t pending() const { return losses_.size(); }

 private:
  std::vector<torch::Tensor> losses_;
  std::vector<torch::Tensor> correct_;
};

}  // namespace asv::train
