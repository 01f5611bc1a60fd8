// Augmentation of a batch of training segments as LibTorch operations, on any device (the CPU, a
// GPU): the segment draws of segment_draw.h mixed as Kaldi's wav-reverberate mixes them
// (reverberate.h, which stays the CPU reference), and sox-style speed perturbation.
//
// Data path of one batch (all segments of one length N):
//   1. CPU: SegmentDraw per segment (DrawSegment), then CutAugmentationInputs: the RIRs and noise
//      pieces the draws name, as tensors (recordings decoded once and cached by the NoiseBank).
//   2. Device: SpeedPerturb of the segments that have a speed factor (segments read
//      SpeedSourceSamples(N, factor) long, grouped by factor), then ApplyAugmentation.
// Every kernel here has a plain CPU counterpart it is tested against: Reverberate (reverberate.h)
// on the same draws and samples, and a loop over the resampling formula for SpeedPerturb.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "asvcpp/augment/segment_draw.h"

namespace asv::augment {

/// What ApplyAugmentation mixes into a batch of B segments of N samples. R segments are
/// reverberated and T noise pieces added; a segment has either RIR or noise pieces, not both.
/// Float tensors are float32, index tensors int64; all on one device.
struct AugmentationInputs {
  std::int64_t segment_samples = 0;  ///< N.
  torch::Tensor rirs;                ///< [R, L] RIR samples as decoded (int16 value range), zero-padded to L.
  torch::Tensor rir_segment;         ///< [R] row of each RIR's segment in the batch (distinct rows).
  torch::Tensor rir_length;          ///< [R] samples of each RIR before padding (>= 1).
  torch::Tensor rir_peak;            ///< [R] index of each RIR's largest sample (the first of equal ones).
  torch::Tensor noise;               ///< [T, N] each piece at its place in the segment, zeros elsewhere.
  torch::Tensor noise_segment;       ///< [T] row of each piece's segment (several pieces may share one).
  torch::Tensor noise_length;        ///< [T] samples of each piece (>= 1), for its mean square.
  torch::Tensor noise_snr_db;        ///< [T] dB of the segment's mean square over the piece's.

  /// A copy on `device` (non_blocking as Tensor::to; the CPU tensors are not pinned).
  AugmentationInputs To(const torch::Device& device, bool non_blocking = false) const;
};

/// The CPU tensors of `draws` (draws[b] for row b of the batch) for segments of
/// `segment_samples` samples: RIRs decoded (NoiseBank::RirSamples), pieces cut (CutPiece) and
/// placed. R and T may be 0 (tensors of 0 rows). Throws std::invalid_argument when a piece does not
/// fit in the segment (start < 0 or start + length > segment_samples) or has no samples, or for
/// segment_samples < 1; std::out_of_range for an index the bank does not have; DataError naming the
/// file that cannot be decoded.
AugmentationInputs CutAugmentationInputs(const NoiseBank& bank, const std::vector<SegmentDraw>& draws,
                                         std::int64_t segment_samples);

/// `segments` [B, N] (float32, int16 value range, any device) with `inputs` (on the same device)
/// mixed in; returns a new [B, N] float32 tensor, rows without RIR or noise unchanged. Per row,
/// wav-reverberate's computation (reverberate.h, Reverberate) with P_before = the row's mean
/// square:
/// - RIR h (scaled by 2^-15): full linear convolution y = x * h (N + length - 1 samples) as one
///   FFT product (torch::fft, float32, size the smallest 2^a 3^b 5^c >= N + L - 1); output
///   y[peak + n] for n < N (--shift-output) times sqrt(P_before / mean square of all of y)
///   (--normalize-output). No early-reverberation power is needed: no noise is added to it.
/// - noise pieces p_k: x + sum_k sqrt(10^(-snr_k / 10) P_before / (mean square of p_k over its
///   length + FLT_EPSILON)) p_k, i.e. the SNRs against the segment's own mean square, several
///   babble recordings each at its own SNR; then scaled by sqrt(P_before / its mean square).
/// - a silent row (P_before = 0) with RIR or noise comes back as zeros (as Reverberate).
/// Unlike Augmenter::Apply the result is not quantised to int16 (it goes to the features as
/// floats). Equal to Reverberate on the same samples to float32 rounding (about 1e-6 of the peak).
/// Throws std::invalid_argument when `segments` is not 2-D float32 with N = segment_samples
/// columns, or `inputs` does not match (shapes, dtypes, device).
torch::Tensor ApplyAugmentation(const torch::Tensor& segments, const AugmentationInputs& inputs);

/// Speed perturbation as sox's `speed factor` followed by `rate` back to the sample rate
/// (WeSpeaker wespeaker/dataset/processor.py, speed_perturb; Kaldi's
/// utils/data/perturb_data_dir_speed.sh): the samples, taken as recorded at sample_rate * factor
/// Hz, resampled to sample_rate Hz, so tempo and pitch both scale by `factor` (a tone of f Hz
/// becomes factor * f Hz) and n samples become floor(n / factor).
///
/// `segments` [B, n] float32 on any device -> [B, floor(n / factor)] float32 on the same device;
/// factor 1 returns `segments` itself. The rate ratio is orig : new = round(sample_rate * factor) :
/// sample_rate reduced by their gcd (0.9 at 16 kHz: 9 : 10; 1.1: 11 : 10). Resampler: windowed
/// sinc, Hann window, as torchaudio.functional.resample with resampling_method "sinc_interp_hann",
/// lowpass_filter_width w = 6, rolloff 0.99: with cutoff c = 0.99 min(orig, new) and, for output
/// sample j and input sample i, t = c (i / orig - j / new) clamped to [-w, w],
///   y[j] = sum_i x[i] (c / orig) sinc(pi t) cos^2(pi t / (2 w))   (sinc(0) = 1),
/// over the 2 ceil(w orig / c) + orig inputs around j; samples beyond the segment are zeros, so the
/// first and last few output samples (within w / c input samples, under 1 ms at 16 kHz) are not
/// those of a longer signal. Its response is flat to better than -40 dB up to about 0.6 of the
/// lower Nyquist frequency and falls to -6 dB at 0.99 of it (a shorter filter than sox's: against
/// soxr on tones up to 4.4 kHz of the original, the difference is -59 dB at 0.9 and -55 dB at 1.1).
/// Computed as one LibTorch conv1d with stride orig and `new` output channels (one per output
/// phase); on a GPU that allows TF32 for cuDNN convolutions (LibTorch's default) the products are
/// rounded to TF32 (about 1e-3 relative). Throws std::invalid_argument when `segments` is not 2-D
/// float32, `factor` is not positive or round(sample_rate * factor) < 1, or sample_rate < 1.
torch::Tensor SpeedPerturb(const torch::Tensor& segments, double factor, int sample_rate = 16000);

/// The fewest source samples n for which SpeedPerturb gives at least `output_samples`:
/// ceil(output_samples * orig / new) (32,240 at 16 kHz: 29,016 for 0.9, 35,464 for 1.1). Throws
/// as SpeedPerturb for a bad factor or rate, std::invalid_argument for output_samples < 0.
std::int64_t SpeedSourceSamples(std::int64_t output_samples, double factor, int sample_rate = 16000);

}  // namespace asv::augment
