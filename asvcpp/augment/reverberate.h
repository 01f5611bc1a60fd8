// Reverberation and additive noise as Kaldi's wav-reverberate (src/featbin/wav-reverberate.cc)
// computes them, the program behind Kaldi's steps/data/reverberate_data_dir.py and
// steps/data/augment_data_dir.py, for mono signals in the int16 value range (asvcpp's and Kaldi's
// convention for decoded audio).
#pragma once

#include <cstddef>
#include <vector>

namespace asv::augment {

/// y[n] = sum_k filter[k] signal[n - k] for n = 0 .. signal.size() + filter.size() - 2 (the full
/// linear convolution), by overlap-add as Kaldi's FFTbasedBlockConvolveSignal: real FFTs of
/// F = the power of two >= 4 filter.size(), signal blocks of F - filter.size() + 1 samples, in
/// double precision (LibTorch's torch::fft), so memory stays O(F) however long the signal.
/// Throws std::invalid_argument when either input is empty.
std::vector<float> Convolve(const std::vector<float>& signal, const std::vector<float>& filter);

/// `signal` tiled (repeated from its start) or cut to `length` samples: wav-reverberate
/// --duration for a signal without RIR or additive signals. Throws std::invalid_argument when
/// `signal` is empty and `length` > 0.
std::vector<float> RepeatToLength(const std::vector<float>& signal, std::size_t length);

/// `samples` as a 16-bit WAV file holds them, which is how wav-reverberate hands its output to
/// the feature extraction (Kaldi's WaveData::Write): each value truncated toward zero and
/// clipped to [-32768, 32767]. Returns the number of samples that were clipped.
std::size_t QuantizeToInt16(std::vector<float>& samples);

/// One additive signal of wav-reverberate (--additive-signals, --snrs, --start-times).
struct AdditiveSignal {
  const std::vector<float>* samples = nullptr;  ///< The noise, int16 value range; not empty.
  double snr_db = 0.0;                          ///< dB of the signal's power over this noise's.
  double start_seconds = 0.0;                   ///< Where the noise starts in the output.
};

/// wav-reverberate with its defaults --shift-output=true --normalize-output=true on a mono
/// `input` of N samples at `sample_rate` Hz; returns N samples.
///
/// - RIR (`rir` not null; samples in the int16 value range, as decoded, scaled by 2^-15 as
///   wav-reverberate does): the input is convolved with it (full length N + L - 1). The signal
///   power for the SNRs is then the mean square of the input convolved with the early RIR, from
///   int(0.001 fs) samples before the RIR's peak (its largest signed sample, the first if
///   several) to int(0.05 fs) after (1 ms and 50 ms); the
///   output starts at the peak's index (shift-output).
///   Without an RIR the signal power is the input's mean square.
/// - each additive signal: scaled by sqrt(10^(-snr/10) P_signal / P_noise) (P_noise its own mean
///   square plus FLT_EPSILON) and added once from sample floor(start_seconds * sample_rate) on, cut at the end
///   of the (convolved) signal.
/// - normalize-output: the result is scaled by sqrt(P_before / P_after), the mean squares of the
///   input and of the whole convolved-plus-noise signal, so the output has the input's level.
///
/// Throws std::invalid_argument for an empty input, an empty RIR or noise, a null noise, a
/// negative start time or a non-positive sample rate. A silent input (P_before = 0) comes back
/// as zeros (wav-reverberate's 0/0 would give NaN).
std::vector<float> Reverberate(const std::vector<float>& input, const std::vector<float>* rir,
                               const std::vector<AdditiveSignal>& additive, int sample_rate);

}  // namespace asv::augment
