// The part of Kaldi's MFCC and fbank computation they share: framing, per-frame processing,
// real FFT, power (or magnitude) spectrum and mel filterbank energies
// (kaldi-asr/kaldi: OfflineFeatureTpl::Compute in src/feat/feature-common-inl.h with
// ExtractWindow, then the first half of MfccComputer::Compute / FbankComputer::Compute).
#pragma once

#include <cstdint>
#include <vector>

#include "asvcpp/features/feature_options.h"
#include "asvcpp/features/feature_window.h"
#include "asvcpp/features/fft.h"
#include "asvcpp/features/mel_banks.h"

namespace asv::features {

/// Immutable after construction; ComputeFrame is const and writes only to the caller's
/// Buffers, so one object serves many threads (one Buffers per thread/call).
class MelFrontEnd {
 public:
  /// Which log energy ComputeFrame returns.
  enum class Energy {
    kNone,      ///< none (returns 0)
    kRaw,       ///< before pre-emphasis and window (after dither and DC removal)
    kWindowed,  ///< of the windowed, zero-padded frame (Kaldi raw-energy=false)
  };

  /// Per-call work space, sized by MakeBuffers(); reuse it for every frame of a call.
  struct Buffers {
    std::vector<float> frame;  ///< [PaddedWindowSize()]
    std::vector<float> re;     ///< [PaddedWindowSize()/2 + 1], spectrum then power
    std::vector<float> im;     ///< [PaddedWindowSize()/2 + 1]
    std::vector<float> mel;    ///< [num_bins] mel energies of the last frame
  };

  /// Throws DataError for invalid options (FrameOptions::Validate, MelBanks).
  MelFrontEnd(const FrameOptions& frame_opts, const MelOptions& mel_opts, float vtln_warp);

  Buffers MakeBuffers() const;
  const FrameOptions& frame_options() const noexcept { return frame_opts_; }
  const MelBanks& mel_banks() const noexcept { return mel_banks_; }
  std::int32_t NumBins() const noexcept { return mel_banks_.NumBins(); }

  /// Processes frame `f` of `samples` [num_samples] (0 <= f < NumFrames(num_samples,
  /// frame_options())): extraction with edge reflection, dither from `rng` (may be null when
  /// dither is 0), DC removal, pre-emphasis, window, zero-padding, FFT, power spectrum
  /// (|X|² with `use_power`, |X| otherwise) and mel energies into buffers->mel (linear, not
  /// log). Returns the natural-log energy selected by `energy`, floored at FLT_EPSILON before
  /// the log.
  float ComputeFrame(const float* samples, std::int64_t num_samples, std::int64_t f, Energy energy, bool use_power,
                     GaussianRng* rng, Buffers* buffers) const;

 private:
  FrameOptions frame_opts_;
  std::vector<float> window_;
  RealFft fft_;
  MelBanks mel_banks_;
};

}  // namespace asv::features
