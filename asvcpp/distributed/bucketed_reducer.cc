// The process group's gradient reducer (bucketed_reducer.h): parameters broadcast from rank 0,
// gradients all-reduced in DDP-style buckets launched from AccumulateGrad post-hooks while
// backward runs (strictly in bucket order, so every rank issues the same collectives), buffers
// and statistics all-reduced, flags and barriers through the store. Behaviour beyond the
// GradientReducer interface:
//  - Gradients carry a "defined" flag per parameter: undefined on every rank stays undefined;
//    defined on some ranks gives the mean (zeros for the others) everywhere.
//  - ReduceGradients with parameters other than the hooked model's ones (or before SyncModel)
//    buckets them after backward instead.
#include "asvcpp/distributed/bucketed_reducer.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/nn/module.h>
#include <torch/types.h>

#include "asvcpp/base/log.h"
#include "asvcpp/distributed/bucket_plan.h"
#include "asvcpp/distributed/store.h"
#include "asvcpp/train/gradient_reducer.h"

namespace asv::distributed {
namespace {

constexpr std::size_t kFirstBucketBytes = 1u << 20;

class BucketedReducer;

// Fires after a parameter's gradient has been accumulated (the parameter's AccumulateGrad node).
class GradReadyHook final : public torch::autograd::FunctionPostHook {
 public:
  GradReadyHook(std::weak_ptr<BucketedReducer> reducer, std::uint64_t generation, std::size_t index)
      : reducer_(std::move(reducer)), generation_(generation), index_(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& inputs) override;

 private:
  std::weak_ptr<BucketedReducer> reducer_;
  std::uint64_t generation_;
  std::size_t index_;
};

class BucketedReducer final : public train::GradientReducer, public std::enable_shared_from_this<BucketedReducer> {
 public:
  explicit BucketedReducer(std::shared_ptr<Coordinator> c) : c_(std::move(c)) {}
  ~BucketedReducer() override { RemoveHooks(); }

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

  void AllReduceTensorSum(torch::Tensor& tensor) override {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> v{tensor};
    c_->Run("batch-norm all-reduce", [&] { return c_->Backend().allreduce(v); });
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

}  // namespace

std::shared_ptr<train::GradientReducer> MakeBucketedReducer(std::shared_ptr<Coordinator> coordinator) {
  return std::make_shared<BucketedReducer>(std::move(coordinator));
}

}  // namespace asv::distributed
