#include "asvcpp/recipe/memory_check.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <fstream>
#include <optional>
#include <sstream>

namespace asv::recipe {

namespace {

// "<key>: <value> kB" of a /proc file, in bytes.
std::optional<std::uint64_t> ProcKilobytes(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size() + 1, key + ":") != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    std::uint64_t kb = 0;
    if (fields >> kb) return kb * 1024;
  }
  return std::nullopt;
}

// A file holding one number (cgroup files); nullopt for "max", a missing file or other text.
std::optional<std::uint64_t> NumberIn(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

DeviceMemory AvailableCpuMemory(int processes) {
  DeviceMemory m{"cpu", 0, ""};
  const auto consider = [&m](std::optional<std::uint64_t> bytes, const char* source) {
    if (bytes && (m.source.empty() || *bytes < m.bytes)) {
      m.bytes = *bytes;
      m.source = source;
    }
  };
  consider(ProcKilobytes("/proc/meminfo", "MemAvailable"), "MemAvailable");
  const auto limit_less_usage = [](const char* limit_file, const char* usage_file) -> std::optional<std::uint64_t> {
    const auto limit = NumberIn(limit_file);
    if (!limit || *limit >= (std::uint64_t{1} << 60)) return std::nullopt;  // v1 writes a huge number for none
    const auto usage = NumberIn(usage_file).value_or(0);
    return *limit > usage ? *limit - usage : 0;
  };
  consider(limit_less_usage("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"), "cgroup memory.max");
  consider(limit_less_usage("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                            "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
           "cgroup memory.limit_in_bytes");
  rlimit address_space{};
  if (::getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY) {
    const std::uint64_t used = ProcKilobytes("/proc/self/status", "VmSize").value_or(0);
    const std::uint64_t limit = address_space.rlim_cur;
    consider(limit > used ? limit - used : 0, "RLIMIT_AS (ulimit -v)");
  }
  if (processes > 1) m.bytes /= static_cast<std::uint64_t>(processes);
  return m;
}

DeviceMemory GpuMemory(int gpu_id, std::int64_t total_bytes) {
  const std::uint64_t reserve = std::uint64_t{1} << 30;
  const auto total = static_cast<std::uint64_t>(std::max<std::int64_t>(0, total_bytes));
  return {fmt::format("cuda:{}", gpu_id), total > reserve ? total - reserve : 0,
          "total memory less 1 GiB for the CUDA context and workspaces"};
}

double StepPeak(const std::vector<MemoryLine>& lines, std::int64_t examples) {
  double peak = 0;
  for (const auto& l : lines) peak = std::max(peak, l.fixed + static_cast<double>(examples) * l.per_example);
  return peak;
}

std::int64_t MostExamplesWithin(const std::vector<MemoryLine>& lines, double bytes) {
  double most = std::numeric_limits<double>::infinity();
  for (const auto& l : lines) {
    if (l.fixed > bytes) return 0;
    if (l.per_example > 0) most = std::min(most, std::floor((bytes - l.fixed) / l.per_example));
  }
  if (std::isinf(most)) return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(std::max(0.0, most));
}

std::vector<MemoryLine> UpperEnvelope(std::vector<MemoryLine> lines) {
  std::sort(lines.begin(), lines.end(), [](const MemoryLine& a, const MemoryLine& b) {
    return a.per_example != b.per_example ? a.per_example < b.per_example : a.fixed > b.fixed;
  });
  std::vector<MemoryLine> kept;
  for (const auto& l : lines) {
    if (!kept.empty() && kept.back().per_example == l.per_example) continue;  // same slope, less fixed
    // A line with a smaller slope loses where this one is larger at 1 example and beyond.
    while (!kept.empty() && kept.back().fixed + kept.back().per_example <= l.fixed + l.per_example) kept.pop_back();
    kept.push_back(l);
  }
  return kept;
}

std::string FormatBytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

MemoryVerdict CheckMemory(const MemoryNeed& need, int world_size, const DeviceMemory& memory) {
  if (!need.estimated) return {true, fmt::format("{}: not estimated: {}", need.stage, need.note)};
  const std::int64_t per_rank = need.global_batch / std::max(1, world_size);
  const auto total = need.model_bytes + static_cast<std::uint64_t>(StepPeak(need.step, per_rank));
  double largest_slope = 0;
  for (const auto& l : need.step) largest_slope = std::max(largest_slope, l.per_example);
  MemoryVerdict v;
  std::string estimate = fmt::format(
      "{}: about {} per rank ({} {} per rank; the model's {} parameters: {} of weights and optimizer state; up to "
      "{} more per example)",
      need.stage, FormatBytes(total), per_rank, need.examples, need.parameters, FormatBytes(need.model_bytes),
      FormatBytes(static_cast<std::uint64_t>(largest_slope)));
  if (!need.note.empty()) estimate += "; " + need.note;
  if (memory.bytes == 0) {
    v.line = estimate + fmt::format("; the memory of {} is unknown", memory.device);
    return v;
  }
  v.fits = total <= memory.bytes;
  if (v.fits) {
    v.line = estimate + fmt::format("; {} has {} ({})", memory.device, FormatBytes(memory.bytes), memory.source);
    return v;
  }
  const std::int64_t fitting =
      need.model_bytes >= memory.bytes ? 0 : MostExamplesWithin(need.step, static_cast<double>(memory.bytes - need.model_bytes));
  if (need.model_bytes >= memory.bytes) {
    v.line = estimate + fmt::format("; {} has only {} ({}): the model alone does not fit", memory.device,
                                    FormatBytes(memory.bytes), memory.source);
    return v;
  }
  if (fitting == 0) {
    v.line = estimate + fmt::format("; {} has only {} ({}): not even one example per rank fits", memory.device,
                                    FormatBytes(memory.bytes), memory.source);
    return v;
  }
  const std::int64_t global = fitting * std::max(1, world_size);
  v.line = estimate + fmt::format("; {} has only {} ({}): at most {} {} per rank fit, so lower {} to at most {}",
                                  memory.device, FormatBytes(memory.bytes), memory.source, fitting, need.examples,
                                  need.batch_key, global);
  return v;
}

}  // namespace asv::recipe
