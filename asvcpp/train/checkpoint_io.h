// Contents of a training checkpoint `epoch.N.pt` and how it is written and read.
//
// The file is a pickled dict (torch::pickle_save). Python reads it with
// `torch.load(path, weights_only=False)`, or with weights_only inside
// `torch.serialization.safe_globals([torch.jit._pickle.restore_type_tag])` (LibTorch's pickler
// tags dict types; checked with PyTorch 2.11):
//   'format': 'asvcpp.xvector_checkpoint', 'version': 1,
//   'architecture': 'StandardNet', 'feat_dim': F, 'n_speakers': N, 'embedding_size': E,
//   'epoch': N,
//   'model_state_dict': {name: tensor}   parameters AND buffers, ASVtorch-style dotted names
//                                         ('tdnn_layers.0.cnn.weight'), never a DDP 'module.' prefix,
//   'optimizer_state_dict': {'optimizer': 'SGD' or 'AdamW' (files without it: SGD),
//                            'lr': float64[groups],
//                            SGD:   'momentum': float, 'momentum_buffers': {parameter name: tensor},
//                            AdamW: 'state': {'<key>:<parameter name>': tensor} with the keys
//                                   exp_avg, exp_avg_sq and step (adamw.h)},
//   'training_loss': float, 'consecutive_lr_updates': int   (LR-schedule state),
//   'sampler_seed': int,                  (with the epoch, the whole sampler state: epoch_sampler.h)
//   'torch_cpu_rng_state': uint8 tensor   (LibTorch's default CPU generator)
//   'torch_cuda_rng_state': uint8 tensor  (only when trained on a GPU: the default CUDA generator
//                                         of the training device, as torch.cuda.get_rng_state())
// All tensors are stored on the CPU and load onto any device. Files are written atomically
// (temporary file + rename).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "asvcpp/train/lr_schedule.h"

namespace asv::train {

class Optimizer;

/// Everything in a checkpoint besides the model and optimizer tensors.
struct CheckpointMeta {
  std::string architecture;  ///< EnumToName(nnet::Architecture)
  std::int64_t feat_dim = 0;
  std::int64_t n_speakers = 0;
  std::int64_t embedding_size = 0;
  int epoch = 0;
  LrScheduleState schedule;
  std::uint64_t sampler_seed = 0;
  torch::Tensor torch_rng_state;  ///< undefined: not stored / not restored
  /// State of the training GPU's default CUDA generator; undefined when trained on the CPU (then
  /// not stored) or not in the file. Restored only when resuming on a GPU.
  torch::Tensor torch_cuda_rng_state;
};

/// Writes `model` (parameters and buffers), `optimizer` (may be null: no optimizer state) and
/// `meta` to `path` atomically, and its checksum file "<path>.sha256" (asvcpp/base/checksum.h)
/// after it. Throws DataError when a file cannot be written.
void WriteCheckpoint(const std::filesystem::path& path, const CheckpointMeta& meta, const torch::nn::Module& model,
                     const Optimizer* optimizer);

/// Reads only the metadata of a checkpoint (to build a matching network). Throws DataError for a
/// missing, unreadable or foreign file, and for one whose bytes do not match its checksum file
/// (a corrupt file; checkpoints without a checksum file are read unchecked). The same holds for
/// ReadCheckpoint.
CheckpointMeta ReadCheckpointMeta(const std::filesystem::path& path);

/// Loads the model state into `model` (every parameter and buffer must be in the file with the
/// same shape, and the file must hold nothing else) and, when `optimizer` is not null, the
/// learning rates and momentum buffers (weight decay and momentum stay as configured). Returns
/// the metadata. Throws DataError naming the path and the first mismatching key.
CheckpointMeta ReadCheckpoint(const std::filesystem::path& path, torch::nn::Module& model, Optimizer* optimizer);

/// State of LibTorch's default CPU generator, and its restoration.
torch::Tensor GetTorchRngState();
void SetTorchRngState(const torch::Tensor& state);

/// State of the default CUDA generator of `device` (a CUDA device; index -1 is the current one),
/// as torch.cuda.get_rng_state(device) returns it: a CPU uint8 tensor. Throws c10::Error when
/// CUDA is not available.
torch::Tensor GetTorchCudaRngState(const torch::Device& device);
/// Restores a state from GetTorchCudaRngState into `device`'s default CUDA generator. Throws
/// c10::Error when CUDA is not available or the state is not one of a CUDA generator.
void SetTorchCudaRngState(const torch::Device& device, const torch::Tensor& state);

}  // namespace asv::train
