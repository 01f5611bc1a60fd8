#include "asvcpp/db/gpu_queue.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

namespace asv::db {
namespace {

// "GPU 1", "GPUs 1 and 2", "GPUs 1, 2 and 3".
std::string GpuList(const std::vector<int>& ids) {
  if (ids.size() == 1) return fmt::format("GPU {}", ids.front());
  std::string text = "GPUs ";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) text += i + 1 == ids.size() ? " and " : ", ";
    text += std::to_string(ids[i]);
  }
  return text;
}

}  // namespace

std::optional<std::int64_t> BeginRunOnGpus(Database& database, const RunInfo& info, const GpuQueueOptions& options) {
  if (info.gpu_ids.empty()) return database.BeginRun(info);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  bool reported = false;
  std::vector<RunRow> holders;
  for (;;) {
    if (const auto id = database.TryBeginRun(info, &holders)) return id;
    if (!reported) {
      reported = true;
      if (options.on_busy) options.on_busy(holders);
    }
    if (!options.wait) return database.BeginRun(info);
    if (options.max_wait && Clock::now() - start >= *options.max_wait) return std::nullopt;
    std::this_thread::sleep_for(options.poll);
  }
}

std::vector<int> BusyGpus(const std::vector<int>& gpu_ids, const std::vector<RunRow>& holders) {
  std::vector<int> busy;
  for (const RunRow& holder : holders) {
    for (const int id : holder.info.gpu_ids) {
      if (std::find(gpu_ids.begin(), gpu_ids.end(), id) != gpu_ids.end()) busy.push_back(id);
    }
  }
  std::sort(busy.begin(), busy.end());
  busy.erase(std::unique(busy.begin(), busy.end()), busy.end());
  return busy;
}

std::string FormatGpuHolders(const std::vector<int>& gpu_ids, const std::vector<RunRow>& holders) {
  std::string text;
  for (const RunRow& holder : holders) {
    const std::vector<int> held = BusyGpus(gpu_ids, {holder});
    if (held.empty()) continue;
    if (!text.empty()) text += '\n';
    text +=
        fmt::format("{} {} in use by run {} ({} {}, pid {}, since {})", GpuList(held), held.size() == 1 ? "is" : "are",
                    holder.id, holder.info.recipe, holder.info.config, holder.info.pid, holder.start_time);
  }
  return text;
}

std::string FormatGpuWaiting(const std::vector<int>& gpu_ids, const std::vector<RunRow>& holders) {
  const std::vector<int> busy = BusyGpus(gpu_ids, holders);
  return fmt::format("waiting for {} (--wait-for-gpu)", GpuList(busy.empty() ? gpu_ids : busy));
}

}  // namespace asv::db
