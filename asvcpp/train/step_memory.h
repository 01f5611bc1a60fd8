// The memory of one training step, measured on the CPU before anything runs, for `asvrun
// --dry-run`'s estimate (asvcpp/recipe/memory_check.h compares it with what the device has).
#pragma once

#include <cstdint>
#include <vector>

#include "asvcpp/nnet/speaker_net.h"

namespace asv::train {

/// The memory of a training step: the model's weights and optimizer state, and the memory over
/// the step (activations, their gradients, the parameters' gradients) as lines in the number of
/// examples.
struct StepMemory {
  /// `fixed` bytes plus `per_example` bytes per example, in use at once at some moment of the step.
  struct Line {
    double fixed = 0;
    double per_example = 0;
  };
  std::int64_t parameters = 0;    ///< Trainable parameters (the head included).
  std::uint64_t model_bytes = 0;  ///< Weights and optimizer state, float32.
  std::vector<Line> step;         ///< One line per moment of the step (allocation or free).
  std::int64_t frames = 0;        ///< The frames of an example the lines are scaled to.
};

/// Measures the memory of training `net` on examples of `frames` frames of `feat_dim` features.
/// model_bytes = parameters x 4 bytes x (1 + optimizer_slots) (SGD with momentum keeps 1 buffer
/// per parameter, AdamW 2). The step: two forward and backward passes of zeros, as the trainer's
/// pre-flight step runs them (train mode, cross-entropy over the head's logits), of 2 and 4
/// examples of min(frames, 64) frames (after a first pass of 2 that makes LibTorch's one-time
/// allocations), with LibTorch's CPU allocator counting the bytes of every
/// tensor alive after each allocation and free. The two passes make the same allocations in the
/// same order, only of other sizes, so the bytes in use at each moment are fixed + examples x
/// per_example with the two unknowns given by the two passes (per_example scaled by frames /
/// min(frames, 64): the activations of asvcpp's networks grow linearly with the frames). The
/// step's peak for any batch is then the largest line there, also where the moment of the peak
/// moves with the batch (the parameters' gradients decide it for small batches, the activations
/// for large ones). Where the passes differ in their allocations, one line through the two peaks.
/// An estimate of the float32 step on the CPU: bf16 autocast and CUDA (cuDNN workspaces, the
/// CUDA context) differ. `net` must be on the CPU; its buffers (BatchNorm statistics) are
/// restored and its gradients cleared afterwards. Costs three training steps of 2, 2 and 4 short
/// examples. Throws what LibTorch throws (the net's own shape errors).
StepMemory MeasureStepMemory(nnet::SpeakerNet& net, std::int64_t feat_dim, std::int64_t frames, int optimizer_slots);

}  // namespace asv::train
