// asvcpp's x-vector networks (asvcpp/nnet/xvector_net.h) as ASVtorch's own networks hold them: the
// state dict of ASVtorch's classes StandardNet, StandardSeNet, StandardResSeNet and LargeResSeNet
// (asvtorch/src/networks/architectures.py), written in torch.save's format (torch_pickle.h) so
// that Python's torch.load(weights_only=True) reads it and
// `net.load_state_dict(torch.load(path))` loads it into the ASVtorch class the run's
// network.network_class names, built with the same network.* settings and
// (feat_dim, n_speakers).
//
// The keys are the module's parameters and buffers, whose names asvcpp takes from ASVtorch
// (`tdnn_layers.<i>.cnn.weight`, `utterance_layers.0.linear.weight`, ...), in PyTorch's
// state_dict() order, after the four tensors ASVtorch's BaseNet registers as Parameters:
//   feat_dim_param          int64 [1]    input features per frame
//   n_speakers_param        int64 [1]    classifier outputs
//   training_loss           float32 [1]  mean training loss of the last epoch (the LR schedule's)
//   consecutive_lr_updates  int64 [1]    learning-rate halvings in a row
// ASVtorch's networks/epoch.N.pt wraps such a dict as {'model_state_dict': ..., 'optimizer_state_dict':
// ...}; asvtorch/src/networks/network_io.py load_network reads 'model_state_dict' only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>

#include "asvcpp/models/torch_pickle.h"

namespace torch::nn {
class Module;
}

namespace asv::models {

/// BaseNet's bookkeeping values of an ASVtorch network.
struct AsvtorchNetState {
  std::int64_t feat_dim = 0;
  std::int64_t n_speakers = 0;
  float training_loss = std::numeric_limits<float>::max();  ///< ASVtorch's initial value
  std::int64_t consecutive_lr_updates = 0;
};

/// The state dict of `net` (an x-vector network of nnet::MakeXvectorNet, on any device) in
/// ASVtorch's keys and order (above), every tensor a CPU copy. Throws std::invalid_argument for a
/// `state` without feat_dim or n_speakers (< 1).
StateDict AsvtorchStateDict(const torch::nn::Module& net, const AsvtorchNetState& state);

/// Writes AsvtorchStateDict(net, state) to `path` with SaveStateDict (atomically). Throws what
/// those throw (DataError naming the path when it cannot be written).
void ExportAsvtorchModel(const std::filesystem::path& path, const torch::nn::Module& net,
                         const AsvtorchNetState& state);

}  // namespace asv::models
