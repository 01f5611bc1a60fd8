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
// Kaldi-compatible features inside:
//   input  "waveform"   [batch, samples]            float32 in [-1, 1) (16-bit PCM / 32768), at
//                                                    the front end's sampling rate
// Frames as Kaldi's (feature_window.h): with snip_edges 1 + (samples - window) / shift of them, so a
// waveform shorter than one window is an error of the runtime; without, (samples + shift/2) / shift
// frames centred on their shifts, the edges reflected once. Per frame: DC removal, the raw log
// energy, then pre-emphasis, window and the DFT of the zero-padded frame as one matrix product (the
// matrix composed in double precision at export), the power spectrum, the mel banks
// (asvcpp/features/mel_banks.h) and log(max(·, FLT_EPSILON)). Then either
//   kFbank: the mean over frames subtracted (as features::PcmFbankSource: WeSpeaker's CMN), or
//   kMfcc:  DCT and liftering (features::ComputeDctMatrix, ComputeLifterCoeffs), C0 replaced by the
//           log energy, Kaldi's centred sliding-window CMN (cumulative sums in double), and the
//           frames the energy VAD marks voiced (features::ComputeVadEnergy on the uncentred C0).
// Dither is never applied (the graph is deterministic); the recipes' stored MFCCs were computed with
// Kaldi's dither 1.0 and compressed, so their embeddings differ from the graph's by that noise.
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
#include "asvcpp/features/vad.h"

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
  enum class Kind {
    kFbank,  ///< log mel filterbank, mean over the utterance subtracted (WeSpeaker, the margin recipe)
    kMfcc,   ///< MFCCs, centred sliding-window CMN, energy VAD (Kaldi and ASVtorch: the x-vector recipes)
  };
  Kind kind = Kind::kFbank;
  /// kFbank: the model's filterbank (features::WespeakerFbankOptions with the run's
  /// num_mel_bins, frame length and shift for the margin recipe).
  features::FbankOptions fbank;
  bool cmn = true;  ///< kFbank: subtract each utterance's mean over frames from every frame
  /// kMfcc: the model's MFCCs (the recipe's mfcc.conf, paths.kaldi_mfcc_conf_file).
  features::MfccOptions mfcc;
  /// kMfcc: frames of Kaldi's centred sliding-window CMN (apply-cmvn-sliding --center=true, as
  /// features::ApplySlidingCmn with SlidingCmnOptions::AsvTorch; features.cmvn_window); 0: none.
  std::int32_t cmn_window = 300;
  /// kMfcc: Kaldi's energy VAD on C0 (features::ComputeVadEnergy; features.sad_enabled): only the
  /// voiced frames reach the network, so the graph takes one waveform at a time ([1, samples]).
  std::optional<features::VadOptions> vad;
};

/// True when this build can write ONNX (it found libonnx-dev).
bool OnnxExportAvailable();

/// Writes `net`'s embedding network as an ONNX model to `out` (through a temporary file in the
/// same folder, renamed when complete), taking features, or audio when `front_end` is given.
/// `net` is a network built by nnet::MakeMarginNet (ResNet34, the ECAPA-TDNN variants) or
/// nnet::MakeXvectorNet (StandardNet, StandardSeNet, StandardResSeNet, LargeResSeNet, with mean
/// and standard deviation or clustering pooling: NetVLAD, GhostVLAD, LDE) on any device; its
/// weights are copied to the CPU in float32. The training head is not exported. Throws
/// ConfigError for what the graph cannot express (network.cnn_padding_mode = 'circular'), naming
/// the setting; std::invalid_argument for another kind of network; DataError when the checker or
/// shape inference rejects the graph or `out` cannot be written (naming the file); ConfigError
/// when this build has no ONNX (OnnxExportAvailable() is false). A front end must give features of
/// the network's feat_dim (num_mel_bins for kFbank, num_ceps for kMfcc); kFbank needs
/// use_energy false and log mel energies; ConfigError naming the option otherwise.
OnnxExportSummary ExportOnnx(nnet::SpeakerNet& net, const std::filesystem::path& out,
                             const std::optional<OnnxFrontEnd>& front_end = std::nullopt);

}  // namespace asv::deploy
