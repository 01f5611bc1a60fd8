// Sharing GPUs between asvrun processes through the experiment database.
//
// Several asvrun jobs started back to back on one host (often on different GPUs) share one
// database. Each run records the physical GPUs it uses in runs.gpu_ids (empty for a CPU run);
// a run that is 'running' and not crashed (Database::RunsHoldingGpus) holds them. Starting a job
// on a held GPU warns, and with --wait-for-gpu waits until the GPU is free:
//
//   asv::db::GpuQueueOptions queue;
//   queue.wait = wait_for_gpu;
//   queue.on_busy = [&](const std::vector<asv::db::RunRow>& holders) {
//     ASV_LOG(Warning, "{}", asv::db::FormatGpuHolders(info.gpu_ids, holders));
//     if (queue.wait) ASV_LOG(Info, "{}", asv::db::FormatGpuWaiting(info.gpu_ids, holders));
//   };
//   const std::int64_t run = *asv::db::BeginRunOnGpus(database, info, queue);
//
// Holders are only looked for on the same host (runs.host); GPU ids are compared as recorded, so
// every job on a host must record physical ids (not ids renumbered by CUDA_VISIBLE_DEVICES), and
// jobs in containers with their own host names do not see each other.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/db/database.h"
#include "asvcpp/db/run_info.h"

namespace asv::db {

/// How BeginRunOnGpus behaves when another run holds one of the requested GPUs.
struct GpuQueueOptions {
  /// false: warn (on_busy) and begin the run anyway. true: wait until the GPUs are free.
  bool wait = false;
  /// While waiting, how often the database is asked again.
  std::chrono::milliseconds poll{5000};
  /// Called once, the first time the GPUs are found busy, with the holding runs (oldest first).
  /// May be empty (then nothing is reported).
  std::function<void(const std::vector<RunRow>& holders)> on_busy;
  /// While waiting, give up after this long (BeginRunOnGpus returns nullopt); unset: wait for
  /// ever.
  std::optional<std::chrono::milliseconds> max_wait;
};

/// Begins a run (status 'running') for `info` on the GPUs in info.gpu_ids, see the file comment.
/// With options.wait the holder check and the insert are one transaction (Database::TryBeginRun),
/// so of several jobs waiting for the same GPU exactly one starts when it becomes free; the
/// others go on waiting for that one. An empty info.gpu_ids (a CPU run) never waits or warns.
/// Returns the run id; nullopt only when options.max_wait passed while waiting. Throws DbError;
/// exceptions from on_busy propagate (and no run is begun).
std::optional<std::int64_t> BeginRunOnGpus(Database& database, const RunInfo& info, const GpuQueueOptions& options);

/// The members of `gpu_ids` held by `holders`, sorted and without duplicates.
std::vector<int> BusyGpus(const std::vector<int>& gpu_ids, const std::vector<RunRow>& holders);

/// One line per holder naming the requested GPUs it holds, e.g.
/// "GPU 1 is in use by run 12 (voxceleb/xvector net, pid 4242, since 2024-05-01T10:00:00.000Z)",
/// "GPUs 1 and 2 are in use by run 13 (...)". Lines are separated by '\n', no trailing newline;
/// "" when `holders` is empty.
std::string FormatGpuHolders(const std::vector<int>& gpu_ids, const std::vector<RunRow>& holders);

/// "waiting for GPU 1 (--wait-for-gpu)" / "waiting for GPUs 1 and 2 (--wait-for-gpu)", naming
/// the busy GPUs (BusyGpus).
std::string FormatGpuWaiting(const std::vector<int>& gpu_ids, const std::vector<RunRow>& holders);

}  // namespace asv::db
