// Behaviour beyond process_group.h:
//  - Liveness: every watchdog also bumps heartbeat/<rank> each poll and watches rank + 1's; one
//    that stands still for 60 polls (30 s by default) is reported as failed on its behalf, so a
//    rank killed while the others wait in the store ends the job too.
//  - The peer-failure handler gets rank -1 when a store hosted outside the workers vanished.
//  - ~ProcessGroup: rank 0, when it hosts the store, waits (up to connect_timeout) until every rank left
//    or one failed; the others wait for that store to close, so that a next ProcessGroup on the same
//    port never reaches the old one. Later groups of a process use key prefixes asvcpp.2, ...
//  - Gradients carry a "defined" flag per parameter: undefined on every rank stays undefined;
//    defined on some ranks gives the mean (zeros for the others) everywhere.
//  - ProcessGroup::Create sets SIGPIPE to ignored unless the program installed a handler.
#include "asvcpp/dist/process_group.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/nn/module.h>
#include <torch/types.h>
#include <unistd.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/compat/torch_compat.h"
#include "asvcpp/train/gradient_reducer.h"

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

// The c10d headers compile to nothing without LibTorch's own USE_C10D_* definitions.
#if defined(ASV_WITH_GLOO) && defined(USE_C10D_GLOO)
#define ASV_HAVE_GLOO_PG 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if defined(ASV_WITH_NCCL) && defined(USE_C10D_NCCL)
#define ASV_HAVE_NCCL_PG 1
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace asv::dist {
namespace {

using Clock = std::chrono::steady_clock;
using Milliseconds = std::chrono::milliseconds;
using StorePtr = c10::intrusive_ptr<c10d::Store>;
using TcpStorePtr = c10::intrusive_ptr<c10d::TCPStore>;
using BackendPtr = c10::intrusive_ptr<compat::CollectiveBackend>;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;
using PeerFailureHandler = std::function<void(int rank, const std::string& message)>;

// Every key of a job lives under this prefix (StoreServer::Get reads the same namespace). Keys:
//   world_size/<rank>, joined            rendezvous
//   error/<rank>, errors                 ReportError (the counter is what the watchdogs poll)
//   heartbeat/<rank>                     watchdog liveness counter, watched by rank - 1
//   left/<rank>, left                    a rank ended its ProcessGroup normally
//   signal/<key>                         Signal / WaitFor
//   barrier/<name>                       StoreBarrier
//   reducer/flag/<n>, reducer/barrier/<n>  the reducer's BroadcastFlag and Barrier
constexpr const char* kKeyPrefix = "asvcpp";
constexpr std::size_t kFirstBucketBytes = 1u << 20;
// A rank whose watchdog heartbeat stood still this many polls (at least 1 s) is reported dead.
constexpr int kHeartbeatPolls = 60;

std::vector<std::uint8_t> Bytes(const std::string& s) {
  return {s.begin(), s.end()};
}

std::string Text(const std::vector<std::uint8_t>& b) {
  return {b.begin(), b.end()};
}

std::string Address(const std::string& host, int port) {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

#ifdef ASV_HAVE_GLOO_PG
bool IsLoopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}
#endif

TcpStorePtr OpenTcpStore(const std::string& host, int port, bool is_server, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(port);
  o.isServer = is_server;
  o.waitWorkers = false;
  o.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>(host, o);
}

// A port that was free a moment ago (for LibTorch versions whose TCPStore cannot report an
// OS-chosen port; the caller retries when it was taken meanwhile).
int ProbeFreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("cannot open a socket to find a free port");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  if (port == 0) throw std::runtime_error("cannot find a free TCP port");
  return port;
}

// Sleeps 1, 2, 4, ... ms up to `cap` between polls: short waits stay fast, long ones cheap.
class Backoff {
 public:
  explicit Backoff(Milliseconds cap) : cap_(std::max(cap, Milliseconds(1))) {}
  void Sleep() {
    std::this_thread::sleep_for(next_);
    next_ = std::min(cap_, next_ * 2);
  }

 private:
  Milliseconds cap_;
  Milliseconds next_{1};
};

// What the ProcessGroup and its reducer share: the store connection, the backend and the store-based
// coordination. Lives as long as either of them.
class Coordinator {
 public:
  ProcessGroupOptions options;
  int rank = 0;
  int world_size = 1;
  std::string address;  // host:port of the store
  bool hosts_store = false;
  torch::Device device{torch::kCPU};  // where collectives run (CPU for Gloo, the GPU for NCCL)
  TcpStorePtr tcp;                    // the server too when hosts_store
  StorePtr store;                     // tcp under the job prefix
  BackendPtr backend;

  ~Coordinator() { Close(); }

  // Ends the backend and this rank's store connections (the store server too when hosting).
  // ~ProcessGroup calls it, so that the end of a ProcessGroup is the end of the job's store even when its
  // reducer lives on; using that reducer afterwards throws.
  void Close() {
    if (backend) {
      try {
        compat::ShutdownBackend(*backend);
      } catch (const std::exception& e) {
        ASV_LOG(Warning, "process group shutdown: {}", e.what());
      }
      backend.reset();
    }
    store.reset();
    tcp.reset();
  }

  compat::CollectiveBackend& Backend() {
    if (!backend) throw std::logic_error("the gradient reducer was used after its process group ended");
    return *backend;
  }

  c10d::Store& Store() {
    if (!store) throw std::logic_error("the gradient reducer was used after its process group ended");
    return *store;
  }

  std::string LostStoreMessage() const {
    return fmt::format("lost contact with the rendezvous store at {} (rank 0 or the launcher ended)", address);
  }

  // The first rank other than this one that reported an error, if any.
  std::optional<std::pair<int, std::string>> FindPeerError(c10d::Store& s) const {
    if (s.add("errors", 0) == 0) return std::nullopt;
    for (int r = 0; r < world_size; ++r) {
      const std::string key = fmt::format("error/{}", r);
      if (r != rank && s.check({key})) return std::make_pair(r, Text(s.get(key)));
    }
    return std::nullopt;
  }

  // Polls `done` (store operations allowed) until it returns true; throws when a peer failed or
  // the store is gone. No timeout.
  template <class Done>
  void PollUntil(const Done& done) {
    Backoff backoff(options.poll);
    for (;;) {
      std::optional<std::pair<int, std::string>> failed;
      auto& s = Store();
      try {
        if (done()) return;
        failed = FindPeerError(s);
      } catch (const std::exception& e) {
        throw std::runtime_error(fmt::format("{} ({})", LostStoreMessage(), e.what()));
      }
      if (failed) throw std::runtime_error(fmt::format("rank {} failed: {}", failed->first, failed->second));
      backoff.Sleep();
    }
  }

  void Set(const std::string& key, const std::string& value) { Store().set(key, Bytes(value)); }

  std::string WaitKey(const std::string& key) {
    PollUntil([&] { return Store().check({key}); });
    return Text(Store().get(key));
  }

  void Barrier(const std::string& key) {
    Store().add(key, 1);
    PollUntil([&] { return Store().add(key, 0) >= world_size; });
  }

  // Runs a collective and waits for it; failures name the operation and this rank.
  void Run(const char* what, const std::function<WorkPtr()>& launch) {
    try {
      launch()->wait();
    } catch (const std::logic_error&) {
      throw;  // used after Close()
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("{} failed on rank {} of {}: {}", what, rank, world_size, e.what()));
    }
  }
};

