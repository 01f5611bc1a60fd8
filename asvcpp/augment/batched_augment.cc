#include "asvcpp/augment/batched_augment.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace asv::augment {
namespace {

// Smallest 2^a 3^b 5^c >= n (sizes every FFT library handles fast).
std::int64_t FastLength(std::int64_t n) {
  std::int64_t best = 1;
  while (best < n) best <<= 1;
  for (std::int64_t p5 = 1; p5 < best; p5 *= 5) {
    for (std::int64_t p35 = p5; p35 < best; p35 *= 3) {
      std::int64_t v = p35;
      while (v < n) v <<= 1;
      best = std::min(best, v);
    }
  }
  return best;
}

bool HasRows(const torch::Tensor& t) {
  return t.defined() && t.size(0) > 0;
}

void Require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("ApplyAugmentation: " + what);
}

void CheckRows(const torch::Tensor& t, std::int64_t rows, torch::ScalarType type, const torch::Device& device,
               const char* name) {
  Require(t.defined() && t.dim() == 1 && t.size(0) == rows && t.scalar_type() == type && t.device() == device,
          fmt::format("{} must be a 1-D tensor of {} rows of {} on {}", name, rows, c10::toString(type), device.str()));
}

struct Ratio {
  std::int64_t orig;
  std::int64_t next;
};

// orig : new of SpeedPerturb, reduced by their gcd.
Ratio SpeedRatio(double factor, int sample_rate) {
  if (sample_rate < 1) throw std::invalid_argument("SpeedPerturb: the sample rate must be at least 1 Hz");
  const double scaled = std::round(factor * sample_rate);
  if (!(factor > 0.0) || !std::isfinite(factor) || scaled < 1.0 || scaled > 1e9) {
    throw std::invalid_argument(
        fmt::format("SpeedPerturb: speed factor {} at {} Hz is not a usable rate", factor, sample_rate));
  }
  const auto orig = static_cast<std::int64_t>(scaled);
  const std::int64_t g = std::gcd(orig, static_cast<std::int64_t>(sample_rate));
  return {orig / g, sample_rate / g};
}

}  // namespace

AugmentationInputs AugmentationInputs::To(const torch::Device& device, bool non_blocking) const {
  AugmentationInputs out;
  out.segment_samples = segment_samples;
  using Field = std::pair<const torch::Tensor*, torch::Tensor*>;
  for (const auto& [from, to] : std::initializer_list<Field>{{&rirs, &out.rirs},
                                                             {&rir_segment, &out.rir_segment},
                                                             {&rir_length, &out.rir_length},
                                                             {&rir_peak, &out.rir_peak},
                                                             {&noise, &out.noise},
                                                             {&noise_segment, &out.noise_segment},
                                                             {&noise_length, &out.noise_length},
                                                             {&noise_snr_db, &out.noise_snr_db}}) {
    if (from->defined()) *to = from->to(device, non_blocking);
  }
  return out;
}

