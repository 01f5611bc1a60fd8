#include "asvcpp/audio/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "asvcpp/base/error.h"

extern char** environ;

namespace asv::audio {
namespace {

constexpr std::size_t kErrorTailBytes = 4096;

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  int get() const { return fd_; }
  void Reset(int fd) {
    Close();
    fd_ = fd;
  }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

void MakePipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw DataError(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  }
  read_end.Reset(fds[0]);
  write_end.Reset(fds[1]);
}

class FileActions {
 public:
  FileActions() { ::posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { ::posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

std::string ProgramName(const std::vector<std::string>& argv) {
  return argv[0] == "/bin/sh" && argv.size() >= 3 ? argv[2] : argv[0];
}

}  // namespace

std::string ProcessResult::Describe() const {
  std::string status = signal != 0
                           ? fmt::format("killed by signal {} ({})", signal, ::strsignal(signal))
                           : fmt::format("exit status {}", exit_status);
  std::string tail = error_tail;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  if (tail.empty()) return status;
  return status + ": " + tail;
}

ProcessResult RunProcess(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::invalid_argument("RunProcess: empty argument list");
  Fd out_read, out_write, err_read, err_write;
  MakePipe(out_read, out_write);
  MakePipe(err_read, err_write);

  FileActions actions;
  ::posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  // dup2 clears close-on-exec on the target descriptor; the originals close at exec.
  ::posix_spawn_file_actions_adddup2(actions.get(), out_write.get(), STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(actions.get(), err_write.get(), STDERR_FILENO);

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], actions.get(), nullptr, args.data(), environ);
  if (rc != 0) {
    if (rc == ENOENT) {
      throw DataError(fmt::format("{}: program not found in PATH", ProgramName(argv)));
    }
    throw DataError(fmt::format("{}: cannot start: {}", ProgramName(argv), std::strerror(rc)));
  }
  out_write.Close();
  err_write.Close();

  ProcessResult result;
  std::string err;
  char buffer[65536];
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    pollfd fds[2];
    nfds_t n = 0;
    if (out_open) fds[n++] = {out_read.get(), POLLIN, 0};
    if (err_open) fds[n++] = {err_read.get(), POLLIN, 0};
    if (::poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (nfds_t i = 0; i < n; ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t got = ::read(fds[i].fd, buffer, sizeof(buffer));
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      const bool is_out = fds[i].fd == out_read.get();
      if (got <= 0) {
        (is_out ? out_open : err_open) = false;
        continue;
      }
      if (is_out) {
        result.output.append(buffer, static_cast<std::size_t>(got));
      } else {
        err.append(buffer, static_cast<std::size_t>(got));
        if (err.size() > 2 * kErrorTailBytes) err.erase(0, err.size() - kErrorTailBytes);
      }
    }
  }
  out_read.Close();
  err_read.Close();

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      throw DataError(fmt::format("{}: waitpid failed: {}", ProgramName(argv), std::strerror(errno)));
    }
  }
  if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  if (err.size() > kErrorTailBytes) err.erase(0, err.size() - kErrorTailBytes);
  result.error_tail = std::move(err);
  return result;
}

ProcessResult RunShell(const std::string& command) {
  return RunProcess({"/bin/sh", "-c", command});
}

}  // namespace asv::audio