// ---- Gradient reducer --------------------------------------------------------------------------

// Gradients of several parameters (same dtype) reduced as one flat tensor: the gradients one
// after the other, then one "defined on this rank" flag per parameter, so that a parameter whose
// gradient is undefined everywhere stays undefined and one used on some ranks only gets the mean
// (zeros counted for the others) everywhere, as one process accumulating the same microbatches.
struct Bucket {
  std::vector<std::size_t> members;   // indices into BucketPlan::params
  std::vector<std::int64_t> offsets;  // of each member's gradient in `flat`
  std::int64_t numel = 0;             // gradient elements (the flags follow)
  torch::Tensor flat;
  WorkPtr work;
  std::size_t pending = 0;  // members not ready yet (overlapped path)
};

struct BucketPlan {
  std::vector<torch::Tensor> params;
  std::vector<Bucket> buckets;
  std::vector<std::size_t> bucket_of;  // per param
  std::unordered_map<const c10::TensorImpl*, std::size_t> index;
};

// DDP's assignment (compute_bucket_assignment_by_size): `params` in priority order (reverse
// registration order, the order backward produces gradients), one open bucket per
// (dtype, device) closed when it reaches first_cap (its first bucket) or cap bytes; buckets in
// the order of their first parameter. Every rank computes the same plan from the same list.
BucketPlan MakePlan(const std::vector<torch::Tensor>& params, std::size_t first_cap, std::size_t cap,
                    const torch::Device& device) {
  BucketPlan plan;
  plan.params = params;
  using Key = std::pair<int, std::string>;
  std::map<Key, std::size_t> open;  // -> index into `made`
  std::map<Key, int> closed_count;
  std::vector<Bucket> made;
  std::vector<std::size_t> bytes;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    const Key key{static_cast<int>(p.scalar_type()), p.device().str()};
    auto it = open.find(key);
    if (it == open.end()) {
      it = open.emplace(key, made.size()).first;
      made.emplace_back();
      bytes.push_back(0);
    }
    Bucket& b = made[it->second];
    b.members.push_back(i);
    b.offsets.push_back(b.numel);
    b.numel += p.numel();
    bytes[it->second] += static_cast<std::size_t>(p.numel()) * p.element_size();
    const std::size_t limit = closed_count[key] == 0 ? first_cap : cap;
    if (bytes[it->second] >= limit) {
      ++closed_count[key];
      open.erase(it);
    }
  }
  std::sort(made.begin(), made.end(),
            [](const Bucket& a, const Bucket& b) { return a.members.front() < b.members.front(); });
  plan.bucket_of.assign(params.size(), 0);
  for (std::size_t k = 0; k < made.size(); ++k) {
    auto& b = made[k];
    const auto& first = params[b.members.front()];
    b.flat = torch::zeros({b.numel + static_cast<std::int64_t>(b.members.size())},
                          torch::TensorOptions().dtype(first.scalar_type()).device(device));
    for (auto m : b.members) plan.bucket_of[m] = k;
  }
  plan.buckets = std::move(made);
  for (std::size_t i = 0; i < params.size(); ++i) plan.index.emplace(params[i].unsafeGetTensorImpl(), i);
  return plan;
}

