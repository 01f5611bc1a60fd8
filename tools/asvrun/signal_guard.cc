#include "tools/asvrun/signal_guard.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <mutex>
#include <thread>

#include "asvcpp/base/temp_files.h"
#include "asvcpp/db/database.h"
#include "tools/asvrun/slurm.h"

namespace asv::tools {
namespace {

int g_pipe[2] = {-1, -1};
std::mutex g_mutex;
std::filesystem::path g_db_path;
std::int64_t g_run_id = 0;
std::function<void(int)> g_handler;

extern "C" void OnSignal(int sig) {
  const unsigned char byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] const auto written = ::write(g_pipe[1], &byte, 1);
}

// Next signal number from the pipe; 0 when the pipe is closed.
int NextSignal() {
  unsigned char byte = 0;
  while (true) {
    const auto n = ::read(g_pipe[0], &byte, 1);
    if (n == 1) return byte;
    if (n < 0 && errno == EINTR) continue;
    return 0;
  }
}

void Watch() {
  int sig = 0;
  while ((sig = NextSignal()) != 0) {
    std::function<void(int)> handler;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      handler = g_handler;
    }
    if (!handler) break;
    handler(sig);
  }
  if (sig == 0) return;
  // Partial outputs (archives, checkpoints being written) go first: nothing renames them now.
  fs::RemoveRegisteredTempFiles();
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_run_id != 0) {
    try {
      db::Database database(g_db_path);
      database.FinishRun(g_run_id, db::RunStatus::kFailed, InterruptionReason(sig));
      fmt::print(stderr, "\nasvrun: interrupted ({}); run {} marked as failed in {}\n", ::strsignal(sig), g_run_id,
                 db::RedactPassword(g_db_path.string()));
    } catch (const std::exception& e) {
      fmt::print(stderr, "\nasvrun: interrupted; could not record it in the database: {}\n", e.what());
    }
  } else {
    fmt::print(stderr, "\nasvrun: interrupted ({})\n", ::strsignal(sig));
  }
  std::fflush(stderr);
  ::_exit(128 + sig);
}

}  // namespace

std::string InterruptionReason(int sig) {
  if (sig == SIGTERM) {
    if (const auto job = slurm::CurrentJobId()) return slurm::DescribeTermination(*job);
  }
  return fmt::format("interrupted by {}", ::strsignal(sig));
}

SignalGuard::SignalGuard() {
  if (::pipe2(g_pipe, O_CLOEXEC) != 0) return;
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &action, nullptr);
  std::thread(Watch).detach();
}

SignalGuard::~SignalGuard() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, SIG_DFL);
}

void SignalGuard::SetActiveRun(const std::filesystem::path& db_path, std::int64_t run_id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_db_path = db_path;
  g_run_id = run_id;
}

}  // namespace asv::tools

namespace asv::tools {

void SignalGuard::SetInterruptHandler(std::function<void(int)> handler) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_handler = std::move(handler);
}

}  // namespace asv::tools
