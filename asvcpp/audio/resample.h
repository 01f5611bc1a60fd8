// Sample-rate conversion with libsoxr.
#pragma once

#include <vector>

namespace asv::audio {

/// Resamples a mono signal from `input_rate` Hz to `output_rate` Hz with soxr's high-quality
/// preset (SOXR_HQ: 20-bit precision, linear phase, pass band ending at 91.3 % of the lower
/// Nyquist frequency). The output has round(n * output_rate / input_rate) samples for n input
/// samples; values are not clipped (they may slightly overshoot the input range). Returns the
/// input unchanged when the rates are equal. Throws std::invalid_argument for a rate <= 0 and
/// std::runtime_error when soxr reports an error. Thread-safe (one-shot soxr object per call).
std::vector<float> Resample(const std::vector<float>& input, int input_rate, int output_rate);

}  // namespace asv::audio