bool SameSet(const BucketPlan& plan, const std::vector<torch::Tensor>& params) {
  std::size_t n = 0;
  for (const auto& p : params) {
    if (!p.requires_grad()) continue;
    if (!plan.index.count(p.unsafeGetTensorImpl())) return false;
    ++n;
  }
  return n == plan.params.size();
}

// Parameters and buffers grouped by dtype and device (order kept) in chunks of at most
// `cap` bytes (a larger tensor forms its own chunk).
std::vector<std::vector<torch::Tensor>> Chunks(const std::vector<torch::Tensor>& tensors, std::size_t cap) {
  std::vector<std::vector<torch::Tensor>> chunks;
  std::map<std::pair<int, std::string>, std::pair<std::size_t, std::size_t>> open;  // -> chunk, bytes
  for (const auto& t : tensors) {
    if (!t.defined() || t.numel() == 0) continue;
    const auto key = std::make_pair(static_cast<int>(t.scalar_type()), t.device().str());
    const std::size_t size = static_cast<std::size_t>(t.numel()) * t.element_size();
    auto it = open.find(key);
    if (it == open.end() || it->second.second + size > cap) {
      chunks.emplace_back();
      it = open.insert_or_assign(key, std::make_pair(chunks.size() - 1, std::size_t{0})).first;
    }
    chunks[it->second.first].push_back(t);
    it->second.second += size;
  }
  return chunks;
}

// Gloo has no bool reductions/broadcasts in every version: move bools as bytes.
torch::ScalarType WireType(torch::ScalarType t) {
  return t == torch::kBool ? torch::kUInt8 : t;
}

torch::Tensor Flatten(const std::vector<torch::Tensor>& tensors, const torch::Device& device) {
  std::vector<torch::Tensor> parts;
  parts.reserve(tensors.size());
  for (const auto& t : tensors) parts.push_back(t.reshape({-1}));
  return torch::cat(parts).to(device, WireType(tensors.front().scalar_type()));
}

