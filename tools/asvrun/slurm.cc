#include "tools/asvrun/slurm.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "asvcpp/base/error.h"

extern char** environ;

namespace asv::tools::slurm {
namespace {

std::string Line(const std::map<std::string, std::string>& job, const char* key) {
  const auto it = job.find(key);
  return it == job.end() ? std::string("?") : it->second;
}

// "JobState=X Reason=Y" and, when known, RunTime and TimeLimit.
std::string Summary(std::int64_t job_id, const std::map<std::string, std::string>& job) {
  return fmt::format("job {}: JobState={} Reason={} RunTime={} TimeLimit={}", job_id, Line(job, "JobState"),
                     Line(job, "Reason"), Line(job, "RunTime"), Line(job, "TimeLimit"));
}

}  // namespace

std::string ShellJoin(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) {
    const bool plain = !arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                             "0123456789_-+./=:,@%") == std::string::npos;
    if (!out.empty()) out += ' ';
    if (plain) {
      out += arg;
      continue;
    }
    out += '\'';
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::map<std::string, std::string> TemplateVariables(const JobSpec& job) {
  std::string options;
  for (const auto& o : job.sbatch_options) options += "#SBATCH " + o + "\n";
  if (!options.empty()) options.pop_back();
  const std::string command = ShellJoin(job.command);
  return {
      {"ASV_JOB_NAME", job.job_name},
      {"ASV_OUTPUT", job.output},
      {"ASV_WORKDIR", job.workdir},
      {"ASV_NTASKS", std::to_string(job.ntasks)},
      {"ASV_GPUS", std::to_string(job.gpus)},
      {"ASV_COMMAND", command},
      {"ASV_LAUNCH", job.uses_srun() ? "srun --kill-on-bad-exit=1 " + command : command},
      {"ASV_SBATCH_OPTIONS", options},
      {"ASV_RECIPE", job.recipe},
      {"ASV_CONFIG", job.config},
      {"ASV_OUTPUT_FOLDER", job.output_folder},
  };
}

std::string BatchScript(const JobSpec& job) {
  const auto v = TemplateVariables(job);
  std::string script = "#!/bin/bash\n";
  script += "#SBATCH --job-name=" + ShellJoin({job.job_name}) + "\n";
  script += "#SBATCH --output=" + ShellJoin({job.output}) + "\n";
  script += "#SBATCH --chdir=" + ShellJoin({job.workdir}) + "\n";
  script += "#SBATCH --nodes=1\n";
  script += fmt::format("#SBATCH --ntasks={}\n#SBATCH --ntasks-per-node={}\n", job.ntasks, job.ntasks);
  if (job.gpus > 0) script += fmt::format("#SBATCH --gres=gpu:{}\n", job.gpus);
  if (!v.at("ASV_SBATCH_OPTIONS").empty()) script += v.at("ASV_SBATCH_OPTIONS") + "\n";
  script += v.at("ASV_LAUNCH") + "\n";
  return script;
}

std::string Substitute(const std::string& text, const std::map<std::string, std::string>& variables,
                       const std::string& template_file) {
  std::string out;
  int line = 1;
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (c != '$' || text.compare(i, 6, "${ASV_") != 0) {
      out += c;
      continue;
    }
    const auto close = text.find('}', i);
    const auto newline = text.find('\n', i);
    if (close == std::string::npos || (newline != std::string::npos && newline < close)) {
      problems.push_back(fmt::format("{}:{}: unclosed ${{ASV_...: a template variable is ${{ASV_NAME}}",
                                     template_file, line));
      out += c;
      continue;
    }
    const std::string name = text.substr(i + 2, close - i - 2);
    const auto it = variables.find(name);
    if (it == variables.end()) {
      std::string known;
      for (const auto& [k, _] : variables) known += (known.empty() ? "" : ", ") + k;
      problems.push_back(fmt::format("{}:{}: unknown template variable ${{{}}} (known: {})", template_file, line,
                                     name, known));
    } else {
      out += it->second;
    }
    i = close;
  }
  if (!problems.empty()) {
    std::string message;
    for (const auto& p : problems) message += (message.empty() ? "" : "\n") + p;
    throw ConfigError(message);
  }
  return out;
}

