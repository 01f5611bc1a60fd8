// Initialising a network from another one's weights: the start of large-margin fine-tuning, which
// continues training the averaged model of a finished run with longer segments and a larger
// margin (WeSpeaker's examples/voxceleb/v2 run.sh stage 8 with conf/*_lm.yaml: model_init =
// avg_model.pt; 3D-Speaker's large-margin fine-tuning).
//
// The fine-tuning network may have another number of classes than the model it starts from:
// WeSpeaker trains with speed perturbation as new speakers (3 N classes: label = speaker +
// speed_index · N, speed index 0 being the unchanged audio, segment_sampler.h) and fine-tuning may
// run without it (N classes), or the reverse. Row c of each class-indexed tensor of the head then
// takes row c mod C of the source's (C its classes), so every speaker keeps the row it was trained
// with at the original speed, and speed-perturbed copies start as their speaker. WeSpeaker's
// load_checkpoint (strict=False) cannot change the class count; its LM configs keep speed
// perturbation for that reason.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include <torch/nn/module.h>

#include "asvcpp/train/checkpoint_io.h"

namespace asv::train {

/// Copies every parameter and buffer of `to` from the tensor of the same name in `from` (values
/// only; `to` keeps its device and dtype). Tensors whose name starts with `class_prefix` (e.g.
/// "projection.", the head of nnet::MarginNet) may differ from the source in their first dimension
/// (the classes): row c takes the source's row c mod its rows; every other tensor must have the
/// source's shape. Throws DataError naming the first tensor of `to` missing from `from`, the first
/// tensor of `from` that `to` lacks, and the first shape that cannot be mapped (with both shapes).
void CopyModelState(const torch::nn::Module& from, torch::nn::Module& to, const std::string& class_prefix);

/// Builds a network like the one a checkpoint holds: feature dimension and number of classes.
using NetworkLike = std::function<std::shared_ptr<torch::nn::Module>(std::int64_t feat_dim, std::int64_t classes)>;

/// Initialises `net` from the model state of checkpoint `path` (an epoch checkpoint or an averaged
/// model): builds the checkpoint's network with `make_like(meta.feat_dim, meta.n_speakers)`, reads
/// it (ReadCheckpoint: checksum and every tensor verified) and copies it into `net` with
/// CopyModelState. Returns the checkpoint's metadata. Throws what ReadCheckpointMeta,
/// ReadCheckpoint and CopyModelState throw.
CheckpointMeta InitFromCheckpoint(const std::filesystem::path& path, torch::nn::Module& net,
                                  const NetworkLike& make_like, const std::string& class_prefix);

}  // namespace asv::train
