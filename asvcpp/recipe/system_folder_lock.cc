#include "asvcpp/recipe/system_folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/db/run_info.h"
#include "asvcpp/db/timestamp.h"

namespace asv::recipe {
namespace {

std::string HolderJson(const FolderHolder& h) {
  nlohmann::json j;
  j["run_id"] = h.run_id;
  j["config"] = h.config;
  j["host"] = h.host;
  j["pid"] = h.pid;
  j["since"] = h.since;
  return j.dump() + "\n";
}

std::optional<FolderHolder> ParseHolder(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    FolderHolder h;
    h.run_id = j.value("run_id", std::int64_t{0});
    h.config = j.value("config", std::string());
    h.host = j.value("host", std::string());
    h.pid = j.value("pid", std::int64_t{0});
    h.since = j.value("since", std::string());
    return h;
  } catch (const std::exception&) {
    return std::nullopt;  // being written, or not ours
  }
}

// The holder text of an open lock file.
std::optional<FolderHolder> ReadHolder(int fd) {
  std::string text;
  char buffer[4096];
  for (off_t offset = 0;;) {
    const ssize_t n = ::pread(fd, buffer, sizeof(buffer), offset);
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    offset += n;
    if (text.size() > 65536) return std::nullopt;
  }
  return ParseHolder(text);
}

}  // namespace

std::string DescribeHolder(const FolderHolder& h) {
  std::vector<std::string> parts;
  if (!h.config.empty()) parts.push_back(fmt::format("config '{}'", h.config));
  if (!h.host.empty()) parts.push_back(fmt::format("host {}", h.host));
  if (h.pid > 0) parts.push_back(fmt::format("pid {}", h.pid));
  if (!h.since.empty()) parts.push_back(fmt::format("since {}", h.since));
  const std::string who = h.run_id > 0 ? fmt::format("run {}", h.run_id) : std::string("another asvrun process");
  return parts.empty() ? who : fmt::format("{} ({})", who, fmt::join(parts, ", "));
}

std::filesystem::path SystemFolderLock::LockFile(const std::filesystem::path& folder) {
  return folder / ".asvrun.lock";
}

std::optional<FolderHolder> SystemFolderLock::LastHolder(const std::filesystem::path& folder) {
  const int fd = ::open(LockFile(folder).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  auto holder = ReadHolder(fd);
  ::close(fd);
  return holder;
}

SystemFolderLock::SystemFolderLock(const std::filesystem::path& folder, FolderHolder holder, bool wait)
    : file_(LockFile(folder)), holder_(std::move(holder)) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) throw DataError(fmt::format("{}: cannot create the system folder: {}", folder.string(), ec.message()));
  // O_CLOEXEC: a lock inherited by a child process (a decoder, a worker) would outlive this one.
  fd_ = ::open(file_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) throw DataError(fmt::format("{}: cannot open the lock file: {}", file_.string(), std::strerror(errno)));
  const auto fail = [this](const char* what, int error) {
    const std::string text = fmt::format("{}: {}: {}", file_.string(), what, std::strerror(error));
    ::close(fd_);
    fd_ = -1;
    return DataError(text);
  };
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    if (error == EINTR) continue;
    if (error != EWOULDBLOCK) throw fail("cannot lock the system folder (does this file system support locks?)", error);
    const auto current = ReadHolder(fd_);
    const std::string who = current ? DescribeHolder(*current) : std::string("another asvrun process");
    if (!wait) {
      ::close(fd_);
      fd_ = -1;
      throw StageError(fmt::format(
          "{} is in use by {}: one run at a time writes a system folder (a second one would overwrite its "
          "checkpoints and results); wait for it to end (asvrun --wait-for-gpu queues behind it), or give this "
          "config its own paths.system_folder",
          folder.string(), who));
    }
    ASV_LOG(Info, "{} is in use by {}; waiting until it is free", folder.string(), who);
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) throw fail("cannot lock the system folder", errno);
    }
    break;
  }
  if (holder_.host.empty()) holder_.host = db::HostName();
  if (holder_.pid == 0) holder_.pid = static_cast<std::int64_t>(::getpid());
  holder_.since = db::NowUtc();
  Update(holder_);
}

SystemFolderLock::~SystemFolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

void SystemFolderLock::Update(const FolderHolder& holder) {
  holder_.run_id = holder.run_id;
  if (!holder.config.empty()) holder_.config = holder.config;
  const std::string text = HolderJson(holder_);
  // In place (the lock belongs to this open file, so the file is never replaced by a rename).
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    throw DataError(fmt::format("{}: cannot write the holder: {}", file_.string(), std::strerror(errno)));
  }
}

}  // namespace asv::recipe