ProgramResult RunProgram(const std::vector<std::string>& argv, const std::string& input, int timeout_seconds) {
  ProgramResult result;
  int in_pipe[2];
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) return result;
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.err = std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    result.status = 127;
    result.err = fmt::format("cannot start {}: {}", argv[0], std::strerror(rc));
    return result;
  }
  // The input is small (a batch script): written at once, before reading.
  std::size_t written = 0;
  const struct sigaction ignore_pipe = [] {
    struct sigaction a {};
    a.sa_handler = SIG_IGN;
    return a;
  }();
  struct sigaction old_pipe {};
  ::sigaction(SIGPIPE, &ignore_pipe, &old_pipe);
  while (written < input.size()) {
    const auto n = ::write(in_pipe[1], input.data() + written, input.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
  ::sigaction(SIGPIPE, &old_pipe, nullptr);
  ::close(in_pipe[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  bool timed_out = false;
  while (open_fds > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    const int n = ::poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || fds[k].revents == 0) continue;
      char buffer[4096];
      const auto got = ::read(fds[k].fd, buffer, sizeof buffer);
      if (got > 0) {
        (k == 0 ? result.out : result.err).append(buffer, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        ::close(fds[k].fd);
        fds[k].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.status = timed_out ? 124 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::int64_t Submit(const std::string& script) {
  const auto r = RunProgram({"sbatch", "--parsable"}, script, 120);
  const std::string out = r.out.substr(0, r.out.find_first_of(";\n"));
  char* end = nullptr;
  const long long id = std::strtoll(out.c_str(), &end, 10);
  if (r.status != 0 || out.empty() || *end != '\0' || id <= 0) {
    throw Error(kExitStageError, fmt::format("sbatch failed (exit status {}): {}{}", r.status, r.err, r.out));
  }
  return static_cast<std::int64_t>(id);
}

std::optional<std::map<std::string, std::string>> ShowJob(std::int64_t job_id) {
  return ShowJobWithin(job_id, 10, nullptr);
}

std::optional<std::map<std::string, std::string>> ShowJobWithin(std::int64_t job_id, int timeout_seconds,
                                                                std::string* error) {
  const auto r = RunProgram({"scontrol", "show", "job", "-o", std::to_string(job_id)}, "", timeout_seconds);
  if (r.status != 0) {
    if (error != nullptr) *error = r.err.empty() ? fmt::format("exit status {}", r.status) : r.err;
    return std::nullopt;
  }
  std::map<std::string, std::string> job;
  std::istringstream words(r.out);
  std::string word;
  std::string last;
  while (words >> word) {
    const auto eq = word.find('=');
    if (eq == std::string::npos || eq == 0) {
      if (!last.empty()) job[last] += " " + word;  // a value with spaces
      continue;
    }
    last = word.substr(0, eq);
    job[last] = word.substr(eq + 1);
  }
  if (job.find("JobState") == job.end()) {
    if (error != nullptr) *error = "no JobState in its output";
    return std::nullopt;
  }
  return job;
}

std::optional<db::SlurmJobEnd> JobEnd(std::int64_t job_id) {
  const auto job = ShowJob(job_id);
  if (!job) return std::nullopt;
  std::string state = Line(*job, "JobState");
  const auto what = [&]() -> std::optional<std::string> {
    if (state == "CANCELLED") return "cancelled by SLURM";
    if (state == "TIMEOUT") return "time limit reached";
    if (state == "OUT_OF_MEMORY") return "out of memory: killed by SLURM";
    if (state == "NODE_FAIL") return "node failure";
    if (state == "PREEMPTED") return "preempted by SLURM";
    if (state == "DEADLINE") return "deadline reached";
    if (state == "BOOT_FAIL") return "node boot failure";
    return std::nullopt;
  }();
  if (what) return db::SlurmJobEnd{db::RunStatus::kFailed, fmt::format("{} ({})", *what, Summary(job_id, *job))};
  if (state == "COMPLETED" || state == "FAILED") {
    return db::SlurmJobEnd{db::RunStatus::kCrashed,
                           fmt::format("asvrun ended without recording the run's end ({})", Summary(job_id, *job))};
  }
  return std::nullopt;
}

std::string DescribeTermination(std::int64_t job_id) {
  std::string error;
  const auto job = ShowJobWithin(job_id, 5, &error);
  if (!job) {
    while (!error.empty() && error.back() == '\n') error.pop_back();
    return fmt::format("terminated by SLURM (job {}: SIGTERM: cancelled, time limit or preemption; scontrol: {})",
                       job_id, error);
  }
  const std::string reason = Line(*job, "Reason");
  const std::string state = Line(*job, "JobState");
  std::string what = "cancelled by SLURM";
  if (reason == "TimeLimit" || state == "TIMEOUT") what = "time limit reached";
  if (reason.find("Preempt") != std::string::npos || state == "PREEMPTED") what = "preempted by SLURM";
  if (state == "OUT_OF_MEMORY") what = "out of memory: killed by SLURM";
  if (state == "NODE_FAIL") what = "node failure";
  return fmt::format("{} ({}; asvrun got SIGTERM)", what, Summary(job_id, *job));
}

std::optional<std::int64_t> CurrentJobId() {
  const char* value = std::getenv("SLURM_JOB_ID");
  if (value == nullptr || *value == '\0') return std::nullopt;
  char* end = nullptr;
  const long long id = std::strtoll(value, &end, 10);
  if (*end != '\0' || id <= 0) return std::nullopt;
  return static_cast<std::int64_t>(id);
}

std::string QueueState(std::int64_t job_id) {
  const auto r = RunProgram({"squeue", "-h", "-j", std::to_string(job_id), "-o", "%T %R"}, "", 10);
  if (r.status != 0) return "";
  auto line = r.out.substr(0, r.out.find('\n'));
  return line;
}

}  // namespace asv::tools::slurm
