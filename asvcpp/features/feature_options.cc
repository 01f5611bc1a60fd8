#include "asvcpp/features/feature_options.h"

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/features/kaldi_options.h"

namespace asv::features {

std::int32_t FrameOptions::WindowShift() const {
  return static_cast<std::int32_t>(samp_freq * 0.001 * frame_shift_ms);
}

std::int32_t FrameOptions::WindowSize() const {
  return static_cast<std::int32_t>(samp_freq * 0.001 * frame_length_ms);
}

std::int32_t FrameOptions::PaddedWindowSize() const {
  const std::int32_t n = WindowSize();
  if (!round_to_power_of_two) return n;
  std::int32_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

void FrameOptions::Register(KaldiOptions* opts) {
  opts->Register("sample-frequency", &samp_freq, "Waveform data sample frequency (must match the waveform file)");
  opts->Register("frame-length", &frame_length_ms, "Frame length in milliseconds");
  opts->Register("frame-shift", &frame_shift_ms, "Frame shift in milliseconds");
  opts->Register("preemphasis-coefficient", &preemph_coeff, "Coefficient for use in signal preemphasis");
  opts->Register("remove-dc-offset", &remove_dc_offset, "Subtract mean from waveform on each frame");
  opts->Register("dither", &dither, "Dithering constant (0.0 means no dither)");
  opts->Register("window-type", &window_type,
                 "Type of window (\"hamming\"|\"hanning\"|\"povey\"|\"rectangular\"|\"sine\"|\"blackman\")");
  opts->Register("blackman-coeff", &blackman_coeff, "Constant coefficient for generalized Blackman window");
  opts->Register("round-to-power-of-two", &round_to_power_of_two,
                 "If true, round window size to power of two by zero-padding input to FFT");
  opts->Register("snip-edges", &snip_edges,
                 "If true, output only frames that completely fit in the file; if false, the number of "
                 "frames depends only on the frame shift and the data is reflected at the ends");
  opts->Register("allow-downsample", &allow_downsample,
                 "If true, allow the input waveform to have a higher frequency than --sample-frequency");
  opts->Register("allow-upsample", &allow_upsample,
                 "If true, allow the input waveform to have a lower frequency than --sample-frequency");
}

void FrameOptions::Validate() const {
  if (!(samp_freq > 0)) throw DataError(fmt::format("--sample-frequency must be positive, got {}", samp_freq));
  if (WindowShift() <= 0)
    throw DataError(fmt::format("--frame-shift={} ms gives a shift of {} samples", frame_shift_ms, WindowShift()));
  if (WindowSize() < 2)
    throw DataError(fmt::format("--frame-length={} ms gives a window of {} samples", frame_length_ms, WindowSize()));
  if (window_type != "povey" && window_type != "hamming" && window_type != "hanning" && window_type != "sine" &&
      window_type != "rectangular" && window_type != "blackman") {
    throw DataError(
        fmt::format("--window-type={}: expected povey, hamming, hanning, sine, rectangular or blackman", window_type));
  }
  if (!(preemph_coeff >= 0.0f && preemph_coeff <= 1.0f))
    throw DataError(fmt::format("--preemphasis-coefficient must be in [0, 1], got {}", preemph_coeff));
  if (!(dither >= 0.0f)) throw DataError(fmt::format("--dither must be >= 0, got {}", dither));
}

void MelOptions::Register(KaldiOptions* opts) {
  opts->Register("num-mel-bins", &num_bins, "Number of triangular mel-frequency bins");
  opts->Register("low-freq", &low_freq, "Low cutoff frequency for mel bins");
  opts->Register("high-freq", &high_freq, "High cutoff frequency for mel bins (if <= 0, offset from Nyquist)");
  opts->Register("vtln-low", &vtln_low, "Low inflection point in piecewise linear VTLN warping function");
  opts->Register("vtln-high", &vtln_high,
                 "High inflection point in piecewise linear VTLN warping function (if negative, offset "
                 "from high-mel-freq)");
  opts->Register("debug-mel", &debug_mel, "Print out debugging information for mel bin computation");
}

void MelOptions::Validate() const {
  if (num_bins < 3) throw DataError(fmt::format("--num-mel-bins must be at least 3, got {}", num_bins));
}

void MfccOptions::Register(KaldiOptions* opts) {
  frame_opts.Register(opts);
  mel_opts.Register(opts);
  opts->Register("num-ceps", &num_ceps, "Number of cepstra in MFCC computation (including C0)");
  opts->Register("use-energy", &use_energy, "Use energy (not C0) in MFCC computation");
  opts->Register("energy-floor", &energy_floor,
                 "Floor on energy (absolute, not relative) in MFCC computation; only matters with "
                 "--use-energy=true and --dither=0");
  opts->Register("raw-energy", &raw_energy, "If true, compute energy before preemphasis and windowing");
  opts->Register("cepstral-lifter", &cepstral_lifter, "Constant that controls scaling of MFCCs");
  opts->Register("htk-compat", &htk_compat, "If true, put energy or C0 last and use a factor of sqrt(2) on C0");
}

void MfccOptions::Validate() const {
  frame_opts.Validate();
  mel_opts.Validate();
  if (num_ceps < 1 || num_ceps > mel_opts.num_bins) {
    throw DataError(fmt::format("--num-ceps must be in [1, --num-mel-bins={}], got {}", mel_opts.num_bins, num_ceps));
  }
  if (!(cepstral_lifter >= 0.0f))
    throw DataError(fmt::format("--cepstral-lifter must be >= 0, got {}", cepstral_lifter));
  if (energy_floor < 0.0f) throw DataError(fmt::format("--energy-floor must be >= 0, got {}", energy_floor));
}

void FbankOptions::Register(KaldiOptions* opts) {
  frame_opts.Register(opts);
  mel_opts.Register(opts);
  opts->Register("use-energy", &use_energy, "Add an extra dimension with energy to the FBANK output");
  opts->Register("energy-floor", &energy_floor, "Floor on energy (absolute, not relative) in FBANK computation");
  opts->Register("raw-energy", &raw_energy, "If true, compute energy before preemphasis and windowing");
  opts->Register("htk-compat", &htk_compat, "If true, put energy last");
  opts->Register("use-log-fbank", &use_log_fbank, "If true, produce log-filterbank, else produce linear");
  opts->Register("use-power", &use_power, "If true, use power, else use magnitude");
}

void FbankOptions::Validate() const {
  frame_opts.Validate();
  mel_opts.Validate();
  if (energy_floor < 0.0f) throw DataError(fmt::format("--energy-floor must be >= 0, got {}", energy_floor));
}

FbankOptions WespeakerFbankOptions() {
  FbankOptions o;
  o.frame_opts.samp_freq = 16000.0f;
  o.frame_opts.frame_length_ms = 25.0f;
  o.frame_opts.frame_shift_ms = 10.0f;
  o.frame_opts.dither = 1.0f;
  o.frame_opts.window_type = "hamming";
  o.frame_opts.snip_edges = true;
  o.mel_opts.num_bins = 80;
  o.use_energy = false;
  o.energy_floor = 1.0f;  // torchaudio's default (Kaldi's is 0); unused without use_energy
  return o;
}

}  // namespace asv::features
