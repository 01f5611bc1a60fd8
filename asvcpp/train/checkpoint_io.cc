#include "asvcpp/train/checkpoint_io.h"

#include <cstring>
#include <mutex>
#include <set>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <fmt/format.h>
#include <torch/serialize.h>

#include "asvcpp/base/checksum.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/nnet/layers.h"
#include "asvcpp/train/sgd.h"

namespace asv::train {
namespace {

constexpr const char* kFormat = "asvcpp.xvector_checkpoint";
constexpr std::int64_t kVersion = 1;

using GenericDict = c10::Dict<c10::IValue, c10::IValue>;

void Put(GenericDict& d, const std::string& key, c10::IValue value) {
  d.insert(c10::IValue(key), std::move(value));
}

torch::Tensor CpuCopy(const torch::Tensor& t) {
  return t.detach().to(torch::kCPU).contiguous().clone();
}

class Reader {
 public:
  explicit Reader(std::filesystem::path path) : path_(std::move(path)) {
    const std::string bytes = fs::ReadFile(path_);
    // A flipped byte is an error, not a silently different network; a checkpoint that cannot be
    // verified at all is refused while a run forbids it (fs::VerifyOrRefuse).
    fs::VerifyOrRefuse(path_, bytes);
    c10::IValue root;
    try {
      root = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
    } catch (const std::exception& e) {
      throw DataError(fmt::format("{}: not a readable checkpoint ({})", path_.string(), FirstLine(e.what())));
    }
    if (!root.isGenericDict()) throw DataError(fmt::format("{}: not an asvcpp checkpoint", path_.string()));
    root_ = root.toGenericDict();
    if (!Has(root_, "format") || !root_.at("format").isString() || root_.at("format").toStringRef() != kFormat) {
      throw DataError(fmt::format("{}: not an asvcpp x-vector checkpoint (no format '{}')", path_.string(), kFormat));
    }
    const auto version = Get(root_, "version").toInt();
    if (version != kVersion) {
      throw DataError(fmt::format("{}: checkpoint format version {} is not supported (expected {})", path_.string(),
                                  version, kVersion));
    }
  }

  static bool Has(const GenericDict& d, const std::string& key) { return d.find(c10::IValue(key)) != d.end(); }

  c10::IValue Get(const GenericDict& d, const std::string& key) const {
    auto it = d.find(c10::IValue(key));
    if (it == d.end()) throw DataError(fmt::format("{}: checkpoint has no '{}'", path_.string(), key));
    return it->value();
  }

  GenericDict Dict(const GenericDict& d, const std::string& key) const {
    auto v = Get(d, key);
    if (!v.isGenericDict())
      throw DataError(fmt::format("{}: checkpoint entry '{}' is not a dict", path_.string(), key));
    return v.toGenericDict();
  }

  CheckpointMeta Meta() const {
    CheckpointMeta m;
    m.architecture = Get(root_, "architecture").toStringRef();
    m.feat_dim = Get(root_, "feat_dim").toInt();
    m.n_speakers = Get(root_, "n_speakers").toInt();
    m.embedding_size = Get(root_, "embedding_size").toInt();
    m.epoch = static_cast<int>(Get(root_, "epoch").toInt());
    m.schedule.training_loss = Get(root_, "training_loss").toDouble();
    m.schedule.consecutive_lr_updates = static_cast<int>(Get(root_, "consecutive_lr_updates").toInt());
    const std::int64_t seed = Get(root_, "sampler_seed").toInt();
    std::memcpy(&m.sampler_seed, &seed, sizeof seed);
    if (Has(root_, "torch_cpu_rng_state")) m.torch_rng_state = Get(root_, "torch_cpu_rng_state").toTensor();
    if (Has(root_, "torch_cuda_rng_state")) m.torch_cuda_rng_state = Get(root_, "torch_cuda_rng_state").toTensor();
    return m;
  }