void Unflatten(const torch::Tensor& flat, const std::vector<torch::Tensor>& tensors) {
  std::int64_t offset = 0;
  for (const auto& t : tensors) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

class ProcessGroupReducer;

// Fires after a parameter's gradient has been accumulated (the parameter's AccumulateGrad node).
class GradReadyHook final : public torch::autograd::FunctionPostHook {
 public:
  GradReadyHook(std::weak_ptr<ProcessGroupReducer> reducer, std::uint64_t generation, std::size_t index)
      : reducer_(std::move(reducer)), generation_(generation), index_(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& inputs) override;

 private:
  std::weak_ptr<ProcessGroupReducer> reducer_;
  std::uint64_t generation_;
  std::size_t index_;
};

class ProcessGroupReducer final : public train::GradientReducer,
                                  public std::enable_shared_from_this<ProcessGroupReducer> {
 public:
  explicit ProcessGroupReducer(std::shared_ptr<Coordinator> c) : c_(std::move(c)) {}
  ~ProcessGroupReducer() override { RemoveHooks(); }

  int rank() const override { return c_->rank; }
  int world_size() const override { return c_->world_size; }

  void SyncModel(torch::nn::Module& module) override {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> tensors = module.parameters();
    const auto buffers = module.buffers();
    tensors.insert(tensors.end(), buffers.begin(), buffers.end());
    Broadcast(tensors);
    std::vector<torch::Tensor> trainable;
    for (const auto& p : module.parameters()) {
      if (p.requires_grad()) trainable.push_back(p);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    InstallHooks(trainable);
  }

  void BeginBackward(bool will_step) override {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = will_step && hooked_.has_value();
    if (!armed_) return;
    next_ = 0;
    ready_.assign(hooked_->params.size(), false);
    for (auto& b : hooked_->buckets) {
      b.pending = b.members.size();
      b.work.reset();
    }
  }

  void ReduceGradients(const std::vector<torch::Tensor>& parameters) override {
    torch::NoGradGuard no_grad;
    std::lock_guard<std::mutex> lock(mutex_);
    const bool armed = armed_;
    armed_ = false;
    const bool hooked_match = hooked_ && SameSet(*hooked_, parameters);
    const bool hooked_ran = hooked_ && (armed || hooked_match);
    if (hooked_ran) {
      if (!armed) {  // no BeginBackward(true) before this backward: nothing was launched
        next_ = 0;
        for (auto& b : hooked_->buckets) b.work.reset();
      }
      // Buckets launched during backward, then the rest, strictly in bucket order.
      if (!overlap_logged_) {
        overlap_logged_ = true;
        ASV_LOG0(Debug, "gradient reducer: {} of {} buckets were all-reduced during the first backward pass", next_,
                 hooked_->buckets.size());
      }
      while (next_ < hooked_->buckets.size()) Launch(*hooked_, next_++);
      Finish(*hooked_);
      if (hooked_match) return;
    }
    // Fallback (no hooks, or a parameter list other than the model's): bucket after backward.
    std::vector<torch::Tensor> rest;
    for (const auto& p : parameters) {
      if (!p.requires_grad()) continue;
      if (hooked_ran && hooked_->index.count(p.unsafeGetTensorImpl())) continue;
      rest.push_back(p);
    }
    if (rest.empty()) return;
    BucketPlan& plan = FallbackPlan(rest);
    for (std::size_t k = 0; k < plan.buckets.size(); ++k) Launch(plan, k);
    Finish(plan);
  }

  void SyncBuffers(torch::nn::Module& module) override {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> floating, other;
    for (const auto& b : module.buffers()) (b.is_floating_point() ? floating : other).push_back(b);
    for (const auto& chunk : Chunks(floating, c_->options.bucket_bytes)) {
      auto flat = Flatten(chunk, c_->device);
      std::vector<torch::Tensor> v{flat};
      c_->Run("buffer all-reduce", [&] { return c_->Backend().allreduce(v); });
      flat.div_(c_->world_size);
      Unflatten(flat, chunk);
    }
    Broadcast(other);
  }

  std::vector<double> AllReduceSum(const std::vector<double>& values) override {
    if (values.empty()) return {};
    auto t = torch::tensor(values, torch::kFloat64).to(c_->device);
    std::vector<torch::Tensor> v{t};
    c_->Run("statistics all-reduce", [&] { return c_->Backend().allreduce(v); });
    t = t.to(torch::kCPU).contiguous();
    const double* p = t.data_ptr<double>();
    return {p, p + t.numel()};
  }

  bool BroadcastFlag(bool flag) override {
    const std::string key = fmt::format("reducer/flag/{}", ++sequence_);
    if (c_->rank == 0) {
      c_->Set(key, flag ? "1" : "0");
      return flag;
    }
    return c_->WaitKey(key) == "1";
  }

  void Barrier() override { c_->Barrier(fmt::format("reducer/barrier/{}", ++sequence_)); }

  void GradReady(std::uint64_t generation, std::size_t index) {
    torch::NoGradGuard no_grad;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!armed_ || !hooked_ || generation != generation_ || index >= ready_.size() || ready_[index]) return;
    ready_[index] = true;
    auto& bucket = hooked_->buckets[hooked_->bucket_of[index]];
    if (--bucket.pending > 0) return;
    while (next_ < hooked_->buckets.size() && hooked_->buckets[next_].pending == 0) Launch(*hooked_, next_++);
  }

 private:
  void Broadcast(const std::vector<torch::Tensor>& tensors) {
    for (const auto& chunk : Chunks(tensors, c_->options.bucket_bytes)) {
      auto flat = Flatten(chunk, c_->device);
      std::vector<torch::Tensor> v{flat};
      c10d::BroadcastOptions o;
      o.rootRank = 0;
      c_->Run("model broadcast", [&] { return c_->Backend().broadcast(v, o); });
      Unflatten(flat, chunk);
    }
  }

  void InstallHooks(const std::vector<torch::Tensor>& params) {
    if (hooked_ && hooked_->params.size() == params.size() &&
        std::equal(params.begin(), params.end(), hooked_->params.begin(),
                   [](const torch::Tensor& a, const torch::Tensor& b) { return a.is_same(b); })) {
      return;  // same parameters (e.g. a checkpoint copied into them): hooks stay
    }
    RemoveHooks();
    ++generation_;
    armed_ = false;
    if (params.empty()) return;
    std::vector<torch::Tensor> reversed(params.rbegin(), params.rend());
    const std::size_t cap = std::max<std::size_t>(1, c_->options.bucket_bytes);
    hooked_ = MakePlan(reversed, std::min(kFirstBucketBytes, cap), cap, c_->device);
    std::vector<std::pair<std::shared_ptr<torch::autograd::Node>, std::uintptr_t>> hooks;
    for (std::size_t i = 0; i < reversed.size(); ++i) {
      auto accumulator = torch::autograd::impl::grad_accumulator(reversed[i]);
      if (!accumulator) {
        ASV_LOG(Debug, "no gradient accumulator for a parameter: gradients are reduced after backward");
        for (auto& [node, key] : hooks) node->del_post_hook(key);
        hooked_.reset();
        return;
      }
      const auto key = accumulator->add_post_hook(std::make_unique<GradReadyHook>(weak_from_this(), generation_, i));
      hooks.emplace_back(std::move(accumulator), key);
    }
    // Keeping the accumulators alive keeps the hooks: a parameter holds only a weak_ptr to it.
    hooks_ = std::move(hooks);
    ASV_LOG0(Debug, "gradient reducer: {} parameters in {} buckets, all-reduced as backward produces them",
             params.size(), hooked_->buckets.size());
  }

  void RemoveHooks() {
    for (auto& [node, key] : hooks_) node->del_post_hook(key);
    hooks_.clear();
    hooked_.reset();
  }

  BucketPlan& FallbackPlan(const std::vector<torch::Tensor>& params) {
    const bool same = fallback_ && fallback_->params.size() == params.size() &&
                      std::equal(params.begin(), params.end(), fallback_->params.rbegin(),
                                 [](const torch::Tensor& a, const torch::Tensor& b) { return a.is_same(b); });
    if (!same) {
      std::vector<torch::Tensor> reversed(params.rbegin(), params.rend());
      const std::size_t cap = std::max<std::size_t>(1, c_->options.bucket_bytes);
      fallback_ = MakePlan(reversed, std::min(kFirstBucketBytes, cap), cap, c_->device);
      ASV_LOG0(Debug, "gradient reducer: {} parameters other than the model's hooked ones, {} buckets after backward",
               params.size(), fallback_->buckets.size());
    }
    return *fallback_;
  }

  // Copies the members' gradients (zeros and flag 0 where undefined) and starts the all-reduce.
  void Launch(BucketPlan& plan, std::size_t k) {
    Bucket& b = plan.buckets[k];
    std::vector<float> flags;
    flags.reserve(b.members.size());
    bool all_defined = true;
    for (std::size_t j = 0; j < b.members.size(); ++j) {
      const auto& p = plan.params[b.members[j]];
      auto slice = b.flat.narrow(0, b.offsets[j], p.numel());
      const auto& g = p.grad();
      if (g.defined()) {
        slice.view(p.sizes()).copy_(g.is_sparse() ? g.to_dense() : g);
      } else {
        slice.zero_();
        all_defined = false;
      }
      flags.push_back(g.defined() ? 1.0F : 0.0F);
    }
    auto flag_slice = b.flat.narrow(0, b.numel, static_cast<std::int64_t>(flags.size()));
    if (all_defined) {
      flag_slice.fill_(1);  // the usual case: no host-to-device copy
    } else {
      flag_slice.copy_(torch::tensor(flags, torch::kFloat32).to(b.flat.options()));
    }
    std::vector<torch::Tensor> v{b.flat};
    try {
      b.work = c_->Backend().allreduce(v);
    } catch (const std::exception& e) {
      throw std::runtime_error(
          fmt::format("gradient all-reduce failed on rank {} of {}: {}", c_->rank, c_->world_size, e.what()));
    }
  }

  // Waits for every bucket and writes the means back into the gradients.
  void Finish(BucketPlan& plan) {
    for (auto& b : plan.buckets) {
      if (!b.work) continue;
      try {
        b.work->wait();
      } catch (const std::exception& e) {
        throw std::runtime_error(
            fmt::format("gradient all-reduce failed on rank {} of {}: {}", c_->rank, c_->world_size, e.what()));
      }
      b.work.reset();
      b.flat.div_(c_->world_size);
      torch::Tensor flags;  // read only when a local gradient is undefined
      for (std::size_t j = 0; j < b.members.size(); ++j) {
        auto& p = plan.params[b.members[j]];
        auto mean = b.flat.narrow(0, b.offsets[j], p.numel()).view(p.sizes());
        auto& g = p.mutable_grad();
        if (g.defined() && !g.is_sparse()) {
          g.copy_(mean);
          continue;
        }
        if (!g.defined()) {
          if (!flags.defined()) {
            flags =
                b.flat.narrow(0, b.numel, static_cast<std::int64_t>(b.members.size())).to(torch::kCPU, torch::kFloat32);
          }
          if (flags[static_cast<std::int64_t>(j)].item<float>() <= 0) continue;  // undefined on every rank
        }
        g = mean.clone().to(p.device());
      }
    }
  }

  std::shared_ptr<Coordinator> c_;
  std::mutex mutex_;  // hook state: hooks run on autograd threads
  std::optional<BucketPlan> hooked_;
  std::vector<std::pair<std::shared_ptr<torch::autograd::Node>, std::uintptr_t>> hooks_;
  std::uint64_t generation_ = 0;
  bool armed_ = false;
  std::size_t next_ = 0;  // next bucket to launch
  std::vector<bool> ready_;
  std::optional<BucketPlan> fallback_;
  std::uint64_t sequence_ = 0;  // BroadcastFlag / Barrier keys
  bool overlap_logged_ = false;
};

torch::autograd::variable_list GradReadyHook::operator()(const torch::autograd::variable_list& outputs,
                                                         const torch::autograd::variable_list& inputs) {
  (void)inputs;
  if (auto reducer = reducer_.lock()) reducer->GradReady(generation_, index_);
  return outputs;
}

enum class BackendKind { kGloo, kNccl };

}  // namespace

