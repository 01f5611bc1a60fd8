#include "asvcpp/db/run_info.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "asvcpp/base/error.h"

namespace asv::db {
namespace {

// Contents of /proc/<pid>/stat after the "(comm)" field, whose text may itself contain spaces and
// parentheses; "" if unreadable.
std::string StatFieldsAfterComm(std::int64_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  if (!in) return {};
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const auto close = text.rfind(')');
  if (close == std::string::npos || close + 2 > text.size()) return {};
  return text.substr(close + 2);
}

}  // namespace

std::string_view ToString(RunStatus status) {
  switch (status) {
    case RunStatus::kRunning: return "running";
    case RunStatus::kFinished: return "finished";
    case RunStatus::kFailed: return "failed";
    case RunStatus::kCrashed: return "crashed";
  }
  return "unknown";
}

RunStatus ParseRunStatus(std::string_view text) {
  if (text == "running") return RunStatus::kRunning;
  if (text == "finished") return RunStatus::kFinished;
  if (text == "failed") return RunStatus::kFailed;
  if (text == "crashed") return RunStatus::kCrashed;
  throw DbError(fmt::format("unknown run status '{}' (expected running, finished, failed or crashed)",
                            text));
}

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return {};
  return name;
}

std::int64_t ProcessStartTime(std::int64_t pid) {
  // Fields after comm start with field 3 (state); starttime is field 22, i.e. index 19 here.
  std::istringstream fields(StatFieldsAfterComm(pid));
  std::string field;
  for (int i = 0; i < 20; ++i) {
    if (!(fields >> field)) return 0;
  }
  try {
    return std::stoll(field);
  } catch (const std::exception&) {
    return 0;
  }
}

std::string BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!(in >> id)) return {};
  return id;
}

std::string PidNamespace() {
  char target[256] = {};
  const ssize_t n = readlink("/proc/self/ns/pid", target, sizeof(target) - 1);
  if (n <= 0) return {};
  return std::string(target, static_cast<std::size_t>(n));
}

void FillCurrentProcess(RunInfo* info) {
  info->host = HostName();
  info->pid = static_cast<std::int64_t>(getpid());
  info->process_start = ProcessStartTime(info->pid);
  info->boot_id = BootId();
  info->pid_namespace = PidNamespace();
  FillSlurmJob(info);
}

void FillSlurmJob(RunInfo* info) {
  const auto read = [](const char* name) -> std::optional<std::int64_t> {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const long long number = std::strtoll(value, &end, 10);
    if (errno != 0 || *end != '\0' || number < 0) return std::nullopt;
    return static_cast<std::int64_t>(number);
  };
  info->slurm_job_id = read("SLURM_JOB_ID");
  info->slurm_array_task_id = info->slurm_job_id ? read("SLURM_ARRAY_TASK_ID") : std::nullopt;
}

bool IsProcessAlive(std::int64_t pid, std::int64_t process_start) {
  if (pid <= 0 || pid > INT_MAX) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  const std::string fields = StatFieldsAfterComm(pid);
  if (fields.empty()) {
    // Either the process exited after kill() or there is no /proc, and then kill() is all we know.
    return access("/proc/self/stat", R_OK) != 0;
  }
  if (fields[0] == 'Z' || fields[0] == 'X') return false;  // Exited, not yet reaped.
  if (process_start == 0) return true;
  const std::int64_t start = ProcessStartTime(pid);
  return start == 0 || start == process_start;
}

}  // namespace asv::db
