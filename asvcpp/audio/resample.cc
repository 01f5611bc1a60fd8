#include "asvcpp/audio/resample.h"

#include <fmt/format.h>
#include <soxr.h>

#include <stdexcept>

namespace asv::audio {

std::vector<float> Resample(const std::vector<float>& input, int input_rate, int output_rate) {
  if (input_rate <= 0 || output_rate <= 0) {
    throw std::invalid_argument(
        fmt::format("Resample: sample rates must be positive (got {} and {})", input_rate, output_rate));
  }
  if (input_rate == output_rate || input.empty()) return input;
  const double ratio = static_cast<double>(output_rate) / input_rate;
  std::vector<float> output(static_cast<std::size_t>(static_cast<double>(input.size()) * ratio + 1.5));
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  // soxr_oneshot() defaults to the low-quality preset; ask for HQ explicitly.
  const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
  std::size_t done = 0;
  const soxr_error_t error = soxr_oneshot(input_rate, output_rate, 1, input.data(), input.size(),
                                          nullptr, output.data(), output.size(), &done, &io,
                                          &quality, nullptr);
  if (error) throw std::runtime_error(fmt::format("soxr: {}", error));
  output.resize(done);
  return output;
}

}  // namespace asv::audio
