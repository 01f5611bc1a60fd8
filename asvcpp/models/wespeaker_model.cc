#include "asvcpp/models/wespeaker_model.h"

#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/nn/module.h>
#include <torch/types.h>

#include "asvcpp/base/error.h"
#include "asvcpp/nnet/layers.h"
#include "asvcpp/nnet/speaker_net.h"

namespace asv::models {
namespace stdfs = std::filesystem;

namespace {

constexpr const char* kHeadPrefix = "projection.";

bool IsHeadKey(const std::string& key) {
  return key.rfind(kHeadPrefix, 0) == 0;
}

// "a, b, c (and 7 more)" of at most 10 names.
std::string NameList(const std::vector<std::string>& names) {
  const std::size_t shown = std::min<std::size_t>(names.size(), 10);
  std::string out =
      fmt::format("{}", fmt::join(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(shown), ", "));
  if (names.size() > shown) out += fmt::format(" (and {} more)", names.size() - shown);
  return out;
}

// The config.yaml of a .pt file: its folder's, else the folder above's.
stdfs::path ConfigOfFile(const stdfs::path& file) {
  std::error_code ec;
  for (const auto& folder : {file.parent_path(), file.parent_path().parent_path()}) {
    if (stdfs::is_regular_file(folder / kWespeakerConfig, ec)) return folder / kWespeakerConfig;
  }
  return {};
}

}  // namespace

WespeakerFiles LocateWespeakerModel(const stdfs::path& path) {
  std::error_code ec;
  WespeakerFiles files;
  if (stdfs::is_directory(path, ec)) {
    files.weights = path / kWespeakerWeights;
    files.config = path / kWespeakerConfig;
    for (const auto& f : {files.weights, files.config}) {
      if (!stdfs::is_regular_file(f, ec)) {
        throw DataError(
            fmt::format("{}: not a WeSpeaker model directory: it has no {}", path.string(), f.filename().string()));
      }
    }
    return files;
  }
  if (!stdfs::is_regular_file(path, ec))
    throw DataError(fmt::format("{}: no such model file or directory", path.string()));
  files.weights = path;
  files.config = ConfigOfFile(path);
  if (files.config.empty()) {
    throw DataError(
        fmt::format("{}: no {} beside it or in the folder above (WeSpeaker's exp_dir): the model's "
                    "architecture and front end are unknown",
                    path.string(), kWespeakerConfig));
  }
  return files;
}

bool LooksLikeWespeakerModel(const stdfs::path& path) {
  std::error_code ec;
  if (stdfs::is_directory(path, ec)) return stdfs::is_regular_file(path / kWespeakerConfig, ec);
  return path.extension() == ".pt" && stdfs::is_regular_file(path, ec) && !ConfigOfFile(path).empty();
}

StateDict StripModulePrefix(StateDict state) {
  const std::string prefix = "module.";
  bool all = !state.empty();
  for (const auto& entry : state) all = all && entry.first.rfind(prefix, 0) == 0;
  if (all) {
    for (auto& entry : state) entry.first = entry.first.substr(prefix.size());
  }
  return state;
}

void LoadWespeakerState(const StateDict& state, torch::nn::Module& net, const std::string& what, bool* has_head) {
  std::map<std::string, torch::Tensor> targets;
  for (auto& p : net.named_parameters()) targets[p.key()] = p.value();
  for (auto& b : net.named_buffers()) targets[b.key()] = b.value();
  std::map<std::string, const torch::Tensor*> given;
  for (const auto& [key, tensor] : state) given[key] = &tensor;

  std::vector<std::string> missing, missing_head, unexpected;
  for (const auto& [key, target] : targets) {
    if (given.count(key) == 0) (IsHeadKey(key) ? missing_head : missing).push_back(key);
  }
  for (const auto& [key, tensor] : state) {
    if (targets.count(key) == 0) unexpected.push_back(key);
  }
  std::size_t head_keys = 0;
  for (const auto& [key, target] : targets) head_keys += IsHeadKey(key) ? 1 : 0;
  // A partly present head is as wrong as any other missing tensor.
  if (!missing_head.empty() && missing_head.size() != head_keys)
    missing.insert(missing.end(), missing_head.begin(), missing_head.end());
  if (!missing.empty() || !unexpected.empty()) {
    std::string message = fmt::format("{}: the state dict does not match asvcpp's network", what);
    if (!missing.empty()) message += fmt::format("; {} missing key(s): {}", missing.size(), NameList(missing));
    if (!unexpected.empty()) {
      message += fmt::format("; {} unexpected key(s): {}", unexpected.size(), NameList(unexpected));
    }
    throw DataError(message);
  }
  torch::NoGradGuard no_grad;
  for (auto& [key, target] : targets) {
    auto it = given.find(key);
    if (it == given.end()) continue;  // the head, absent as a whole
    const torch::Tensor& value = *it->second;
    if (value.sizes() != target.sizes()) {
      throw DataError(fmt::format("{}: '{}' has shape {} in the file but {} in asvcpp's network", what, key,
                                  nnet::ShapeString(value), nnet::ShapeString(target)));
    }
    target.copy_(value.to(target.device(), target.scalar_type()));
  }
  if (has_head != nullptr) *has_head = missing_head.empty();
}

WespeakerModel ImportWespeakerModel(const stdfs::path& path) {
  WespeakerModel model;
  model.files = LocateWespeakerModel(path);
  model.config = ReadWespeakerConfig(model.files.config);
  const StateDict state = StripModulePrefix(LoadStateDict(model.files.weights));
  std::int64_t classes = model.config.num_class.value_or(1);
  for (const auto& [key, tensor] : state) {
    if (key == "projection.weight" && tensor.dim() == 2) classes = tensor.size(0);
  }
  nnet::MarginHeadOptions head;
  head.type = nnet::ParseHeadType(model.config.project_type);
  head.scale = model.config.scale;
  head.easy_margin = model.config.easy_margin;
  head.margin = model.config.margin;
  auto net = nnet::MakeMarginNet(model.config.model, model.config.feat_dim, model.config.embed_dim, classes, head);
  LoadWespeakerState(state, *net, model.files.weights.string(), &model.has_head);
  net->eval();
  model.net = net.ptr();
  return model;
}

StateDict WespeakerStateDict(const torch::nn::Module& net) {
  StateDict state;
  const auto add_own = [&state](const torch::nn::Module& module, const std::string& prefix) {
    for (const auto& p : module.named_parameters(/*recurse=*/false)) {
      state.emplace_back(prefix + p.key(), p.value().detach().to(torch::kCPU).clone());
    }
    for (const auto& b : module.named_buffers(/*recurse=*/false)) {
      state.emplace_back(prefix + b.key(), b.value().detach().to(torch::kCPU).clone());
    }
  };
  add_own(net, "");
  // Pre-order over the submodules, each in registration order: PyTorch's state_dict() order.
  for (const auto& item : net.named_modules("", /*include_self=*/false)) add_own(*item.value(), item.key() + ".");
  return state;
}

void ExportWespeakerModel(const stdfs::path& folder, const torch::nn::Module& net, const WespeakerConfig& config,
                          bool with_head) {
  std::error_code ec;
  stdfs::create_directories(folder, ec);
  if (ec) throw DataError(fmt::format("{}: cannot create the folder: {}", folder.string(), ec.message()));
  StateDict state = WespeakerStateDict(net);
  if (!with_head) {
    StateDict body;
    for (auto& entry : state) {
      if (!IsHeadKey(entry.first)) body.push_back(std::move(entry));
    }
    state = std::move(body);
  }
  SaveStateDict(folder / kWespeakerWeights, state);
  WriteWespeakerConfig(folder / kWespeakerConfig, config);
}

}  // namespace asv::models
