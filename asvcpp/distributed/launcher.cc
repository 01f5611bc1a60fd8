#include "asvcpp/distributed/launcher.h"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>  // environ (declared by glibc under _GNU_SOURCE, which g++ defines)

#include "asvcpp/base/log.h"

namespace asv::distributed {

namespace {

using Clock = std::chrono::steady_clock;

// How often Wait() polls the workers; short enough that a failure stops the job at once.
constexpr auto kPollInterval = std::chrono::milliseconds(20);

// Everything the child needs, built before fork(): after fork() in a multi-threaded process the
// child may only make async-signal-safe calls, so no allocation, no locks, no logging.
struct ExecPlan {
  std::vector<std::string> argv_storage;
  std::vector<std::string> env_storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
  sigset_t empty_mask{};
  struct sigaction default_action {};
};

ExecPlan MakePlan(const WorkerSpec& spec) {
  if (spec.argv.empty()) {
    throw std::system_error(EINVAL, std::generic_category(),
                            fmt::format("cannot start rank {}: empty argv", spec.rank));
  }
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::size_t eq = text.find('=');
    if (eq != std::string_view::npos) env.emplace(text.substr(0, eq), text.substr(eq + 1));
  }
  for (const auto& [name, value] : spec.env) {
    if (name.empty() || name.find('=') != std::string::npos) {
      throw std::system_error(EINVAL, std::generic_category(),
                              fmt::format("cannot start rank {}: bad environment variable name '{}'", spec.rank, name));
    }
    env[name] = value;
  }
  for (const auto& name : spec.unset_env) env.erase(name);

  ExecPlan plan;
  plan.argv_storage = spec.argv;
  for (const auto& [name, value] : env) plan.env_storage.push_back(name + "=" + value);
  for (auto& arg : plan.argv_storage) plan.argv.push_back(arg.data());
  plan.argv.push_back(nullptr);
  for (auto& entry : plan.env_storage) plan.envp.push_back(entry.data());
  plan.envp.push_back(nullptr);
  sigemptyset(&plan.empty_mask);
  plan.default_action.sa_handler = SIG_DFL;
  sigemptyset(&plan.default_action.sa_mask);
  return plan;
}

// Runs in the forked child: async-signal-safe calls only.
[[noreturn]] void ExecChild(const ExecPlan& plan, pid_t launcher, int error_fd) {
  // The forking thread's signal mask is inherited (a launcher that sigwait()s has SIGINT/SIGTERM
  // blocked) and would make workers deaf to the launcher's SIGTERM. SIGPIPE is reset because
  // runtimes often ignore it and an ignored disposition survives execve.
  sigprocmask(SIG_SETMASK, &plan.empty_mask, nullptr);
  sigaction(SIGPIPE, &plan.default_action, nullptr);
  // The launcher may have died before prctl(); then no death signal will ever come.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != launcher) _exit(127);
  execve(plan.argv[0], plan.argv.data(), plan.envp.data());
  const int error = errno;
  ssize_t written;
  do {
    written = write(error_fd, &error, sizeof error);
  } while (written == -1 && errno == EINTR);
  _exit(127);
}

}  // namespace

std::string WorkerExit::Describe() const {
  std::string text = signal != 0 ? fmt::format("rank {} (pid {}) was killed by signal {} ({})", rank, pid, signal,
                                               strsignal(signal))
                                 : fmt::format("rank {} (pid {}) exited with status {}", rank, pid, exit_code);
  if (stopped_by_launcher) text += " after the launcher stopped it";
  return text;
}

int LaunchResult::ExitCode() const {
  if (!first_failure) return 0;
  return first_failure->signal != 0 ? 128 + first_failure->signal : first_failure->exit_code;
}

