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
// Operator set: ai.onnx 17 (ONNX 1.12). The ops used are Conv, BatchNormalization, Relu,
// LeakyRelu, Selu, Sigmoid, Tanh, Softmax, Gemm, ReduceMean, ReduceSum, Split, Concat, Transpose,
// Unsqueeze, Reshape, Expand, Shape, Gather, Cast, Add, Sub, Mul, Div, Max and Sqrt.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

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

/// True when this build can write ONNX (it found libonnx-dev).
bool OnnxExportAvailable();

/// Writes `net`'s embedding network as an ONNX model to `out` (through a temporary file in the
/// same folder, renamed when complete). `net` is a network built by nnet::MakeMarginNet (ResNet34,
/// the ECAPA-TDNN variants) or nnet::MakeXvectorNet (StandardNet, StandardSeNet,
/// StandardResSeNet, LargeResSeNet) on any device; its weights are copied to the CPU in float32.
/// The training head is not exported. Throws ConfigError for what the graph cannot express
/// (network.pooling_layer_type = 'clustering', network.cnn_padding_mode = 'circular'), naming the
/// setting; std::invalid_argument for another kind of network; DataError when the checker or
/// shape inference rejects the graph or `out` cannot be written (naming the file); ConfigError
/// when this build has no ONNX (OnnxExportAvailable() is false).
OnnxExportSummary ExportOnnx(nnet::SpeakerNet& net, const std::filesystem::path& out);

}  // namespace asv::deploy