  const GenericDict& root() const { return root_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  static std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

  std::filesystem::path path_;
  GenericDict root_{c10::AnyType::get(), c10::AnyType::get()};
};

void LoadModel(const Reader& reader, const GenericDict& state, torch::nn::Module& model) {
  std::set<std::string> expected;
  auto load = [&](const std::string& name, torch::Tensor& target) {
    expected.insert(name);
    auto it = state.find(c10::IValue(name));
    if (it == state.end()) {
      throw DataError(fmt::format("{}: the checkpoint has no '{}' (does network.* match the checkpoint?)",
                                  reader.path().string(), name));
    }
    const auto value = it->value().toTensor();
    if (value.sizes() != target.sizes()) {
      throw DataError(fmt::format("{}: '{}' has shape {} in the checkpoint but {} in the network",
                                  reader.path().string(), name, nnet::ShapeString(value), nnet::ShapeString(target)));
    }
    torch::NoGradGuard no_grad;
    target.copy_(value);
  };
  for (auto& item : model.named_parameters()) load(item.key(), item.value());
  for (auto& item : model.named_buffers()) load(item.key(), item.value());
  for (const auto& entry : state) {
    const auto& key = entry.key().toStringRef();
    if (!expected.count(key)) {
      throw DataError(
          fmt::format("{}: the checkpoint holds '{}', which the network does not have", reader.path().string(), key));
    }
  }
}

}  // namespace

torch::Tensor GetTorchRngState() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void SetTorchRngState(const torch::Tensor& state) {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

namespace {
at::Generator CudaGenerator(const torch::Device& device) {
  TORCH_CHECK(device.is_cuda(), "not a CUDA device: ", device.str());
  return at::globalContext().defaultGenerator(device);
}
}  // namespace

torch::Tensor GetTorchCudaRngState(const torch::Device& device) {
  auto gen = CudaGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void SetTorchCudaRngState(const torch::Device& device, const torch::Tensor& state) {
  auto gen = CudaGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

void WriteCheckpoint(const std::filesystem::path& path, const CheckpointMeta& meta, const torch::nn::Module& model,
                     const Optimizer* optimizer) {
  c10::Dict<std::string, torch::Tensor> model_state;
  for (const auto& item : model.named_parameters()) model_state.insert(item.key(), CpuCopy(item.value()));
  for (const auto& item : model.named_buffers()) model_state.insert(item.key(), CpuCopy(item.value()));

  GenericDict root(c10::StringType::get(), c10::AnyType::get());
  Put(root, "format", std::string(kFormat));
  Put(root, "version", kVersion);
  Put(root, "architecture", meta.architecture);
  Put(root, "feat_dim", meta.feat_dim);
  Put(root, "n_speakers", meta.n_speakers);
  Put(root, "embedding_size", meta.embedding_size);
  Put(root, "epoch", static_cast<std::int64_t>(meta.epoch));
  Put(root, "model_state_dict", model_state);
  if (optimizer) {
    std::vector<double> lrs;
    for (const auto& g : optimizer->groups()) lrs.push_back(g.lr);
    GenericDict opt(c10::StringType::get(), c10::AnyType::get());
    Put(opt, "optimizer", optimizer->name());
    Put(opt, "lr", torch::tensor(lrs, torch::kFloat64));
    c10::Dict<std::string, torch::Tensor> state;
    if (const auto* sgd = dynamic_cast<const Sgd*>(optimizer)) {
      for (const auto& [name, buffer] : sgd->MomentumBuffers()) {
        if (buffer.defined()) state.insert(name, CpuCopy(buffer));
      }
      Put(opt, "momentum", sgd->momentum());
      Put(opt, "momentum_buffers", state);
    } else {
      for (const auto& entry : optimizer->State()) state.insert(entry.key + ":" + entry.param, CpuCopy(entry.value));
      Put(opt, "state", state);
    }
    Put(root, "optimizer_state_dict", opt);
  }
  Put(root, "training_loss", meta.schedule.training_loss);
  Put(root, "consecutive_lr_updates", static_cast<std::int64_t>(meta.schedule.consecutive_lr_updates));
  std::int64_t seed = 0;
  std::memcpy(&seed, &meta.sampler_seed, sizeof seed);
  Put(root, "sampler_seed", seed);
  if (meta.torch_rng_state.defined()) Put(root, "torch_cpu_rng_state", CpuCopy(meta.torch_rng_state));
  if (meta.torch_cuda_rng_state.defined()) {
    Put(root, "torch_cuda_rng_state", CpuCopy(meta.torch_cuda_rng_state));
  }

  const std::vector<char> bytes = torch::pickle_save(c10::IValue(root));
  const std::string contents(bytes.begin(), bytes.end());
  // The old checksum file goes first: a crash between the writes leaves no checksum, never a
  // wrong one.
  fs::RemoveChecksumFile(path);
  fs::WriteFileAtomic(path, contents);
  fs::WriteChecksumFile(path, fs::BytesChecksum(contents));
}

CheckpointMeta ReadCheckpointMeta(const std::filesystem::path& path) {
  return Reader(path).Meta();
}

CheckpointMeta ReadCheckpoint(const std::filesystem::path& path, torch::nn::Module& model, Optimizer* optimizer) {
  Reader reader(path);
  LoadModel(reader, reader.Dict(reader.root(), "model_state_dict"), model);
  if (optimizer) {
    const auto opt = reader.Dict(reader.root(), "optimizer_state_dict");
    const std::string kind = Reader::Has(opt, "optimizer") ? reader.Get(opt, "optimizer").toStringRef() : "SGD";
    if (kind != optimizer->name()) {
      throw DataError(fmt::format("{}: trained with {}, cannot resume with {}", path.string(), kind, optimizer->name()));
    }
    const auto lrs = reader.Get(opt, "lr").toTensor();
    if (lrs.numel() != static_cast<std::int64_t>(optimizer->groups().size())) {
      throw DataError(fmt::format("{}: {} learning rates for {} parameter groups", path.string(), lrs.numel(),
                                  optimizer->groups().size()));
    }
    for (std::size_t g = 0; g < optimizer->groups().size(); ++g) {
      optimizer->groups()[g].lr = lrs[static_cast<std::int64_t>(g)].item<double>();
    }
    if (kind == "SGD") {
      for (const auto& entry : reader.Dict(opt, "momentum_buffers")) {
        optimizer->SetState(entry.key().toStringRef(), "momentum_buffer", entry.value().toTensor());
      }
    } else {
      for (const auto& entry : reader.Dict(opt, "state")) {
        const std::string& key = entry.key().toStringRef();
        const auto colon = key.find(':');
        if (colon == std::string::npos) {
          throw DataError(fmt::format("{}: optimizer state '{}' is not '<key>:<parameter>'", path.string(), key));
        }
        optimizer->SetState(key.substr(colon + 1), key.substr(0, colon), entry.value().toTensor());
      }
    }
  }
  return reader.Meta();
}

}  // namespace asv::train