JobFailure DescribeJobFailure(const LaunchResult& result,
                              const std::function<std::optional<std::string>(int rank)>& reported) {
  JobFailure out;
  if (!result.first_failure) return out;
  // Several ranks may have ended on their own before the launcher stopped the rest (a rank
  // killed by a signal, the others failing in a collective): the killed one is the cause.
  const WorkerExit* cause = &*result.first_failure;
  for (const auto& e : result.exits) {
    if (!e.ok() && !e.stopped_by_launcher && e.signal != 0 && cause->signal == 0) cause = &e;
  }
  out.rank = cause->rank;
  out.exit_code = cause->signal != 0 ? 128 + cause->signal : cause->exit_code;
  if (auto own = reported(cause->rank)) {
    out.message = cause->Describe() + ": " + *own;
    return out;
  }
  // A watchdog that found its peer hung or dead reports the error on the peer's behalf and ends
  // its own process: the peer is the cause.
  for (const auto& e : result.exits) {
    if (e.rank == cause->rank) continue;
    if (auto other = reported(e.rank)) {
      out.rank = e.rank;
      out.message = fmt::format("rank {} failed: {}; {}, {}", e.rank, *other, e.Describe(), cause->Describe());
      return out;
    }
  }
  out.message = cause->Describe();
  return out;
}

struct Launcher::Impl {
  struct Worker {
    WorkerExit exit;
    bool running = true;
  };

  explicit Impl(std::chrono::seconds grace_period) : grace(grace_period) {}

  // Requires `mutex`. Signals every running worker and starts the grace period once.
  void BeginStop(int sig) {
    for (auto& worker : workers) {
      if (!worker.running) continue;
      kill(worker.exit.pid, sig);
      worker.exit.stopped_by_launcher = true;
    }
    stop_signal = sig;
    if (!stopping) {
      stopping = true;
      kill_deadline = Clock::now() + grace;
    }
  }

  // Requires `mutex`. Signalling only unreaped children under the lock means a pid is never
  // reused by an unrelated process while we may still send to it.
  void Reap() {
    std::optional<WorkerExit> new_failure;
    for (auto& worker : workers) {
      if (!worker.running) continue;
      int status = 0;
      const pid_t reaped = waitpid(worker.exit.pid, &status, WNOHANG);
      if (reaped == 0 || (reaped == -1 && errno == EINTR)) continue;
      worker.running = false;
      if (reaped == -1) {
        // Only when SIGCHLD is ignored and the kernel reaped the child itself: status unknown.
        ASV_LOG(Warning, "rank {} (pid {}) ended with unknown status: {}", worker.exit.rank, worker.exit.pid,
                std::strerror(errno));
        worker.exit.exit_code = 255;
      } else if (WIFSIGNALED(status)) {
        worker.exit.signal = WTERMSIG(status);
      } else {
        worker.exit.exit_code = WEXITSTATUS(status);
      }
      if (!worker.exit.ok() && !first_failure && !new_failure) new_failure = worker.exit;
    }
    if (!new_failure) return;
    first_failure = new_failure;
    if (!stopping) {
      ASV_LOG(Error, "{}; stopping the other workers", new_failure->Describe());
      BeginStop(SIGTERM);
    }
  }

  bool AnyRunning() const {
    return std::any_of(workers.begin(), workers.end(), [](const Worker& w) { return w.running; });
  }

  // Requires `lock` on `mutex`. Returns when every worker has been reaped.
  void Supervise(std::unique_lock<std::mutex>& lock) {
    while (true) {
      Reap();
      if (!AnyRunning()) return;
      if (stopping && !killed && Clock::now() >= kill_deadline) {
        for (auto& worker : workers) {
          if (!worker.running) continue;
          ASV_LOG(Warning, "rank {} (pid {}) still runs {} s after signal {}; sending SIGKILL", worker.exit.rank,
                  worker.exit.pid, grace.count(), stop_signal);
          kill(worker.exit.pid, SIGKILL);
        }
        killed = true;
      }
      wake.wait_for(lock, kPollInterval);
    }
  }

  const std::chrono::seconds grace;
  mutable std::mutex mutex;
  std::condition_variable wake;
  std::vector<Worker> workers;  // in start order
  std::optional<WorkerExit> first_failure;
  bool stopping = false;  // a failure or Terminate() asked all workers to stop
  bool killed = false;    // the grace period ran out and SIGKILL was sent
  int stop_signal = SIGTERM;
  Clock::time_point kill_deadline;
};

Launcher::Launcher(std::chrono::seconds grace) : impl_(std::make_unique<Impl>(grace)) {}

