#include "asvcpp/base/fs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "asvcpp/base/error.h"
#include "asvcpp/base/temp_files.h"

namespace asv::fs {

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
    ::close(fd);
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw DataError(fmt::format("{}: cannot rename into place: {}", path.string(), ec.message()));
  scoped.Release();
}

void WriteFileAtomic(const std::filesystem::path& path, const std::string& contents) {
  WriteFileAtomic(path, [&](std::ostream& out) { out.write(contents.data(), contents.size()); });
}

std::filesystem::path SelfExecutable() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    throw Error(kExitFailure, fmt::format("cannot locate the running executable (/proc/self/exe): {}", ec.message()));
  }
  return exe;
}

}  // namespace asv::fs
