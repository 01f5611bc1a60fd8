// WeSpeaker's model directories in and out of asvcpp: a folder with `avg_model.pt` (the state
// dict that torch.save wrote: wespeaker/utils/checkpoint.py save_checkpoint, then
// wespeaker/bin/average_model.py) and `config.yaml` (wespeaker_config.h), as WeSpeaker's model
// zoo ships them and wespeaker/cli/speaker.py load_model_local reads them.
//
// The networks are asvcpp's nnet::MarginNet (ResNet34 or ECAPA-TDNN followed by the margin head
// `projection`), whose parameter and buffer names are WeSpeaker's, so the state dict maps one to
// one. WeSpeaker's own loader (load_checkpoint) uses load_state_dict(strict=False) and only logs
// missing and unexpected tensors; asvcpp refuses both, naming them, because a silently missing
// tensor is a silently different network. The one exception is the head: a model without
// projection.* tensors (a zoo model stripped of its training head) loads for embedding
// extraction, as load_checkpoint tolerates missing projection keys.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "asvcpp/models/torch_pickle.h"
#include "asvcpp/models/wespeaker_config.h"

namespace torch::nn {
class Module;
}
namespace asv::nnet {
class SpeakerNet;
}

namespace asv::models {

/// The weights file name of a WeSpeaker model directory.
inline constexpr const char* kWespeakerWeights = "avg_model.pt";
/// The config file name of a WeSpeaker model directory.
inline constexpr const char* kWespeakerConfig = "config.yaml";

/// The two files of a WeSpeaker model.
struct WespeakerFiles {
  std::filesystem::path weights;  ///< avg_model.pt or a training checkpoint model_N.pt
  std::filesystem::path config;   ///< config.yaml
};

/// The files of `path`: a directory with avg_model.pt and config.yaml, or a .pt file with the
/// config.yaml of its folder or of the folder above (WeSpeaker's exp_dir/models/model_N.pt beside
/// exp_dir/config.yaml). Throws DataError naming what is missing.
WespeakerFiles LocateWespeakerModel(const std::filesystem::path& path);

/// True when `path` is a directory holding config.yaml, or a .pt file with a config.yaml as
/// LocateWespeakerModel finds it (a cheap test that reads no file).
bool LooksLikeWespeakerModel(const std::filesystem::path& path);

/// A WeSpeaker model imported into asvcpp.
struct WespeakerModel {
  WespeakerConfig config;
  std::shared_ptr<nnet::SpeakerNet> net;  ///< nnet::MarginNet on the CPU, eval mode
  bool has_head = true;                   ///< the file held the projection.* tensors
  WespeakerFiles files;
};

/// `state` without the "module." prefix of every key when all keys have it (a model saved from
/// its DistributedDataParallel wrapper).
StateDict StripModulePrefix(StateDict state);

/// Copies `state` into `net` (values converted to the network's dtype). Every parameter and
/// buffer of `net` must be in `state` with the same shape, except that the projection.* tensors
/// may all be missing (then `*has_head` is set false), and `state` must hold nothing else.
/// Throws DataError starting with `what` (e.g. the file) that names the missing keys, the
/// unexpected keys (both lists, up to 10 each, with their counts) or the first key whose shape
/// differs (with both shapes).
void LoadWespeakerState(const StateDict& state, torch::nn::Module& net, const std::string& what, bool* has_head);

/// Reads a WeSpeaker model (LocateWespeakerModel) and builds asvcpp's network of its config
/// (nnet::MakeMarginNet with model_args and projection_args; the head's classes are the rows of
/// projection.weight, or projection_args.num_class, or 1 without either) holding its weights.
/// Throws DataError naming the file and key: what ReadWespeakerConfig, LoadStateDict and
/// LoadWespeakerState throw.
WespeakerModel ImportWespeakerModel(const std::filesystem::path& path);

/// The state dict of `net` in PyTorch's state_dict() order (each module's own parameters, then
/// its own buffers, then its submodules in registration order): the names and order of
/// WeSpeaker's checkpoints for nnet::MarginNet. Tensors are detached CPU copies.
StateDict WespeakerStateDict(const torch::nn::Module& net);

/// Writes `folder`/avg_model.pt (WespeakerStateDict(net) with SaveStateDict; without the
/// projection.* tensors when `with_head` is false, e.g. for a model imported without a head) and
/// `folder`/config.yaml (`config`), creating the folder. Throws DataError naming a file that
/// cannot be written.
void ExportWespeakerModel(const std::filesystem::path& folder, const torch::nn::Module& net,
                          const WespeakerConfig& config, bool with_head = true);

}  // namespace asv::models
