#include "asvcpp/base/temp_files.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace asv::fs {
namespace {

std::mutex& RegistryMutex() {
  static std::mutex mutex;
  return mutex;
}

std::set<std::filesystem::path>& Registry() {
  static auto* registry = new std::set<std::filesystem::path>();  // never destroyed: used at exit
  return *registry;
}

// True when no process `pid` exists on this host (kill(pid, 0) fails with ESRCH).
bool ProcessIsGone(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

std::filesystem::path TempPathFor(const std::filesystem::path& target) {
  return target.string() + fmt::format(".tmp.{}", ::getpid());
}

void RegisterTempFile(const std::filesystem::path& tmp) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().insert(tmp);
}

void UnregisterTempFile(const std::filesystem::path& tmp) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().erase(tmp);
}

std::size_t RemoveRegisteredTempFiles() noexcept {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::size_t removed = 0;
  for (const auto& tmp : Registry()) {
    if (::unlink(tmp.c_str()) == 0) ++removed;
  }
  Registry().clear();
  return removed;
}

std::size_t RemoveStaleTempFiles(const std::filesystem::path& folder) noexcept {
  std::size_t removed = 0;
  try {
    constexpr std::string_view kMarker = ".tmp.";
    std::error_code ec;
    for (std::filesystem::directory_iterator it(folder.empty() ? "." : folder, ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      const std::size_t marker = name.rfind(kMarker);
      if (marker == std::string::npos || marker == 0) continue;
      const std::string_view digits = std::string_view(name).substr(marker + kMarker.size());
      pid_t pid = 0;
      const auto [end_ptr, error] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
      if (digits.empty() || error != std::errc() || end_ptr != digits.data() + digits.size() || pid <= 0) continue;
      if (pid == ::getpid() || !ProcessIsGone(pid)) continue;
      std::error_code remove_ec;
      if (std::filesystem::remove(it->path(), remove_ec)) ++removed;
    }
  } catch (...) {
    // Best effort: a stale file left behind costs disk space, not correctness.
  }
  return removed;
}

ScopedTempFile::ScopedTempFile(const std::filesystem::path& target) : tmp_(TempPathFor(target)) {
  const std::filesystem::path folder = target.parent_path();
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    static auto* cleaned = new std::set<std::filesystem::path>();
    first = cleaned->insert(folder).second;
  }
  if (first) RemoveStaleTempFiles(folder);
  RegisterTempFile(tmp_);
}

ScopedTempFile::~ScopedTempFile() {
  if (released_) return;
  std::error_code ec;
  std::filesystem::remove(tmp_, ec);
  UnregisterTempFile(tmp_);
}

void ScopedTempFile::Release() {
  if (released_) return;
  released_ = true;
  UnregisterTempFile(tmp_);
}

}  // namespace asv::fs
