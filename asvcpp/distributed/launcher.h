// Starts the worker processes of a data-parallel job on this node and supervises them
// (torchrun's semantics): the first worker that exits non-zero or is killed makes the launcher
// stop all others (SIGTERM, then SIGKILL after `grace`), and the
// result names that rank. Workers get PR_SET_PDEATHSIG (SIGKILL), so they end when the launcher
// is killed, and Terminate() forwards a signal (asvrun's SIGINT/SIGTERM watcher calls it). No
// orphan processes remain after Wait() returns.
//
// Workers stay in the launcher's process group, so Ctrl-C in a terminal reaches them directly
// too. They start with an empty signal mask and SIGPIPE at its default, whatever the launching
// thread had. Linux sends the death signal when the *thread* that forked a worker exits, not the
// process: call Start() from a thread that lives as long as the workers (the main thread).
// Workers are reaped with waitpid() on their own pids, so other children of the process are left
// alone; SIGCHLD must not be ignored. No LibTorch in this file.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace asv::distributed {

struct WorkerSpec {
  int rank = 0;                                ///< global rank, used in messages
  std::vector<std::string> argv;               ///< argv[0] is the executable (path, not searched)
  std::map<std::string, std::string> env;      ///< set (overriding) on top of the launcher's environment
  std::vector<std::string> unset_env;          ///< removed from the worker's environment
};

struct WorkerExit {
  int rank = 0;
  pid_t pid = 0;
  int exit_code = 0;       ///< valid when signal == 0
  int signal = 0;          ///< the signal that killed the worker, 0 if it exited
  bool stopped_by_launcher = false;  ///< killed because another rank failed or Terminate() was called
  bool ok() const { return signal == 0 && exit_code == 0; }
  /// "rank 1 (pid 1234) exited with status 3" / "... was killed by signal 9 (Killed)", followed by
  /// " after the launcher stopped it" when stopped_by_launcher.
  std::string Describe() const;
};

struct LaunchResult {
  std::vector<WorkerExit> exits;          ///< one per worker, in rank order
  /// The failure that stopped the job: the first worker that exited non-zero or was killed. After
  /// Terminate() it is the first worker that did not exit 0 (e.g. killed by SIGINT); workers that
  /// catch the signal and exit 0 leave the result ok, so a caller that terminated knows it did.
  std::optional<WorkerExit> first_failure;
  bool ok() const { return !first_failure.has_value(); }
  /// Exit status for the launcher: 0, the failed worker's exit code, or 128 + its signal.
  int ExitCode() const;
};

/// The failure a failed job reports (LaunchResult::first_failure is only the first rank to end).
struct JobFailure {
  int rank = 0;           ///< the rank the failure is attributed to
  int exit_code = 0;      ///< exit status for the launcher: the ending rank's code, or 128 + its signal
  std::string message;    ///< e.g. "rank 1 failed: no sign of life for 31 s (...); rank 0 (pid 7) exited ..."
};

/// Attributes the failure of a job (`result` not ok) to a rank. `reported(rank)` gives the error
/// that rank reported, or that another rank's watchdog reported on its behalf (the process
/// group's "error/<rank>" key, distributed::StoreServer::Get), or nullopt. The first rank to end is the
/// cause, unless a rank was killed by a signal the launcher did not send (the others then failed
/// in a collective), or unless the ending rank reported nothing while another rank has a
/// reported error: a rank found hung or dead by a watchdog, which ends the watching rank with
/// status 5 while the hung one is only stopped by the launcher afterwards. The message then
/// names the hung rank and its error first, then how each of the two ended.
JobFailure DescribeJobFailure(const LaunchResult& result,
                              const std::function<std::optional<std::string>(int rank)>& reported);

class Launcher {
 public:
  /// `grace`: how long workers get after SIGTERM before SIGKILL.
  explicit Launcher(std::chrono::seconds grace = std::chrono::seconds(15));
  ~Launcher();  ///< kills and reaps workers still running
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  /// Starts every worker (fork + execve) with the launcher's environment plus `env` minus
  /// `unset_env`; returns once each has exec'd. Throws std::system_error when one cannot be
  /// started (empty argv, fork or execve failure; the message names the rank and executable) after
  /// stopping the ones already started; std::logic_error when called again while workers exist.
  /// After Terminate() no further worker is started. Call from a long-lived thread (see above).
  void Start(const std::vector<WorkerSpec>& workers);

  /// Blocks until all workers ended; stops the rest as soon as one fails. Polls every 20 ms.
  LaunchResult Wait();

  /// Sends `sig` to every running worker, marks them stopped_by_launcher and makes Wait() stop
  /// them all (grace, then SIGKILL). Thread-safe; may be called from a signal-watching thread
  /// (sigwait) while Wait() runs. It locks a mutex, so it must not be called from a signal handler.
  void Terminate(int sig);

  /// Pids of the running workers (rank order).
  std::vector<pid_t> pids() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace asv::distributed