// ---- StoreServer --------------------------------------------------------------------------------

struct StoreServer::Impl {
  TcpStorePtr tcp;
  StorePtr store;
  int port = 0;
};

StoreServer::StoreServer(int port, std::chrono::seconds timeout) : impl_(std::make_unique<Impl>()) {
  if (port < 0 || port > 65535) throw std::runtime_error(fmt::format("invalid store port {}", port));
  const auto start = [&](int p) {
    try {
      return OpenTcpStore("127.0.0.1", p, true, timeout);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("cannot start the rendezvous store on port {}: {}", p, e.what()));
    }
  };
  impl_->tcp = start(port);
  impl_->port = impl_->tcp->getPort();
  if (impl_->port == 0) {
    // This LibTorch does not report the port it bound: pick one ourselves (retry when another
    // process took it between the probe and the bind).
    impl_->tcp.reset();
    for (int attempt = 1;; ++attempt) {
      const int p = ProbeFreePort();
      try {
        impl_->tcp = start(p);
        impl_->port = p;
        break;
      } catch (const std::exception&) {
        if (attempt == 20) throw;
      }
    }
  }
  impl_->store = c10::make_intrusive<c10d::PrefixStore>(kKeyPrefix, impl_->tcp);
  ASV_LOG(Debug, "rendezvous store listening on port {}", impl_->port);
}

