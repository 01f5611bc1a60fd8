// Energy-based voice activity detection, exactly Kaldi's ComputeVadEnergy
// (kaldi-asr/kaldi: src/ivector/voice-activity-detection.{h,cc}, run by compute-vad and
// sid/compute_vad_decision.sh).
//
// threshold = vad_energy_threshold + vad_energy_mean_scale · mean_t(C0[t]); frame t is voiced
// iff, among the frames t−c..t+c that exist (c = vad_frames_context), the number with
// C0 > threshold is >= vad_proportion_threshold × (number of frames in that window).
// The decision is per frame, with no continuity constraint.
#pragma once

#include <cstdint>
#include <vector>

#include "asvcpp/base/matrix.h"

namespace asv::features {

class KaldiOptions;

/// Kaldi VadEnergyOptions with Kaldi's defaults. Kaldi's voxceleb/v2 (and so ASVtorch) uses
/// conf/vad.conf: --vad-energy-threshold=5.5 --vad-energy-mean-scale=0.5
/// --vad-frames-context=2 --vad-proportion-threshold=0.12 (see VoxcelebV2()).
struct VadOptions {
  float vad_energy_threshold = 5.0f;      ///< --vad-energy-threshold: constant term (log-energy units).
  float vad_energy_mean_scale = 0.5f;     ///< --vad-energy-mean-scale: scale on the mean log energy.
  std::int32_t vad_frames_context = 0;    ///< --vad-frames-context: frames each side of t.
  float vad_proportion_threshold = 0.6f;  ///< --vad-proportion-threshold, in (0, 1).

  /// The values of kaldi/egs/voxceleb/v2/conf/vad.conf.
  static VadOptions VoxcelebV2();

  /// Registers every field under its Kaldi option name (see kaldi_options.h).
  void Register(KaldiOptions* opts);
  /// Throws DataError for a negative mean scale or context, or a proportion outside (0, 1).
  void Validate() const;
};

/// Voiced (1.0) / unvoiced (0.0) decision per frame from the log energy (C0) of each frame:
/// `log_energy` [num_frames] -> [num_frames]. Empty input gives an empty result. Throws
/// DataError for invalid options.
std::vector<float> ComputeVadEnergy(const VadOptions& opts, const float* log_energy, std::int64_t num_frames);

/// The same on column 0 of MFCCs computed with use-energy (the energy replaces C0):
/// `feats` [frames, dim] -> [frames].
std::vector<float> ComputeVadEnergy(const VadOptions& opts, const Matrix& feats);

}  // namespace asv::features
