// Marks the active run as failed in the experiment database when asvrun is interrupted
// (SIGINT, SIGTERM, SIGHUP; in a SLURM job a SIGTERM with SLURM's reason, InterruptionReason), after removing the temporary files of its unfinished atomic writes
// (asvcpp/base/temp_files.h), then exits with 128 + signal number. A launcher installs an
// interrupt handler instead: it stops the workers, and the launcher's own thread records the
// outcome and exits.
//
// The signal handler only writes the signal number to a pipe (async-signal-safe); a watcher
// thread does the database work with its own connection.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "asvcpp/recipe/recorded_run.h"

namespace asv::tools {

/// Why a run ended on signal `sig`: "interrupted by <signal>", or, for SIGTERM inside a SLURM job
/// (SLURM_JOB_ID set: SLURM sends SIGTERM before SIGKILL on scancel, at the time limit and on
/// preemption), SLURM's reason (slurm::DescribeTermination, which asks scontrol for at most 5 s).
std::string InterruptionReason(int sig);

/// Also the observer of recipe::RecordedRun: the run it records is the active run.
class SignalGuard : public recipe::RunObserver {
 public:
  /// Installs the handlers and starts the watcher. One instance per process.
  SignalGuard();
  ~SignalGuard() override;
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

  /// The run to mark as failed on a signal (database file and run id); run_id 0 = none.
  void SetActiveRun(const std::filesystem::path& db_path, std::int64_t run_id);
  void ClearActiveRun() { SetActiveRun({}, 0); }
  void RunStarted(const std::filesystem::path& db_path, std::int64_t run_id) override { SetActiveRun(db_path, run_id); }
  void RunEnded() override { ClearActiveRun(); }

  /// While set, a signal only calls `handler(signal)` (on the watcher thread) and nothing else
  /// happens; each further signal calls it again. Null restores the default behaviour.
  void SetInterruptHandler(std::function<void(int)> handler);
};

}  // namespace asv::tools
