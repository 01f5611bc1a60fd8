#include "asvcpp/train/step_memory.h"

#include <torch/torch.h>

#include <algorithm>
#include <utility>
#include <vector>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <mutex>
#include <unordered_map>

#include "asvcpp/compat/torch_compat.h"

namespace asv::train {

namespace {

constexpr std::int64_t kSmallBatch = 2;
constexpr std::int64_t kProbeFrames = 64;

// LibTorch's default CPU allocator, counting the bytes of every tensor alive and their peak. The
// data pointer is its own context (LibTorch's raw_allocate requires it), so sizes are kept by
// pointer.
class CountingCpuAllocator final : public c10::Allocator {
 public:
  // The one instance; never destroyed: tensors allocated through it may outlive the measurement.
  static CountingCpuAllocator& Get() {
    static auto* instance = new CountingCpuAllocator();
    return *instance;
  }

  c10::DataPtr allocate(std::size_t n) ASV_ALLOCATOR_ALLOCATE_CONST override {
    void* p = c10::GetDefaultCPUAllocator()->raw_allocate(n);
    Get().Add(p, n);  // via Get(): allocate() is const in LibTorch 1.13
    return {p, p, &RawFree, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &RawFree; }

#if ASV_ALLOCATOR_HAS_COPY_DATA
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#endif

  // Starts recording the bytes in use, relative to those in use now, after every allocation and free.
  void StartTrace() {
    std::lock_guard<std::mutex> lock(mutex_);
    base_ = in_use_;
    trace_.clear();
    tracing_ = true;
  }
  std::vector<double> StopTrace() {
    std::lock_guard<std::mutex> lock(mutex_);
    tracing_ = false;
    return std::move(trace_);
  }

 private:
  void Add(void* p, std::size_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_[p] = n;
    in_use_ += n;
    Record();
  }
  static void RawFree(void* p) {
    if (p == nullptr) return;
    auto& self = Get();
    {
      std::lock_guard<std::mutex> lock(self.mutex_);
      const auto it = self.sizes_.find(p);
      if (it != self.sizes_.end()) {
        self.in_use_ -= it->second;
        self.sizes_.erase(it);
        self.Record();
      }
    }
    c10::GetDefaultCPUAllocator()->raw_deleter()(p);
  }

  void Record() {  // under mutex_
    if (tracing_) trace_.push_back(static_cast<double>(in_use_) - static_cast<double>(base_));
  }

  mutable std::mutex mutex_;
  std::unordered_map<void*, std::size_t> sizes_;
  std::size_t in_use_ = 0;
  std::size_t base_ = 0;
  bool tracing_ = false;
  std::vector<double> trace_;
};

// Installs `counting` as LibTorch's CPU allocator while alive.
class InstalledAllocator {
 public:
  explicit InstalledAllocator(c10::Allocator* allocator) : previous_(c10::GetCPUAllocator()) {
    c10::SetCPUAllocator(allocator, /*priority=*/0);
  }
  ~InstalledAllocator() { c10::SetCPUAllocator(previous_, /*priority=*/0); }
  InstalledAllocator(const InstalledAllocator&) = delete;
  InstalledAllocator& operator=(const InstalledAllocator&) = delete;

 private:
  c10::Allocator* previous_;
};

// The bytes of CPU tensors in use after each allocation and free of one forward and backward pass
// of `batch` zeros.
std::vector<double> TraceOfStep(CountingCpuAllocator& counting, nnet::SpeakerNet& net, std::int64_t batch,
                                std::int64_t feat_dim, std::int64_t frames) {
  counting.StartTrace();
  {
    const auto x = torch::zeros({batch, feat_dim, frames});
    const auto y = torch::zeros({batch}, torch::kInt64);
    const auto loss = torch::nn::functional::cross_entropy(net.Logits(nnet::ToLayout(x, net.info().layout), y), y);
    loss.backward();
    for (auto& p : net.parameters()) p.mutable_grad() = torch::Tensor();
  }
  return counting.StopTrace();
}

}  // namespace

StepMemory MeasureStepMemory(nnet::SpeakerNet& net, std::int64_t feat_dim, std::int64_t frames, int optimizer_slots) {
  StepMemory m;
  m.frames = frames;
  for (const auto& p : net.parameters()) {
    if (p.requires_grad()) m.parameters += p.numel();
  }
  m.model_bytes = static_cast<std::uint64_t>(m.parameters) * 4u * static_cast<std::uint64_t>(1 + optimizer_slots);

  std::vector<std::pair<torch::Tensor, torch::Tensor>> buffers;  // (buffer, saved copy)
  for (const auto& b : net.buffers()) buffers.emplace_back(b, b.detach().clone());
  const bool was_training = net.is_training();
  net.train();
  const std::int64_t probe_frames = std::min<std::int64_t>(frames, kProbeFrames);
  std::vector<double> small, large;
  {
    auto& counting = CountingCpuAllocator::Get();
    const InstalledAllocator installed(&counting);
    // A first pass makes what LibTorch and oneDNN allocate once (lazily, on first use) before the
    // two that are compared moment by moment.
    (void)TraceOfStep(counting, net, kSmallBatch, feat_dim, probe_frames);
    small = TraceOfStep(counting, net, kSmallBatch, feat_dim, probe_frames);
    large = TraceOfStep(counting, net, 2 * kSmallBatch, feat_dim, probe_frames);
  }
  net.train(was_training);
  {
    torch::NoGradGuard no_grad;
    for (auto& [buffer, saved] : buffers) buffer.copy_(saved);
  }
  const double scale = static_cast<double>(frames) / static_cast<double>(probe_frames);
  const auto line = [&](double at_small, double at_large) {
    const double per_example = std::max(0.0, (at_large - at_small) / kSmallBatch);
    return StepMemory::Line{std::max(0.0, at_small - kSmallBatch * per_example), per_example * scale};
  };
  if (small.size() == large.size()) {
    for (std::size_t i = 0; i < small.size(); ++i) m.step.push_back(line(small[i], large[i]));
  } else {
    const auto peak = [](const std::vector<double>& t) {
      return t.empty() ? 0.0 : *std::max_element(t.begin(), t.end());
    };
    m.step.push_back(line(peak(small), peak(large)));
  }
  return m;
}

}  // namespace asv::train
