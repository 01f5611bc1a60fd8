// Numeric precision of training: bfloat16 autocast and TF32 math modes
// (PyTorch's autocast, aten/src/ATen/autocast_mode.h, and the TF32 flags of at::globalContext(),
// aten/src/ATen/Context.h).
//
// network.precision = 'bf16' runs the training forward pass and loss under autocast, as
// Python's `with torch.autocast(device_type, dtype=torch.bfloat16):` does: matmuls and
// convolutions run in bfloat16, reductions and losses stay in float32 (LibTorch's per-op
// autocast lists). Parameters, gradients and the optimizer stay float32 ("master weights"), and
// backward runs outside the autocast region. bfloat16 has float32's exponent range, so no loss
// scaling (GradScaler) is needed. On CUDA this pays off on Ampere and newer (A100, H100, H200);
// on the CPU it uses LibTorch's CPU autocast, which is mainly useful for tests.
//
// computing.allow_tf32 = True lets cuBLAS matmuls and cuDNN convolutions of float32 tensors use
// TF32 tensor cores on Ampere and newer (10-bit mantissa inputs, float32 accumulation).
//
//   asv::train::ApplyMathModes(computing.allow_tf32);    // once per process, before training
//   options.precision = network.precision;
//   {
//     asv::train::AutocastGuard autocast(options.precision, options.device);
//     logits = net->forward(x);  loss = cross_entropy(logits, y);
//   }
//   loss.backward();
// No LibTorch in this header.
#pragma once

#include <string>

#include "asvcpp/enums/train_types.h"

namespace asv::train {

/// While alive, autocast is on for `device` with the dtype of `precision`, on the calling thread
/// (autocast state is thread-local). Emulates Python's torch.autocast context manager: saves the
/// device's autocast state, enables it with the dtype and increments the nesting level; the
/// destructor decrements it, clears the cast cache when it reaches 0 (the cache holds bfloat16
/// copies of weights the optimizer is about to change) and restores the saved state, so guards
/// nest. kFloat32 does nothing (and accepts any device).
///
/// `device` is a LibTorch device string: "cpu", "cuda" or "cuda:N". Throws ConfigError for
/// another device type with kBFloat16.
class AutocastGuard {
 public:
  AutocastGuard(Precision precision, const std::string& device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false;
  bool cuda_ = false;
  bool previous_enabled_ = false;
  int previous_dtype_ = 0;  // at::ScalarType
};

/// Process-wide math modes (at::globalContext()): with `allow_tf32`, float32 matmuls on cuBLAS and
/// convolutions on cuDNN may use TF32 tensor cores (Ampere and newer); without, both use full
/// float32. LibTorch's own defaults are off for matmuls and on for convolutions. Has no effect
/// on CPU computations; safe to call on builds without CUDA. Call once per process before
/// training.
void ApplyMathModes(bool allow_tf32);

}  // namespace asv::train
