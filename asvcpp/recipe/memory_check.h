// Whether a training step fits in the memory of the device it runs on, for `asvrun --dry-run`:
// the step's memory (measured by the recipe's stage runner, StageRunner::TrainingMemory) against
// the memory the CPU or the GPU offers. No LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace asv::recipe {

/// One moment of a training step: `fixed` bytes plus `per_example` bytes for each example of the
/// step, in use at once.
struct MemoryLine {
  double fixed = 0;
  double per_example = 0;
};

/// The peak bytes of a step of `examples` examples: the largest of the lines at `examples`.
double StepPeak(const std::vector<MemoryLine>& lines, std::int64_t examples);

/// The most examples whose StepPeak stays within `bytes`; 0 when not even one fits.
std::int64_t MostExamplesWithin(const std::vector<MemoryLine>& lines, double bytes);

/// `lines` without those that another, steeper line exceeds from 1 example on (they never decide a
/// peak), by ascending per_example: StepPeak is the same for every number of examples >= 1.
std::vector<MemoryLine> UpperEnvelope(std::vector<MemoryLine> lines);

/// The memory one training stage needs on every rank.
struct MemoryNeed {
  std::string stage;               ///< e.g. "stage 5 (train)"
  std::string batch_key;           ///< the global batch setting, e.g. "network.minibatch_size"
  std::int64_t global_batch = 0;   ///< its value (examples per step over all ranks)
  std::string examples;            ///< what an example is, plural, e.g. "segments of 200 frames"
  std::int64_t parameters = 0;     ///< trainable parameters
  std::uint64_t model_bytes = 0;   ///< weights and optimizer state (gradients are in `step`)
  /// The step's memory over time (activations, their gradients, the parameters' gradients).
  std::vector<MemoryLine> step;
  std::string note;                ///< what the estimate leaves out, e.g. "head not counted: ..."; may be empty
  bool estimated = true;           ///< false: nothing was measured, `note` says why
};

/// The memory a device offers one process.
struct DeviceMemory {
  std::string device;       ///< "cpu" or "cuda:N" (physical id)
  std::uint64_t bytes = 0;  ///< available to the process
  std::string source;       ///< where the figure comes from, e.g. "MemAvailable", "cgroup memory.max"
};

/// The CPU memory one process may use: the least of /proc/meminfo's MemAvailable, the cgroup's
/// limit less its usage (cgroup v2 memory.max / memory.current, or v1's memory.limit_in_bytes /
/// memory.usage_in_bytes) and RLIMIT_AS less this process's VmSize, each where present. Divided
/// by `processes` when that many processes share the machine. Never throws; bytes = 0 when
/// nothing can be read.
DeviceMemory AvailableCpuMemory(int processes);

/// A GPU's memory for one process: its total memory less 1 GiB for the CUDA context, cuDNN's
/// workspaces and the caching allocator's fragmentation.
DeviceMemory GpuMemory(int gpu_id, std::int64_t total_bytes);

/// The verdict on one stage.
struct MemoryVerdict {
  bool fits = true;
  std::string line;  ///< one line for the dry run: the estimate, the device's memory, and if it
                     ///< does not fit, the largest global batch that does
};

/// Compares `need` at global_batch / world_size examples per rank with `memory`. When it does
/// not fit, the line names the batch setting and the largest multiple of the world size that
/// fits (or says that the model alone does not fit). `world_size` >= 1.
MemoryVerdict CheckMemory(const MemoryNeed& need, int world_size, const DeviceMemory& memory);

/// Bytes as "1.5 GiB", "320 MiB", "12 KiB", "100 B".
std::string FormatBytes(std::uint64_t bytes);

}  // namespace asv::recipe