AugmentationInputs CutAugmentationInputs(const NoiseBank& bank, const std::vector<SegmentDraw>& draws,
                                         std::int64_t segment_samples) {
  if (segment_samples < 1) throw std::invalid_argument("CutAugmentationInputs: segment_samples must be at least 1");
  const auto n = segment_samples;
  std::vector<std::shared_ptr<const std::vector<std::int16_t>>> rirs;
  std::vector<std::int64_t> rir_segment, rir_length, rir_peak;
  std::int64_t longest = 1;
  std::int64_t pieces = 0;
  for (std::size_t b = 0; b < draws.size(); ++b) {
    const SegmentDraw& d = draws[b];
    const bool additive =
        d.kind == SegmentKind::kNoise || d.kind == SegmentKind::kMusic || d.kind == SegmentKind::kBabble;
    if (!additive && !d.pieces.empty()) {
      throw std::invalid_argument(
          fmt::format("CutAugmentationInputs: segment {} of kind {} has noise pieces", b, SegmentKindName(d.kind)));
    }
    for (const NoisePiece& p : d.pieces) {
      if (p.length < 1 || p.start < 0 || p.start > n - p.length) {
        throw std::invalid_argument(
            fmt::format("CutAugmentationInputs: segment {}: a piece of {} samples at {} does "
                        "not fit in {} samples",
                        b, p.length, p.start, n));
      }
    }
    pieces += static_cast<std::int64_t>(d.pieces.size());
    if (d.kind != SegmentKind::kReverb) continue;
    auto h = bank.RirSamples(d.rir_set, d.rir);
    rir_segment.push_back(static_cast<std::int64_t>(b));
    rir_length.push_back(static_cast<std::int64_t>(h->size()));
    rir_peak.push_back(static_cast<std::int64_t>(std::max_element(h->begin(), h->end()) - h->begin()));
    longest = std::max(longest, rir_length.back());
    rirs.push_back(std::move(h));
  }
  const auto as_tensor = [](const std::vector<std::int64_t>& v) {
    return torch::tensor(torch::ArrayRef<std::int64_t>(v), torch::kInt64)
        .reshape({static_cast<std::int64_t>(v.size())});
  };
  AugmentationInputs in;
  in.segment_samples = n;
  in.rirs = torch::zeros({static_cast<std::int64_t>(rirs.size()), longest}, torch::kFloat32);
  for (std::size_t r = 0; r < rirs.size(); ++r) {
    float* row = in.rirs.data_ptr<float>() + static_cast<std::int64_t>(r) * longest;
    std::copy(rirs[r]->begin(), rirs[r]->end(), row);
  }
  in.rir_segment = as_tensor(rir_segment);
  in.rir_length = as_tensor(rir_length);
  in.rir_peak = as_tensor(rir_peak);

  in.noise = torch::zeros({pieces, n}, torch::kFloat32);
  std::vector<std::int64_t> noise_segment, noise_length;
  std::vector<float> snrs;
  for (std::size_t b = 0; b < draws.size(); ++b) {
    for (const NoisePiece& p : draws[b].pieces) {
      const std::vector<float> samples = CutPiece(bank, draws[b].kind, p);
      float* row = in.noise.data_ptr<float>() + static_cast<std::int64_t>(noise_segment.size()) * n;
      std::copy(samples.begin(), samples.end(), row + p.start);
      noise_segment.push_back(static_cast<std::int64_t>(b));
      noise_length.push_back(p.length);
      snrs.push_back(static_cast<float>(p.snr_db));
    }
  }
  in.noise_segment = as_tensor(noise_segment);
  in.noise_length = as_tensor(noise_length);
  in.noise_snr_db = torch::tensor(torch::ArrayRef<float>(snrs), torch::kFloat32).reshape({pieces});
  return in;
}

torch::Tensor ApplyAugmentation(const torch::Tensor& segments, const AugmentationInputs& in) {
  Require(segments.defined() && segments.dim() == 2 && segments.scalar_type() == torch::kFloat32,
          "segments must be a 2-D float32 tensor [batch, samples]");
  const std::int64_t n = segments.size(1);
  Require(n == in.segment_samples,
          fmt::format("segments have {} samples, the inputs were cut for {}", n, in.segment_samples));
  const torch::Device device = segments.device();
  torch::NoGradGuard no_grad;
  torch::Tensor out = segments.clone();
  const torch::Tensor power_before = segments.square().mean(1);  // [B]
  const auto zeros_like = [](const torch::Tensor& t) { return torch::zeros_like(t); };

  if (HasRows(in.rirs)) {
    const std::int64_t r = in.rirs.size(0);
    Require(in.rirs.dim() == 2 && in.rirs.scalar_type() == torch::kFloat32 && in.rirs.device() == device,
            "rirs must be a 2-D float32 tensor on the segments' device");
    CheckRows(in.rir_segment, r, torch::kInt64, device, "rir_segment");
    CheckRows(in.rir_length, r, torch::kInt64, device, "rir_length");
    CheckRows(in.rir_peak, r, torch::kInt64, device, "rir_peak");
    const std::int64_t l = in.rirs.size(1);
    const std::int64_t full = n + l - 1;
    const std::int64_t fft = FastLength(full);
    const torch::Tensor x = segments.index_select(0, in.rir_segment);
    const torch::Tensor h = in.rirs * (1.0 / 32768.0);  // wav-reverberate's scaling of a 16-bit RIR
    const torch::Tensor y =
        torch::fft::irfft(torch::fft::rfft(x, fft, -1) * torch::fft::rfft(h, fft, -1), fft, -1).narrow(1, 0, full);
    // The mean square over the row's own N + length - 1 samples (beyond them y is 0 but for rounding).
    const torch::Tensor power_after = y.square().sum(1) / (in.rir_length + (n - 1)).to(torch::kFloat32);
    const torch::Tensor index = torch::arange(n, in.rir_peak.options()).unsqueeze(0) + in.rir_peak.unsqueeze(1);
    const torch::Tensor before = power_before.index_select(0, in.rir_segment);
    const torch::Tensor gain =
        torch::where(power_after > 0, (before / power_after.clamp_min(FLT_MIN)).sqrt(), zeros_like(power_after));
    out.index_copy_(0, in.rir_segment, y.gather(1, index) * gain.unsqueeze(1));
  }

  if (HasRows(in.noise)) {
    const std::int64_t t = in.noise.size(0);
    Require(in.noise.dim() == 2 && in.noise.size(1) == n && in.noise.scalar_type() == torch::kFloat32 &&
                in.noise.device() == device,
            fmt::format("noise must be a float32 tensor [pieces, {}] on the segments' device", n));
    CheckRows(in.noise_segment, t, torch::kInt64, device, "noise_segment");
    CheckRows(in.noise_length, t, torch::kInt64, device, "noise_length");
    CheckRows(in.noise_snr_db, t, torch::kFloat32, device, "noise_snr_db");
    const torch::Tensor noise_power = in.noise.square().sum(1) / in.noise_length.to(torch::kFloat32) + FLT_EPSILON;
    const torch::Tensor signal_power = power_before.index_select(0, in.noise_segment);
    const torch::Tensor scale = (torch::pow(10.0, in.noise_snr_db * -0.1) * signal_power / noise_power).sqrt();
    const torch::Tensor mixed = segments.index_add(0, in.noise_segment, in.noise * scale.unsqueeze(1));
    const torch::Tensor power_after = mixed.square().mean(1);
    const torch::Tensor gain =
        torch::where(power_after > 0, (power_before / power_after.clamp_min(FLT_MIN)).sqrt(), zeros_like(power_after));
    const torch::Tensor noised =
        torch::zeros({segments.size(0)}, segments.options().dtype(torch::kBool)).index_fill_(0, in.noise_segment, true);
    out = torch::where(noised.unsqueeze(1), mixed * gain.unsqueeze(1), out);
  }
  return out;
}