StoreServer::~StoreServer() = default;

int StoreServer::port() const {
  return impl_->port;
}

std::optional<std::string> StoreServer::Get(const std::string& key) const {
  if (!impl_->store->check({key})) return std::nullopt;
  return Text(impl_->store->get(key));
}

// ---- ProcessGroup --------------------------------------------------------------------------------------

struct ProcessGroup::Impl {
  std::shared_ptr<Coordinator> c;
  std::string prefix = kKeyPrefix;
  std::shared_ptr<ProcessGroupReducer> reducer;

  // Watchdog: its own store connection, so that it never queues behind the main thread.
  TcpStorePtr watch_tcp;
  StorePtr watch;
  std::thread watchdog;
  std::mutex mutex;  // stop flag and handler
  std::condition_variable wake;
  bool stop = false;
  PeerFailureHandler handler;
  std::atomic<bool> failed{false};    // the peer-failure handler ran
  std::atomic<bool> reported{false};  // ReportError ran

  void StartWatchdog() {
    watch_tcp = OpenTcpStore(c->options.world.master_addr, c->options.world.master_port, false,
                             std::chrono::duration_cast<Milliseconds>(c->options.connect_timeout));
    watch = c10::make_intrusive<c10d::PrefixStore>(prefix, watch_tcp);
    watchdog = std::thread([this] { WatchLoop(); });
  }

  void StopWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    wake.notify_all();
    if (watchdog.joinable()) watchdog.join();
  }

  // Waits `poll`; false when asked to stop.
  bool Pause() {
    std::unique_lock<std::mutex> lock(mutex);
    return !wake.wait_for(lock, c->options.poll, [this] { return stop; });
  }

  bool Stopping() {
    std::lock_guard<std::mutex> lock(mutex);
    return stop;
  }

  void Fail(int rank, const std::string& message) {
    if (failed.exchange(true)) return;
    PeerFailureHandler h;
    {
      std::lock_guard<std::mutex> lock(mutex);
      h = handler;
    }
    if (h) {
      h(rank, message);
      return;
    }
    if (rank >= 0) {
      ASV_LOG(Error, "rank {} failed: {}", rank, message);
    } else {
      ASV_LOG(Error, "{}", message);
    }
    std::_Exit(kExitStageError);
  }

  void WatchLoop() {
    const int self = c->rank;
    const int successor = (self + 1) % c->world_size;
    const auto stale_limit = std::max<Clock::duration>(std::chrono::seconds(1), c->options.poll * kHeartbeatPolls);
    const std::string own_beat = fmt::format("heartbeat/{}", self);
    const std::string peer_beat = fmt::format("heartbeat/{}", successor);
    std::int64_t seen_errors = 0;
    std::int64_t last_beat = -1;
    auto last_change = Clock::now();
    do {
      try {
        watch->add(own_beat, 1);
        const auto errors = watch->add("errors", 0);
        if (errors > seen_errors) {
          seen_errors = errors;
          if (auto e = c->FindPeerError(*watch)) return Fail(e->first, e->second);
        }
        if (successor == self) continue;
        const auto beat = watch->add(peer_beat, 0);
        if (beat != last_beat) {
          last_beat = beat;
          last_change = Clock::now();
        } else if (Clock::now() - last_change > stale_limit && !watch->check({fmt::format("left/{}", successor)})) {
          const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - last_change).count();
          const std::string message =
              fmt::format("no sign of life for {} s (the process died or hangs; reported by rank {})", seconds, self);
          const std::string key = fmt::format("error/{}", successor);
          if (!watch->check({key})) {
            watch->set(key, Bytes(message));
            watch->add("errors", 1);
          }
          return Fail(successor, Text(watch->get(key)));
        }
      } catch (const std::exception& e) {
        if (Stopping()) return;
        ASV_LOG(Debug, "watchdog: store error: {}", e.what());
        return Fail(c->options.world.store_hosted_externally ? -1 : 0, c->LostStoreMessage());
      }
    } while (Pause());
  }
};

