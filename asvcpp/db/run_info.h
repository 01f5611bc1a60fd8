// What the experiment database records about a run, and how to identify the current process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace asv::db {

/// Life cycle of a run (and of a stage). Stored as lower-case text in the `status` columns.
enum class RunStatus {
  kRunning,   ///< "running": started, not finished yet.
  kFinished,  ///< "finished": completed successfully.
  kFailed,    ///< "failed": the process reported an error (see error_text).
  kCrashed,   ///< "crashed": the process died without reporting (detected by MarkCrashedRuns).
};

/// "running", "finished", "failed" or "crashed".
std::string_view ToString(RunStatus status);

/// Inverse of ToString. Throws DbError for any other text (e.g. a hand-edited database).
RunStatus ParseRunStatus(std::string_view text);

/// Identity of one run, written once by Database::BeginRun.
///
/// host, pid, process_start, boot_id and pid_namespace identify the process so that a later
/// reader can tell whether it is still alive (see Database::MarkCrashedRuns). Fill them with
/// FillCurrentProcess(); BeginRun does so itself when `pid` is 0.
struct RunInfo {
  std::string recipe;                     ///< e.g. "voxceleb/xvector".
  std::string config;                     ///< Name of the run config block, e.g. "net".
  std::vector<std::string> parent_chain;  ///< Parents in application order; JSON array in the db.
  std::string settings_json;              ///< Canonical dump of the resolved settings (JSON text).
  std::string settings_hash;              ///< Hash of settings_json (hex), for grouping and diffs.
  std::string command_line;               ///< The full command line, shell-quoted.
  std::string host;                       ///< Host name (gethostname).
  std::int64_t pid = 0;                   ///< Process id of global rank 0.
  /// Start time of `pid` in clock ticks since boot (/proc/<pid>/stat field 22); 0 when unknown.
  /// Distinguishes the run's process from a later process that reused the pid.
  std::int64_t process_start = 0;
  std::string boot_id;                    ///< /proc/sys/kernel/random/boot_id; "" when unknown.
  std::string pid_namespace;              ///< Target of /proc/self/ns/pid, e.g. "pid:[4026531836]".
  std::vector<int> gpu_ids;               ///< computing.gpu_ids; JSON array in the db.
  int world_size = 1;                     ///< Number of worker processes.
  std::string code_version;               ///< e.g. git describe of the asvcpp build.
  std::string output_folder;              ///< paths.output_folder of the run.
  /// The SLURM batch job the run executes in (SLURM_JOB_ID), nullopt outside SLURM (schema 8).
  std::optional<std::int64_t> slurm_job_id;
  /// SLURM_ARRAY_TASK_ID when the job is a task of a job array, else nullopt.
  std::optional<std::int64_t> slurm_array_task_id;
};

/// Sets host, pid, process_start, boot_id and pid_namespace of `info` to those of the calling
/// process, and its SLURM job (FillSlurmJob). Never throws; fields that cannot be read are left
/// empty/0.
void FillCurrentProcess(RunInfo* info);

/// Sets info->slurm_job_id and info->slurm_array_task_id from the environment (SLURM_JOB_ID,
/// SLURM_ARRAY_TASK_ID); a variable that is unset, empty or not a non-negative integer leaves
/// its field nullopt. Never throws.
void FillSlurmJob(RunInfo* info);

/// Host name of this machine (gethostname); "" if it cannot be read.
std::string HostName();

/// Start time of process `pid` in clock ticks since boot, from /proc/<pid>/stat; 0 if the process
/// does not exist or /proc is unavailable.
std::int64_t ProcessStartTime(std::int64_t pid);

/// Kernel boot id (/proc/sys/kernel/random/boot_id), "" if unavailable. Changes on every reboot.
std::string BootId();

/// Identity of the pid namespace of the calling process ("" if unavailable). Pids are only
/// comparable between processes in the same namespace (containers have their own).
std::string PidNamespace();

/// True if a process with this pid exists in this pid namespace and is not a zombie, and (when
/// `process_start` is non-zero) started at `process_start` clock ticks after boot, i.e. it is the
/// same process and not a later one that reused the pid.
bool IsProcessAlive(std::int64_t pid, std::int64_t process_start);

}  // namespace asv::db
