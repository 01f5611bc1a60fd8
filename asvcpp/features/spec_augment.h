// SpecAugment's time and frequency masks on a batch of feature segments as LibTorch operations,
// on any device, with WeSpeaker's semantics and defaults (WeSpeaker
// wespeaker/dataset/processor.py, spec_aug). For each segment, with probability `prob`:
// `num_t_mask` times, a start frame uniform in [0, frames - 1] and a width uniform in [1, max_t]
// (both inclusive), frames [start, min(frames, start + width)) set to 0; then `num_f_mask` times
// the same over the feature dimensions with max_f. Masks may overlap. WeSpeaker applies it after
// the per-segment mean normalisation (SubtractSegmentMean in batched_fbank.h), so 0 is the mean.
// Needs LibTorch (library asv_features_torch).
#pragma once

#include <torch/torch.h>

#include "asvcpp/features/spec_augment_options.h"

#include <cstdint>
#include <optional>

namespace asv::features {

/// Returns `features` [batch, frames, dim] (floating point, any device) with the masks of
/// SpecAugmentOptions applied as a new tensor (the input is not modified); same shape, dtype and
/// device. Random numbers come from `generator` (on the features' device type; the device's
/// default generator when empty), drawn in a fixed order as whole-batch tensors on the device (one
/// uniform per segment for `prob`, then the time-mask starts and widths, then the frequency-mask
/// starts and widths, each [batch, count]), so a generator in the same state gives the same masks
/// for the same shape on the same device. A tensor with no segments, frames or dimensions comes back
/// unchanged (copied) and draws nothing. Throws ConfigError for invalid `opts`, std::invalid_argument when
/// `features` is not a 3-D floating-point tensor or the generator is on another device type.
torch::Tensor SpecAugment(const torch::Tensor& features, const SpecAugmentOptions& opts,
                          const std::optional<torch::Generator>& generator = std::nullopt);

}  // namespace asv::features
