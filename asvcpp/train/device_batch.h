// The device half of a training minibatch: host batch (batch_source.h) -> network features on the
// training device. Feature batches need only the copy (HostToDevice); a recipe that augments
// audio and computes features on the device (speed perturbation, reverberation, noise, fbank)
// does that work here, on the training thread, so the loader threads only read data.
#pragma once

#include <torch/types.h>

#include "asvcpp/train/batch_loader.h"

namespace asv::train {

class DeviceBatchTransform {
 public:
  virtual ~DeviceBatchTransform() = default;

  /// Network input [batch, feat_dim, frames] float32 on `device` for `batch` (which it may move
  /// from), and the labels [batch] int64 on `device` (they may differ from the host labels, e.g.
  /// speed-perturbed copies as new speakers). Called on the training thread, batch after batch.
  /// Throws what LibTorch throws, DataError for a batch it cannot use.
  virtual std::pair<torch::Tensor, torch::Tensor> Apply(HostBatch& batch, const torch::Device& device) = 0;
};

/// The copy alone: features [batch, feat_dim, frames] and labels of a feature batch, page-locked
/// and asynchronous on a GPU (HostToDevice).
std::pair<torch::Tensor, torch::Tensor> CopyFeatureBatch(HostBatch& batch, const torch::Device& device);

}  // namespace asv::train