ProcessGroup::ProcessGroup() : impl_(std::make_unique<Impl>()) {}

ProcessGroup::~ProcessGroup() {
  auto& m = *impl_;
  if (!m.watchdog.joinable()) return;
  auto& c = *m.c;
  if (std::uncaught_exceptions() > 0 && !m.reported) {
    // Destroyed while an exception propagates: the others must not wait for this rank.
    ReportError("the process group ended because of an exception");
  }
  // Ranks mark that they left. Rank 0, when it hosts the store, keeps it (and its watchdog) up
  // until every rank left or one failed, so that nobody's watchdog sees the store vanish at the
  // end of a successful job. The other ranks then wait for that store to close, so that a next
  // ProcessGroup on the same port never reaches the old store.
  if (!c.hosts_store) m.StopWatchdog();
  const auto deadline = Clock::now() + c.options.connect_timeout;
  Backoff backoff(c.options.poll);
  try {
    c.Set(fmt::format("left/{}", c.rank), "1");
    c.store->add("left", 1);
    if (c.hosts_store) {
      while (c.store->add("left", 0) < c.world_size && c.store->add("errors", 0) == 0 && Clock::now() < deadline) {
        backoff.Sleep();
      }
    } else if (!c.options.world.store_hosted_externally) {
      while (c.store->add("errors", 0) == 0 && Clock::now() < deadline) backoff.Sleep();
    }
  } catch (const std::exception& e) {
    ASV_LOG(Debug, "left the process group: {}", e.what());  // rank 0 closed the store: expected
  }
  m.StopWatchdog();
  c.Close();
}

