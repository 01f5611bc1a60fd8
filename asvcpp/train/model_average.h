// Averaging the weights of the last checkpoints of a training run into one model, as WeSpeaker's
// recipes do before extracting embeddings (wespeaker/bin/average_model.py, run with
// num_avg = 10 on the last saved models):
//
//   floating-point tensors (parameters and BatchNorm running_mean/running_var): the element-wise
//     mean over the N checkpoints, sum / N (WeSpeaker: avg[k] += states[k], then
//     true_divide(avg[k], N)); summed here in float64 and rounded once to the tensor's dtype;
//   integer buffers (BatchNorm num_batches_tracked): the newest checkpoint's value. WeSpeaker's
//     true_divide turns the counter into a float mean that load_state_dict truncates back to an
//     integer; a count of batches seen has no meaningful mean, and the newest value is the one
//     that belongs with the rest of the written metadata.
//
// The checkpoints are read with ReadCheckpoint (checkpoint_io.h: checksum file verified, every
// tensor's name and shape checked against the model), and the result is written with
// WriteCheckpoint (atomically, with its checksum file): the metadata of the newest (last-listed)
// checkpoint and no optimizer state, so it loads like any checkpoint but cannot resume training.
#pragma once

#include <filesystem>
#include <vector>

#include <torch/nn/module.h>

#include "asvcpp/train/checkpoint_io.h"

namespace asv::train {

/// WeSpeaker's recipes average the last 10 models (num_avg).
inline constexpr int kDefaultAverageCount = 10;

/// `folder`/epoch.K.pt for K = last_epoch − count + 1 .. last_epoch (oldest first). Throws
/// DataError when count < 1, when last_epoch < count (fewer epochs than asked for), or when one
/// of the files does not exist (naming it).
std::vector<std::filesystem::path> LastCheckpoints(const std::filesystem::path& folder, int last_epoch,
                                                   int count = kDefaultAverageCount);

/// Loads every checkpoint of `inputs` (oldest first) into `model`, which must have their
/// architecture (every parameter and buffer in each file, same shapes), and leaves `model` holding
/// the average described above. Writes it to `output` (atomically, with "<output>.sha256") unless
/// `output` is empty. Returns the metadata written (the last input's). Throws DataError for an
/// empty list, an `output` that is one of the inputs, checkpoints whose architecture, feat_dim,
/// n_speakers or embedding_size differ from the first one's (naming both files), and whatever
/// ReadCheckpoint and WriteCheckpoint throw.
CheckpointMeta AverageCheckpoints(const std::vector<std::filesystem::path>& inputs, torch::nn::Module& model,
                                  const std::filesystem::path& output);

}  // namespace asv::train
