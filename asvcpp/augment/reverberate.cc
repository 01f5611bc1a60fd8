#include "asvcpp/augment/reverberate.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

namespace asv::augment {
namespace {

double MeanSquare(const std::vector<float>& x, std::size_t begin, std::size_t end) {
  double sum = 0.0;
  for (std::size_t i = begin; i < end; ++i) sum += static_cast<double>(x[i]) * x[i];
  return end > begin ? sum / static_cast<double>(end - begin) : 0.0;
}

// Index of the largest sample (the first of equal ones), as Kaldi's VectorBase::Max(&index).
std::size_t PeakIndex(const std::vector<float>& x) {
  return static_cast<std::size_t>(std::max_element(x.begin(), x.end()) - x.begin());
}

}  // namespace

std::vector<float> Convolve(const std::vector<float>& signal, const std::vector<float>& filter) {
  if (signal.empty() || filter.empty()) throw std::invalid_argument("Convolve: empty signal or filter");
  const auto n = static_cast<std::int64_t>(signal.size());
  const auto l = static_cast<std::int64_t>(filter.size());
  const std::int64_t out_length = n + l - 1;
  std::int64_t fft = 1;
  while (fft < 4 * l) fft <<= 1;
  const std::int64_t block = fft - l + 1;
  const auto as_double = [](const std::vector<float>& v, std::int64_t begin, std::int64_t count) {
    return torch::from_blob(const_cast<float*>(v.data()) + begin, {count}, torch::kFloat32).to(torch::kFloat64);
  };
  const torch::Tensor h = torch::fft::rfft(as_double(filter, 0, l), fft);
  torch::Tensor out = torch::zeros({out_length}, torch::kFloat64);
  for (std::int64_t begin = 0; begin < n; begin += block) {
    const std::int64_t count = std::min(block, n - begin);
    const torch::Tensor y = torch::fft::irfft(torch::fft::rfft(as_double(signal, begin, count), fft) * h, fft);
    const std::int64_t used = std::min(count + l - 1, out_length - begin);
    out.slice(0, begin, begin + used).add_(y.slice(0, 0, used));
  }
  const torch::Tensor y = out.to(torch::kFloat32).contiguous();
  return {y.data_ptr<float>(), y.data_ptr<float>() + out_length};
}

std::size_t QuantizeToInt16(std::vector<float>& samples) {
  std::size_t clipped = 0;
  for (float& v : samples) {
    const float t = std::trunc(v);
    if (t < -32768.0f || t > 32767.0f) ++clipped;
    v = std::clamp(t, -32768.0f, 32767.0f);
  }
  return clipped;
}

std::vector<float> RepeatToLength(const std::vector<float>& signal, std::size_t length) {
  if (signal.empty() && length > 0) throw std::invalid_argument("RepeatToLength: empty signal");
  std::vector<float> out(length);
  for (std::size_t pos = 0; pos < length; pos += signal.size()) {
    const std::size_t n = std::min(signal.size(), length - pos);
    std::copy(signal.begin(), signal.begin() + static_cast<std::ptrdiff_t>(n),
              out.begin() + static_cast<std::ptrdiff_t>(pos));
  }
  return out;
}

std::vector<float> Reverberate(const std::vector<float>& input, const std::vector<float>* rir,
                               const std::vector<AdditiveSignal>& additive, int sample_rate) {
  if (input.empty()) throw std::invalid_argument("Reverberate: empty input");
  if (sample_rate <= 0) throw std::invalid_argument("Reverberate: sample rate must be positive");
  const std::size_t n = input.size();
  const double power_before = MeanSquare(input, 0, n);
  std::vector<float> signal = input;
  double signal_power = power_before;
  std::size_t shift = 0;
  if (rir != nullptr) {
    if (rir->empty()) throw std::invalid_argument("Reverberate: empty RIR");
    std::vector<float> h(rir->size());
    std::transform(rir->begin(), rir->end(), h.begin(), [](float v) { return v / 32768.0f; });
    shift = PeakIndex(h);
    // Early reverberation: 1 ms before the peak to 50 ms after (wav-reverberate.cc,
    // ComputeEarlyReverbEnergy; the indices truncated to whole samples as there). Only additive
    // signals use its power, so without them the second convolution is skipped.
    if (!additive.empty()) {
      const auto peak = static_cast<std::int64_t>(shift);
      const std::int64_t early_begin = peak - static_cast<std::int64_t>(0.001 * sample_rate);
      const std::int64_t early_end = peak + static_cast<std::int64_t>(0.05 * sample_rate);
      const auto begin = static_cast<std::size_t>(std::max<std::int64_t>(0, early_begin));
      const auto end = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(h.size()), early_end));
      const std::vector<float> early(h.begin() + static_cast<std::ptrdiff_t>(begin),
                                     h.begin() + static_cast<std::ptrdiff_t>(end));
      const std::vector<float> early_reverb = Convolve(input, early);
      signal_power = MeanSquare(early_reverb, 0, early_reverb.size());
    }
    signal = Convolve(input, h);
  }
  for (const AdditiveSignal& a : additive) {
    if (a.samples == nullptr || a.samples->empty()) throw std::invalid_argument("Reverberate: empty additive signal");
    if (!(a.start_seconds >= 0.0)) throw std::invalid_argument("Reverberate: negative start time");
    // wav-reverberate adds FLT_EPSILON so that a silent noise does not divide by zero.
    const double noise_power = MeanSquare(*a.samples, 0, a.samples->size()) + FLT_EPSILON;
    const double scale = std::sqrt(std::pow(10.0, -a.snr_db / 10.0) * signal_power / noise_power);
    const auto offset = static_cast<std::size_t>(a.start_seconds * sample_rate);
    if (offset >= signal.size()) continue;
    const std::size_t count = std::min(a.samples->size(), signal.size() - offset);
    for (std::size_t i = 0; i < count; ++i) {
      signal[offset + i] += static_cast<float>(scale * (*a.samples)[i]);
    }
  }
  const double power_after = MeanSquare(signal, 0, signal.size());
  const double gain = power_after > 0.0 ? std::sqrt(power_before / power_after) : 0.0;
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(gain * signal[shift + i]);
  return out;
}

}  // namespace asv::augment