Launcher::~Launcher() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  for (auto& worker : impl_->workers) {
    if (!worker.running) continue;
    kill(worker.exit.pid, SIGKILL);
    while (waitpid(worker.exit.pid, nullptr, 0) == -1 && errno == EINTR) {
    }
    worker.running = false;
  }
}

void Launcher::Start(const std::vector<WorkerSpec>& workers) {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (!impl_->workers.empty()) throw std::logic_error("Launcher::Start called twice");
  }
  // Every plan first, so that a bad spec throws before any worker runs.
  std::vector<ExecPlan> plans;
  plans.reserve(workers.size());
  for (const auto& spec : workers) plans.push_back(MakePlan(spec));
  const pid_t self = getpid();
  for (std::size_t i = 0; i < workers.size(); ++i) {
    const WorkerSpec& spec = workers[i];
    const ExecPlan& plan = plans[i];
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      if (impl_->stopping) {
        ASV_LOG(Warning, "not starting rank {} and later ranks: the launcher is stopping", spec.rank);
        return;
      }
    }
    int error_pipe[2];
    int error = 0;
    if (pipe2(error_pipe, O_CLOEXEC) != 0) {
      error = errno;
    } else {
      const pid_t pid = fork();
      if (pid == 0) {
        close(error_pipe[0]);
        ExecChild(plan, self, error_pipe[1]);
      }
      error = pid == -1 ? errno : 0;
      close(error_pipe[1]);
      if (pid != -1) {
        // The pipe closes on a successful execve (O_CLOEXEC) or carries the child's errno.
        ssize_t n;
        int child_error = 0;
        do {
          n = read(error_pipe[0], &child_error, sizeof child_error);
        } while (n == -1 && errno == EINTR);
        if (n == static_cast<ssize_t>(sizeof child_error)) {
          error = child_error;
          while (waitpid(pid, nullptr, 0) == -1 && errno == EINTR) {
          }
        } else {
          std::lock_guard<std::mutex> lock(impl_->mutex);
          Impl::Worker worker;
          worker.exit.rank = spec.rank;
          worker.exit.pid = pid;
          impl_->workers.push_back(worker);
          // Terminate() ran between fork() and here and could not see this worker.
          if (impl_->stopping) impl_->BeginStop(impl_->stop_signal);
          ASV_LOG(Debug, "started rank {} (pid {}): {}", spec.rank, pid, spec.argv[0]);
        }
      }
      close(error_pipe[0]);
    }
    if (error != 0) {
      ASV_LOG(Error, "cannot start rank {} ({}): {}; stopping the workers already started", spec.rank, spec.argv[0],
              std::strerror(error));
      std::unique_lock<std::mutex> lock(impl_->mutex);
      impl_->BeginStop(SIGTERM);
      impl_->Supervise(lock);
      impl_->workers.clear();
      impl_->first_failure.reset();
      impl_->stopping = impl_->killed = false;
      throw std::system_error(error, std::generic_category(),
                              fmt::format("cannot start rank {}: {}", spec.rank, spec.argv[0]));
    }
  }
}

LaunchResult Launcher::Wait() {
  std::unique_lock<std::mutex> lock(impl_->mutex);
  impl_->Supervise(lock);
  LaunchResult result;
  for (const auto& worker : impl_->workers) result.exits.push_back(worker.exit);
  std::stable_sort(result.exits.begin(), result.exits.end(),
                   [](const WorkerExit& a, const WorkerExit& b) { return a.rank < b.rank; });
  result.first_failure = impl_->first_failure;
  return result;
}

void Launcher::Terminate(int sig) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  ASV_LOG(Warning, "sending signal {} ({}) to the workers", sig, strsignal(sig));
  impl_->BeginStop(sig);
  impl_->wake.notify_all();
}

std::vector<pid_t> Launcher::pids() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<const Impl::Worker*> running;
  for (const auto& worker : impl_->workers) {
    if (worker.running) running.push_back(&worker);
  }
  std::stable_sort(running.begin(), running.end(),
                   [](const Impl::Worker* a, const Impl::Worker* b) { return a->exit.rank < b->exit.rank; });
  std::vector<pid_t> result;
  for (const auto* worker : running) result.push_back(worker->exit.pid);
  return result;
}

}  // namespace asv::distributed