torch::Tensor SpeedPerturb(const torch::Tensor& segments, double factor, int sample_rate) {
  if (!segments.defined() || segments.dim() != 2 || segments.scalar_type() != torch::kFloat32) {
    throw std::invalid_argument("SpeedPerturb: segments must be a 2-D float32 tensor [batch, samples]");
  }
  const Ratio ratio = SpeedRatio(factor, sample_rate);
  if (ratio.orig == ratio.next) return segments;
  const std::int64_t batch = segments.size(0);
  const std::int64_t n = segments.size(1);
  const std::int64_t out_length = n * ratio.next / ratio.orig;
  if (out_length == 0 || batch == 0) return torch::zeros({batch, out_length}, segments.options());

  // torchaudio's sinc_interp_hann kernel: one row of taps per output phase p (output sample
  // j = frame * next + p), tap k on input sample frame * orig + k - width.
  constexpr double kWidth = 6.0;  // lowpass_filter_width, zero crossings on each side
  constexpr double kRolloff = 0.99;
  constexpr double kPi = 3.14159265358979323846;
  const auto orig = static_cast<double>(ratio.orig);
  const auto next = static_cast<double>(ratio.next);
  const double cutoff = kRolloff * std::min(orig, next);
  const auto width = static_cast<std::int64_t>(std::ceil(kWidth * orig / cutoff));
  const std::int64_t taps = 2 * width + ratio.orig;
  torch::Tensor kernel = torch::empty({ratio.next, 1, taps}, torch::kFloat64);
  double* k = kernel.data_ptr<double>();
  for (std::int64_t p = 0; p < ratio.next; ++p) {
    for (std::int64_t tap = 0; tap < taps; ++tap) {
      double t = (static_cast<double>(tap - width) / orig - static_cast<double>(p) / next) * cutoff;
      t = std::clamp(t, -kWidth, kWidth);
      const double window = std::pow(std::cos(t * kPi / (2.0 * kWidth)), 2);
      const double sinc = t == 0.0 ? 1.0 : std::sin(kPi * t) / (kPi * t);
      *k++ = sinc * window * cutoff / orig;
    }
  }
  const torch::Tensor padded = torch::constant_pad_nd(segments, {width, width + ratio.orig}, 0).unsqueeze(1);
  const torch::Tensor y = torch::conv1d(padded, kernel.to(segments.options()), {}, ratio.orig);  // [B, next, frames]
  return y.transpose(1, 2).reshape({batch, -1}).narrow(1, 0, out_length).contiguous();
}

std::int64_t SpeedSourceSamples(std::int64_t output_samples, double factor, int sample_rate) {
  if (output_samples < 0) throw std::invalid_argument("SpeedSourceSamples: negative output length");
  const Ratio ratio = SpeedRatio(factor, sample_rate);
  return (output_samples * ratio.orig + ratio.next - 1) / ratio.next;
}

}  // namespace asv::augment
