// The front end of an x-vector recipe's network as an ONNX graph computes it
// (asvcpp/deploy/onnx_export.h): the features stage 7 gives the network.
#pragma once

#include "asvcpp/deploy/onnx_export.h"
#include "asvcpp/settings/settings.h"

namespace asv::recipes::xvector {

/// The recipe's MFCCs (paths.kaldi_mfcc_conf_file, read as stage 1 reads it), the centred
/// sliding-window CMN of features.cmvn_window frames when features.cmvn = 'm' (none for ''), and
/// the energy VAD with Kaldi voxceleb/v2's options (features::VadOptions::VoxcelebV2, as stage 1
/// computes it) when features.sad_enabled: what features::KaldiFeatureSource gives the network.
/// Throws ConfigError naming the setting for what the graph does not compute (features.cmvn =
/// 'mv', features.deltas other than 'b'), and what ReadKaldiConfig throws for the MFCC file.
deploy::OnnxFrontEnd XvectorOnnxFrontEnd(const settings::Settings& common);

}  // namespace asv::recipes::xvector
