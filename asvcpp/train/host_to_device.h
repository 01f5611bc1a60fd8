// Moving a minibatch from host memory to the training device without waiting for the device.
//
// LibTorch's Tensor::to(cuda) from ordinary (pageable) host memory ends with a synchronisation of
// the current CUDA stream (the copy is made blocking), so a training loop that copies each
// minibatch that way waits every step until the device has finished the previous step, whatever
// else it avoids (StepReadings). PyTorch's answer, DataLoader(pin_memory=True) with
// .to(device, non_blocking=True), is what this does: the batch is copied into page-locked memory
// from LibTorch's caching host allocator, which keeps the block until the asynchronous copy has
// run, and the copy is queued on the current stream behind the previous step's kernels.
#pragma once

#include <torch/types.h>

namespace asv::train {

/// `host` on `device`: itself for a CPU device or a tensor already on `device`; otherwise a page-locked copy of it queued for an
/// asynchronous host-to-device copy on the current CUDA stream (same shape and dtype; kernels
/// queued after it on that stream see the data). `host` may be freed or reused as soon as this
/// returns. Throws c10::Error when the device is not available.
torch::Tensor HostToDevice(const torch::Tensor& host, const torch::Device& device);

}  // namespace asv::train