std::shared_ptr<ProcessGroup> ProcessGroup::Create(const ProcessGroupOptions& options) {
  const WorldInfo& w = options.world;
  if (w.world_size < 1 || w.rank < 0 || w.rank >= w.world_size) {
    throw ConfigError(fmt::format("invalid process group: rank {} of {}", w.rank, w.world_size));
  }
  if (w.master_port < 1 || w.master_port > 65535) {
    throw ConfigError(fmt::format("invalid rendezvous port {} (MASTER_PORT)", w.master_port));
  }
  BackendKind kind = BackendKind::kGloo;
  torch::Device device(torch::kCPU);
  if (options.device == "cpu") {
#ifndef ASV_HAVE_GLOO_PG
    throw ConfigError("data-parallel training on the CPU needs Gloo, which this LibTorch build lacks");
#endif
  } else if (options.device.rfind("cuda", 0) == 0) {
    try {
      device = torch::Device(options.device);
    } catch (const std::exception&) {
      throw ConfigError(fmt::format("invalid device '{}' for data-parallel training (cpu or cuda:N)", options.device));
    }
    if (!device.has_index()) device = torch::Device(torch::kCUDA, 0);
    kind = BackendKind::kNccl;
#ifndef ASV_HAVE_NCCL_PG
    throw ConfigError("data-parallel training on CUDA needs NCCL, which this LibTorch build lacks");
#endif
  } else {
    throw ConfigError(fmt::format("invalid device '{}' for data-parallel training (cpu or cuda:N)", options.device));
  }

  // Several groups in one process (one after the other) on one external store get their own
  // key spaces; every rank creates them in the same order.
  static std::atomic<int> groups_created{0};
  const int generation = ++groups_created;

  // A peer that dies while we write to its socket must give an error (EPIPE), not kill this
  // process silently with SIGPIPE (Python, the usual host of c10d, ignores SIGPIPE too). A
  // handler installed by the program stays.
  struct sigaction pipe_action {};
  if (::sigaction(SIGPIPE, nullptr, &pipe_action) == 0 && pipe_action.sa_handler == SIG_DFL) {
    ::signal(SIGPIPE, SIG_IGN);
  }

  std::shared_ptr<ProcessGroup> group(new ProcessGroup());
  auto& m = *group->impl_;
  m.c = std::make_shared<Coordinator>();
  auto& c = *m.c;
  c.options = options;
  c.rank = w.rank;
  c.world_size = w.world_size;
  c.device = device;
  c.hosts_store = w.rank == 0 && !w.store_hosted_externally;
  c.address = Address(w.master_addr, w.master_port);
  m.prefix = generation == 1 ? std::string(kKeyPrefix) : fmt::format("{}.{}", kKeyPrefix, generation);
  const auto connect_timeout = std::chrono::duration_cast<Milliseconds>(options.connect_timeout);

  try {
    c.tcp = OpenTcpStore(w.master_addr, w.master_port, c.hosts_store, connect_timeout);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("rank {}: cannot {} the rendezvous store at {} within {} s: {}", w.rank,
                                         c.hosts_store ? "start" : "reach", c.address, options.connect_timeout.count(),
                                         e.what()));
  }
  c.store = c10::make_intrusive<c10d::PrefixStore>(m.prefix, c.tcp);

  // Rendezvous: everybody registers its world size, then waits for the others.
  const auto deadline = Clock::now() + options.connect_timeout;
  std::int64_t joined = 0;
  try {
    c.Set(fmt::format("world_size/{}", w.rank), std::to_string(w.world_size));
    c.store->add("joined", 1);
    Backoff backoff(options.poll);
    while ((joined = c.store->add("joined", 0)) < w.world_size) {
      if (Clock::now() > deadline) {
        throw std::runtime_error(fmt::format("rendezvous at the store {} timed out after {} s: {} of {} ranks joined",
                                             c.address, options.connect_timeout.count(), joined, w.world_size));
      }
      backoff.Sleep();
    }
    for (int r = 0; r < w.world_size; ++r) {
      const std::string key = fmt::format("world_size/{}", r);
      const std::string theirs = c.store->check({key}) ? Text(c.store->get(key)) : "?";
      if (theirs != std::to_string(w.world_size)) {
        throw std::runtime_error(
            fmt::format("ranks disagree on the world size (store {}): rank {} has {}, rank {} has {}", c.address,
                        w.rank, w.world_size, r, theirs));
      }
    }
  } catch (const c10::Error& e) {
    throw std::runtime_error(
        fmt::format("rendezvous at the store {} failed: {}", c.address, e.what_without_backtrace()));
  }

  const auto collective_timeout = std::chrono::duration_cast<Milliseconds>(options.collective_timeout);
  try {
    if (kind == BackendKind::kGloo) {
#ifdef ASV_HAVE_GLOO_PG
      auto o = c10d::ProcessGroupGloo::Options::create(collective_timeout);
      const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
      if (ifname != nullptr && *ifname != '\0') {
        std::string list = ifname;
        for (std::size_t start = 0; start <= list.size();) {
          const auto end = std::min(list.find(',', start), list.size());
          const auto name = list.substr(start, end - start);
          if (!name.empty()) o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
          start = end + 1;
        }
      } else if (IsLoopback(w.master_addr)) {
        o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      } else {
        o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      }
      o->threads = 2;
      c.backend = c10::make_intrusive<c10d::ProcessGroupGloo>(c.store, w.rank, w.world_size, o);
#endif
    } else {
#ifdef ASV_HAVE_NCCL_PG
      c10::cuda::set_device(device.index());
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = collective_timeout;
      auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(c.store, w.rank, w.world_size, o);
      compat::BindDevice(*nccl, device);
      c.backend = nccl;
#endif
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("rank {} of {}: cannot build the {} process group (store {}): {}", w.rank,
                                         w.world_size, kind == BackendKind::kGloo ? "Gloo" : "NCCL", c.address,
                                         e.what()));
  }

  try {
    m.StartWatchdog();
  } catch (const std::exception& e) {
    throw std::runtime_error(
        fmt::format("rank {}: cannot open the watchdog's connection to the store {}: {}", w.rank, c.address, e.what()));
  }
  log::SetRank(w.rank, w.world_size);
  ASV_LOG0(Info, "process group: {} ranks, {} on {}, rendezvous store {}{}", w.world_size,
           kind == BackendKind::kGloo ? "Gloo" : "NCCL", options.device, c.address,
           c.hosts_store ? " (hosted by rank 0)" : "");
  return group;
}

const WorldInfo& ProcessGroup::world() const {
  return impl_->c->options.world;
}

int ProcessGroup::rank() const {
  return impl_->c->rank;
}

int ProcessGroup::world_size() const {
  return impl_->c->world_size;
}

std::shared_ptr<train::GradientReducer> ProcessGroup::reducer() {
  if (!impl_->reducer) impl_->reducer = std::make_shared<ProcessGroupReducer>(impl_->c);
  return impl_->reducer;
}

void ProcessGroup::Signal(const std::string& key, const std::string& value) {
  impl_->c->Set("signal/" + key, value);
}

std::string ProcessGroup::WaitFor(const std::string& key) {
  return impl_->c->WaitKey("signal/" + key);
}

void ProcessGroup::StoreBarrier(const std::string& name) {
  impl_->c->Barrier("barrier/" + name);
}

void ProcessGroup::ReportError(const std::string& message) {
  auto& c = *impl_->c;
  if (impl_->reported.exchange(true)) return;  // the first report (the cause) stays
  try {
    c.Set(fmt::format("error/{}", c.rank), message);
    c.store->add("errors", 1);
  } catch (const std::exception& e) {
    ASV_LOG(Warning, "cannot report the error to the other ranks ({}): {}", c.address, e.what());
  }
}

void ProcessGroup::SetPeerFailureHandler(std::function<void(int rank, const std::string& message)> handler) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->handler = std::move(handler);
}

}  // namespace asv::dist
