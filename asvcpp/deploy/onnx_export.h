// ONNX export of asvcpp's speaker-embedding networks: WeSpeaker's ResNet34 and ECAPA-TDNN
// (asvcpp/nnet/resnet.h, ecapa_tdnn.h) and ASVtorch's x-vector networks (xvector_net.h), written
// with ONNX's own protobuf classes (Debian's libonnx-dev) and checked with ONNX's checker and
// shape inference before the file is written.
//
// The graph computes what the network's Embed() computes in eval mode (batch norms with their
// running statistics), in float32:
//   input  "feats"      [batch, frames, feat_dim]   features as Kaldi writes them (frames first)
//   output "embedding"  [batch, embedding_size]
// batch and frames are dynamic. For x-vector networks the embedding is the output of the
// embedding layer's linear part (before its batch norm), as in XvectorNetImpl::Embed; for ResNet34
// WeSpeaker's `embed_a` (seg_1), for ECAPA-TDNN the output of `linear`.
//
// With a front end (OnnxFrontEnd) the graph takes audio instead, and computes the model's
// Kaldi-compatible log mel filterbank and its mean normalisation inside:
//   input  "waveform"   [batch, samples]            float32 in [-1, 1) (16-bit PCM / 32768), at
//                                                    the front end's sampling rate
// Frames as Kaldi with snip_edges true: 1 + (samples - window) / shift of them (window and shift in
// samples), so a waveform shorter than one window is an error of the runtime. Everything linear
// per frame (DC removal, pre-emphasis, window, the DFT of the zero-padded frame) is one matrix
// product, the matrix computed in double precision at export; then the power spectrum, the mel
// banks (asvcpp/features/mel_banks.h, as features::Fbank), log(max(·, FLT_EPSILON)), and the
// subtraction of the mean over frames (as features::PcmFbankSource: WeSpeaker's CMN).
//
// Operator set: ai.onnx 17 (ONNX 1.12). The ops used are Conv, BatchNormalization, Relu,
// LeakyRelu, Selu, Sigmoid, Tanh, Softmax, Gemm, ReduceMean, ReduceSum, Split, Concat, Transpose,
// Unsqueeze, Reshape, Expand, Shape, Gather, Cast, Add, Sub, Mul, Div, Max and Sqrt.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "asvcpp/features/feature_options.h"

namespace asv::nnet {
class SpeakerNet;
}

namespace asv::deploy {

/// What ExportOnnx wrote.
struct OnnxExportSummary {
  std::string architecture;      ///< the network's SpeakerNetInfo::architecture
  std::int64_t feat_dim = 0;     ///< the input's last dimension
  std::int64_t embedding_size = 0;
  std::int64_t min_frames = 1;   ///< the fewest frames an input may have (as the network needs)
  std::int64_t nodes = 0;        ///< operators in the graph
  std::int64_t initializers = 0; ///< weight tensors in the graph
  std::int64_t bytes = 0;        ///< size of the written file
};

/// The feature extraction a graph with audio input computes (see above).
struct OnnxFrontEnd {
  /// The model's filterbank (features::WespeakerFbankOptions with the run's num_mel_bins, frame
  /// length and shift for the margin recipe). Dither is not applied (extraction uses none).
  features::FbankOptions fbank;
  bool cmn = true;  ///< subtract each utterance's mean over frames from every frame
};

/// True when this build can write ONNX (it found libonnx-dev).
bool OnnxExportAvailable();

/// Writes `net`'s embedding network as an ONNX model to `out` (through a temporary file in the
/// same folder, renamed when complete), taking features, or audio when `front_end` is given. `net` is a network built by nnet::MakeMarginNet (ResNet34,
/// the ECAPA-TDNN variants) or nnet::MakeXvectorNet (StandardNet, StandardSeNet,
/// StandardResSeNet, LargeResSeNet) on any device; its weights are copied to the CPU in float32.
/// The training head is not exported. Throws ConfigError for what the graph cannot express
/// (network.pooling_layer_type = 'clustering', network.cnn_padding_mode = 'circular'), naming the
/// setting; std::invalid_argument for another kind of network; DataError when the checker or
/// shape inference rejects the graph or `out` cannot be written (naming the file); ConfigError
/// when this build has no ONNX (OnnxExportAvailable() is false). A front end must give
/// num_mel_bins = the network's feat_dim, snip_edges true, use_energy false, log mel energies and
/// no VTLN (ConfigError naming the option otherwise); x-vector networks have no front end here
/// (their MFCCs, energy VAD and sliding-window CMN are not in the graph): ConfigError.
OnnxExportSummary ExportOnnx(nnet::SpeakerNet& net, const std::filesystem::path& out,
                             const std::optional<OnnxFrontEnd>& front_end = std::nullopt);

}  // namespace asv::deploy
