// Child processes for the data-parallel tests: start the test worker with posix_spawn, its
// stdout/stderr in files, wait with a deadline, kill what is left at the end of a test.
#pragma once

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace asv::distributed::testing {

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// One child; SIGKILLed and reaped by the destructor if still running.
class ChildProcess {
 public:
  /// Runs `argv` (argv[0] = program path) with stdout/stderr in `log_stem`.out/.err.
  ChildProcess(const std::vector<std::string>& argv, const std::filesystem::path& log_stem)
      : out_(log_stem.string() + ".out"), err_(log_stem.string() + ".err") {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("posix_spawn " + argv[0] + " failed");
    start_ = std::chrono::steady_clock::now();
  }
  ~ChildProcess() {
    if (!status_) {
      ::kill(pid_, SIGKILL);
      int s = 0;
      ::waitpid(pid_, &s, 0);
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }

  /// The raw wait status once the child ended within `timeout`; nullopt if it still runs.
  std::optional<int> Wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!status_) {
      int s = 0;
      const pid_t r = ::waitpid(pid_, &s, WNOHANG);
      if (r == pid_) {
        status_ = s;
        seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return status_;
  }

  /// Exit code (0-255), 128 + signal for a signalled child, -1 while running after `timeout`.
  int ExitCode(std::chrono::milliseconds timeout = std::chrono::seconds(120)) {
    const auto s = Wait(timeout);
    if (!s) return -1;
    if (WIFEXITED(*s)) return WEXITSTATUS(*s);
    if (WIFSIGNALED(*s)) return 128 + WTERMSIG(*s);
    return -2;
  }

  void Kill(int signal) { ::kill(pid_, signal); }

  /// Seconds from start to exit (after a successful Wait).
  double seconds() const { return seconds_; }
  std::string out() const { return ReadFile(out_); }
  std::string err() const { return ReadFile(err_); }
  /// Both logs, for failure messages.
  std::string Logs() const { return "--- stdout:\n" + out() + "--- stderr:\n" + err(); }

  /// Waits until the child's stdout contains `text` (false after `timeout` or when it ended).
  bool WaitForOutput(const std::string& text, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (out().find(text) != std::string::npos) return true;
      if (Wait(std::chrono::milliseconds(0))) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

 private:
  std::string out_, err_;
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::chrono::steady_clock::time_point start_;
  double seconds_ = 0;
};

}  // namespace asv::distributed::testing
