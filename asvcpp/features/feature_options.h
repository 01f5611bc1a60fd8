// Options of Kaldi's MFCC and filterbank extraction, with Kaldi's option names and defaults.
//
// Field names follow Kaldi's structs, option names (in Register) follow the command line of
// compute-mfcc-feats / compute-fbank-feats, so Kaldi config files such as ASVtorch's mfcc.conf
// read unchanged (see ReadKaldiConfig in kaldi_options.h). Sources: kaldi-asr/kaldi
// src/feat/feature-window.h (FrameExtractionOptions), src/feat/mel-computations.h
// (MelBanksOptions), src/feat/feature-mfcc.h (MfccOptions), src/feat/feature-fbank.h
// (FbankOptions).
#pragma once

#include <cstdint>
#include <string>

namespace asv::features {

class KaldiOptions;

/// Framing, dither, pre-emphasis and windowing (Kaldi FrameExtractionOptions).
struct FrameOptions {
  float samp_freq = 16000.0f;         ///< --sample-frequency, Hz.
  float frame_shift_ms = 10.0f;       ///< --frame-shift, ms.
  float frame_length_ms = 25.0f;      ///< --frame-length, ms.
  float dither = 1.0f;                ///< --dither: stddev of added Gaussian noise, in sample units.
  float preemph_coeff = 0.97f;        ///< --preemphasis-coefficient, in [0, 1].
  bool remove_dc_offset = true;       ///< --remove-dc-offset: subtract the frame mean.
  std::string window_type = "povey";  ///< --window-type: povey|hamming|hanning|sine|rectangular|blackman.
  bool round_to_power_of_two = true;  ///< --round-to-power-of-two: zero-pad frames for the FFT.
  float blackman_coeff = 0.42f;       ///< --blackman-coeff.
  bool snip_edges = true;             ///< --snip-edges: false = frames centred, edges reflected.
  /// --allow-downsample / --allow-upsample: read by whoever resamples the audio before
  /// extraction (Compute always assumes samples at samp_freq).
  bool allow_downsample = false;
  bool allow_upsample = false;

  /// Frame shift in samples: int(samp_freq · 0.001 · frame_shift_ms) (160 at 16 kHz / 10 ms).
  std::int32_t WindowShift() const;
  /// Frame length in samples: int(samp_freq · 0.001 · frame_length_ms) (400 at 16 kHz / 25 ms).
  std::int32_t WindowSize() const;
  /// FFT size: WindowSize() rounded up to a power of two (512) if round_to_power_of_two.
  std::int32_t PaddedWindowSize() const;

  /// Registers every field under its Kaldi option name (see kaldi_options.h).
  void Register(KaldiOptions* opts);
  /// Throws DataError for a non-positive rate/shift/length, an unknown window type,
  /// a pre-emphasis outside [0, 1] or a negative dither.
  void Validate() const;
};

/// Triangular mel filterbank (Kaldi MelBanksOptions; MFCC and fbank default to 23 bins).
struct MelOptions {
  std::int32_t num_bins = 23;  ///< --num-mel-bins, at least 3.
  float low_freq = 20.0f;      ///< --low-freq, Hz.
  float high_freq = 0.0f;      ///< --high-freq, Hz; <= 0 means Nyquist + high_freq.
  float vtln_low = 100.0f;     ///< --vtln-low, Hz: lower inflection of the VTLN warp.
  float vtln_high = -500.0f;   ///< --vtln-high, Hz; < 0 means Nyquist + vtln_high.
  bool debug_mel = false;      ///< --debug-mel: log the bins when they are built.

  /// Registers every field under its Kaldi option name (see kaldi_options.h).
  void Register(KaldiOptions* opts);
  /// Throws DataError if num_bins < 3. The frequency range is checked by MelBanks, which knows
  /// the sampling rate.
  void Validate() const;
};

/// MFCC options (Kaldi MfccOptions).
struct MfccOptions {
  FrameOptions frame_opts;
  MelOptions mel_opts;
  std::int32_t num_ceps = 13;     ///< --num-ceps, including C0; at most num_bins.
  bool use_energy = true;         ///< --use-energy: C0 is replaced by the log energy.
  float energy_floor = 0.0f;      ///< --energy-floor: absolute floor on the energy (not its log).
  bool raw_energy = true;         ///< --raw-energy: energy before pre-emphasis and window.
  float cepstral_lifter = 22.0f;  ///< --cepstral-lifter: Q; 0 disables liftering.
  bool htk_compat = false;        ///< --htk-compat: energy/C0 last, C0 scaled by sqrt(2).

  /// Registers every field under its Kaldi option name (see kaldi_options.h).
  void Register(KaldiOptions* opts);
  /// Validates the children, then num_ceps in [1, num_bins] and cepstral_lifter >= 0.
  void Validate() const;
};

/// Log mel filterbank options (Kaldi FbankOptions).
struct FbankOptions {
  FrameOptions frame_opts;
  MelOptions mel_opts;
  bool use_energy = false;    ///< --use-energy: add a log-energy column (first, or last if htk_compat).
  float energy_floor = 0.0f;  ///< --energy-floor.
  bool raw_energy = true;     ///< --raw-energy.
  bool htk_compat = false;    ///< --htk-compat: energy column last.
  bool use_log_fbank = true;  ///< --use-log-fbank: log of the mel energies (else linear).
  bool use_power = true;      ///< --use-power: power spectrum (else magnitude).

  /// Registers every field under its Kaldi option name (see kaldi_options.h).
  void Register(KaldiOptions* opts);
  /// Validates the children, then energy_floor >= 0. Throws DataError.
  void Validate() const;
};

/// The filterbank options of WeSpeaker's training and embedding extraction (WeSpeaker
/// wespeaker/dataset/processor.py, compute_fbank, which calls torchaudio.compliance.kaldi.fbank):
/// 80 mel bins, 25 ms frames every 10 ms at 16 kHz, a hamming window, use_energy false, dither 1.0
/// (training; embedding extraction passes 0), and torchaudio's defaults otherwise, which are
/// Kaldi's (snip_edges true, pre-emphasis 0.97, DC removal, raw energy, power spectrum, log mel
/// energies, low_freq 20 Hz, high_freq the Nyquist frequency) except energy_floor 1.0 (unused
/// without use_energy).
FbankOptions WespeakerFbankOptions();

}  // namespace asv::features
