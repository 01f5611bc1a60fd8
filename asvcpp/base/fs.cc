#include "asvcpp/base/fs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "asvcpp/base/error.h"
#include "asvcpp/base/temp_files.h"

namespace asv::fs {
namespace {

std::atomic<std::int64_t> sync_calls{0};

}  // namespace

std::string ReadFile(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw DataError(fmt::format("{}: file does not exist", path.string()));
  }
  if (std::filesystem::is_directory(path, ec)) {
    throw DataError(fmt::format("{}: is a directory, expected a file", path.string()));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw DataError(fmt::format("{}: read error", path.string()));
  return ss.str();
}

void WriteFileAtomic(const std::filesystem::path& path,
                     const std::function<void(std::ostream&)>& write) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  ScopedTempFile scoped(path);  // removes what killed writers of `path` left; ours on failure
  const std::filesystem::path& tmp = scoped.path();
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw DataError(fmt::format("{}: cannot create: {}", tmp.string(), std::strerror(errno)));
    }
    write(out);
    out.flush();
    if (!out) throw DataError(fmt::format("{}: write failed", tmp.string()));
  }
  const int fd = ::open(tmp.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ++sync_calls;
    ::close(fd);
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw DataError(fmt::format("{}: cannot rename into place: {}", path.string(), ec.message()));
  scoped.Release();
}

void WriteFileAtomic(const std::filesystem::path& path, const std::string& contents) {
  WriteFileAtomic(path, [&](std::ostream& out) { out.write(contents.data(), contents.size()); });
}

void WriteFilesAtomic(const std::vector<std::pair<std::filesystem::path, std::string>>& files) {
  std::vector<std::filesystem::path> written;  // temporary files not yet renamed
  written.reserve(files.size());
  std::size_t renamed = 0;
  try {
    std::set<std::filesystem::path> folders;
    for (const auto& [path, contents] : files) {
      const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
      if (folders.insert(folder).second) {
        std::error_code ec;
        std::filesystem::create_directories(folder, ec);
      }
      const std::filesystem::path tmp = TempPathFor(path);
      RegisterTempFile(tmp);  // removed by asvrun's signal watcher if interrupted
      written.push_back(tmp);
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw DataError(fmt::format("{}: cannot create: {}", tmp.string(), std::strerror(errno)));
      out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
      out.flush();
      if (!out) throw DataError(fmt::format("{}: write failed", tmp.string()));
    }
    // One sync per file system: syncfs writes every dirty page of the folder's file system,
    // the temporary files' included, before the renames make them visible.
    for (const auto& folder : folders) {
      const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
      if (fd < 0) continue;
      const int rc = ::syncfs(fd);
      const int error = errno;
      ++sync_calls;
      ::close(fd);
      if (rc != 0) throw DataError(fmt::format("{}: cannot sync: {}", folder.string(), std::strerror(error)));
    }
    for (; renamed < files.size(); ++renamed) {
      std::error_code ec;
      std::filesystem::rename(written[renamed], files[renamed].first, ec);
      if (!ec) UnregisterTempFile(written[renamed]);
      if (ec) {
        throw DataError(
            fmt::format("{}: cannot rename into place: {}", files[renamed].first.string(), ec.message()));
      }
    }
  } catch (...) {
    std::error_code ec;
    for (std::size_t i = renamed; i < written.size(); ++i) {
      std::filesystem::remove(written[i], ec);
      UnregisterTempFile(written[i]);
    }
    throw;
  }
}

std::int64_t SyncCalls() { return sync_calls.load(); }

std::filesystem::path SelfExecutable() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    throw Error(kExitFailure, fmt::format("cannot locate the running executable (/proc/self/exe): {}", ec.message()));
  }
  return exe;
}

}  // namespace asv::fs
