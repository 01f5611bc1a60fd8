// State dicts in the file format of PyTorch's torch.save / torch.load, written and read without
// Python: a zip archive (the container of torch/serialization.py _save: `<archive>/data.pkl`, one
// record `<archive>/data/<key>` of raw little-endian bytes per storage, `byteorder`, `version`)
// whose data.pkl is a pickle (protocol 2, as torch.save's DEFAULT_PROTOCOL) of an
// OrderedDict[str, Tensor].
//
// Why not LibTorch's torch::pickle_save / torch::pickle_load: LibTorch 1.13's pickle_load reads
// the OrderedDict of a state dict saved by Python as None and rejects a plain dict's SETITEM
// opcode (checked with Debian's libtorch 1.13.1 on files of torch.save 1.13), and pickle_save
// tags every dict with torch.jit._pickle.restore_type_tag, which torch.load refuses by default
// since PyTorch 2.6 (weights_only=True). The files written here hold only what
// torch.load(weights_only=True) accepts: collections.OrderedDict, torch._utils._rebuild_tensor_v2
// and typed storages (torch.FloatStorage, torch.LongStorage, ...), exactly as torch.save writes a
// module's state_dict(). The zip container itself is LibTorch's (caffe2::serialize
// PyTorchStreamWriter/Reader, the one torch.save and torch.load use).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace asv::models {

/// A state dict in file order: parameter and buffer names with their tensors.
using StateDict = std::vector<std::pair<std::string, at::Tensor>>;

/// Writes `state` to `path` atomically as torch.save(OrderedDict(state), path) would: every
/// tensor is stored contiguous, on the CPU, in its own dtype (float32, int64, ...), one storage
/// per tensor, requires_grad false. Throws DataError naming the path when the file cannot be
/// written, std::invalid_argument for a dtype without a PyTorch storage class (e.g. complex).
void SaveStateDict(const std::filesystem::path& path, const StateDict& state);

/// Reads a file written by torch.save (or SaveStateDict) whose object is a dict or OrderedDict
/// of tensors (keys str; values tensors, or torch.nn.Parameter), or a dict holding such a dict
/// under "state_dict" or "model" (checkpoints with training state beside the model, as
/// wespeaker/utils/checkpoint.py load_checkpoint and wespeaker/bin/average_model.py accept them;
/// the other entries are ignored). Tensors come back on the CPU in the file's dtype, in the
/// file's order. Supports pickle protocols 2 to 5 (torch.save's pickle_protocol). Throws
/// DataError naming the path: not a zip archive of torch.save (e.g. the legacy pre-1.6 format or
/// a TorchScript archive), a pickle opcode or Python object it does not support (naming it), a
/// missing storage record, or an object that is not such a dict (naming the first non-tensor
/// key).
StateDict LoadStateDict(const std::filesystem::path& path);

}  // namespace asv::models
