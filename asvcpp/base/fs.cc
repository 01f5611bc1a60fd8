#include "asvcpp/base/fs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "asvcpp/base/error.h"
#include "asvcpp/base/temp_files.h"

namespace asv::fs {
namespace {

std::atomic<std::int64_t> sync_calls{0};

constexpr int kMaxLinks = 40;  // as the kernel's MAXSYMLINKS

// The system's reason for the last failed call, or a generic one when errno was not set.
std::string Reason(int error) { return error != 0 ? std::strerror(error) : "input/output error"; }

// Writes all of `data` to `fd`; throws DataError naming `name` on failure.
void WriteAll(int fd, const char* data, std::size_t size, const std::string& name) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw DataError(fmt::format("{}: write failed: {}", name, Reason(errno)));
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

// Writes `contents` in place to a device, FIFO or socket, or to standard output.
void WriteStream(const OutputTarget& target, const std::string& contents) {
  if (target.kind == OutputKind::kStdout) {
    std::cout.flush();
    std::fflush(stdout);
    WriteAll(STDOUT_FILENO, contents.data(), contents.size(), "<stdout>");
    return;
  }
  const int fd = ::open(target.path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw DataError(fmt::format("{}: cannot open for writing: {}", target.path.string(), Reason(errno)));
  try {
    WriteAll(fd, contents.data(), contents.size(), target.path.string());
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

// The existing part of `path` with its links resolved, the missing rest appended.
std::filesystem::path Normalized(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  if (ec) absolute = path;
  std::filesystem::path canonical = std::filesystem::weakly_canonical(absolute, ec);
  return ec ? absolute.lexically_normal() : canonical;
}

}  // namespace

OutputTarget ResolveOutput(const std::filesystem::path& path) {
  if (path == "-") return {path, OutputKind::kStdout};
  std::filesystem::path current = path;
  for (int links = 0;; ++links) {
    struct stat st {};
    if (::lstat(current.c_str(), &st) != 0) return {current, OutputKind::kFile};  // missing: created
    if (S_ISLNK(st.st_mode)) {
      if (links == kMaxLinks) {
        throw DataError(fmt::format("{}: too many levels of symbolic links", path.string()));
      }
      std::error_code ec;
      const std::filesystem::path target = std::filesystem::read_symlink(current, ec);
      if (ec) throw DataError(fmt::format("{}: cannot read the symbolic link: {}", current.string(), ec.message()));
      current = target.is_absolute() ? target : current.parent_path() / target;
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      throw DataError(path == current
                          ? fmt::format("{}: is a directory, expected a file to write", path.string())
                          : fmt::format("{}: links to the directory {}, expected a file to write", path.string(),
                                        current.string()));
    }
    if (S_ISREG(st.st_mode)) return {current, OutputKind::kFile};
    return {current, OutputKind::kStream};  // character or block device, FIFO, socket
  }
}

std::string ReadFile(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw DataError(fmt::format("{}: file does not exist", path.string()));
  }
  if (std::filesystem::is_directory(path, ec)) {
    throw DataError(fmt::format("{}: is a directory, expected a file", path.string()));
  }
  // Only regular files: a FIFO could block forever, a device such as /dev/zero never end.
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw DataError(fmt::format("{}: not a regular file (a device, FIFO or socket), expected a file", path.string()));
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
  const OutputTarget target = ResolveOutput(path);
  if (target.kind != OutputKind::kFile) {
    std::ostringstream buffer;
    write(buffer);
    WriteStream(target, buffer.str());
    return;
  }
  std::error_code ec;
  if (target.path.has_parent_path()) std::filesystem::create_directories(target.path.parent_path(), ec);
  ScopedTempFile scoped(target.path);  // removes what killed writers of the target left; ours on failure
  const std::filesystem::path& tmp = scoped.path();
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw DataError(fmt::format("{}: cannot create: {}", tmp.string(), Reason(errno)));
    }
    errno = 0;
    write(out);
    out.flush();
    if (!out) throw DataError(fmt::format("{}: write failed: {}", tmp.string(), Reason(errno)));
  }
  const int fd = ::open(tmp.c_str(), O_RDONLY);
  if (fd >= 0) {
    const int rc = ::fsync(fd);
    const int error = errno;
    ++sync_calls;
    ::close(fd);
    if (rc != 0) throw DataError(fmt::format("{}: cannot sync: {}", tmp.string(), Reason(error)));
  }
  std::filesystem::rename(tmp, target.path, ec);
  if (ec) throw DataError(fmt::format("{}: cannot rename into place: {}", path.string(), ec.message()));
  scoped.Release();
}

void WriteFileAtomic(const std::filesystem::path& path, const std::string& contents) {
  const OutputTarget target = ResolveOutput(path);
  if (target.kind != OutputKind::kFile) {
    WriteStream(target, contents);
    return;
  }
  WriteFileAtomic(target.path, [&](std::ostream& out) { out.write(contents.data(), contents.size()); });
}

void WriteFilesAtomic(const std::vector<std::pair<std::filesystem::path, std::string>>& files) {
  std::vector<std::filesystem::path> written;  // temporary files not yet renamed
  written.reserve(files.size());
  std::size_t renamed = 0;
  try {
    std::set<std::filesystem::path> folders;
    std::vector<std::filesystem::path> targets;  // links resolved
    targets.reserve(files.size());
    for (const auto& file : files) {
      const OutputTarget target = ResolveOutput(file.first);
      if (target.kind != OutputKind::kFile) {
        throw DataError(fmt::format("{}: not a regular file; refusing to replace it", file.first.string()));
      }
      targets.push_back(target.path);
    }
    for (std::size_t i = 0; i < files.size(); ++i) {
      const std::filesystem::path& path = targets[i];
      const std::string& contents = files[i].second;
      const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
      if (folders.insert(folder).second) {
        std::error_code ec;
        std::filesystem::create_directories(folder, ec);
      }
      const std::filesystem::path tmp = TempPathFor(path);
      RegisterTempFile(tmp);  // removed by asvrun's signal watcher if interrupted
      written.push_back(tmp);
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw DataError(fmt::format("{}: cannot create: {}", tmp.string(), Reason(errno)));
      errno = 0;
      out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
      out.flush();
      if (!out) throw DataError(fmt::format("{}: write failed: {}", tmp.string(), Reason(errno)));
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
      std::filesystem::rename(written[renamed], targets[renamed], ec);
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

bool SameFile(const std::filesystem::path& a, const std::filesystem::path& b) {
  if (a.empty() || b.empty()) return false;
  struct stat sa {};
  struct stat sb {};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0) {
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  }
  return Normalized(a) == Normalized(b);
}

void CheckOutputIsNotInput(const NamedPath& output, const std::vector<NamedPath>& inputs) {
  if (output.path.empty() || output.path == "-") return;
  for (const NamedPath& input : inputs) {
    if (input.path == "-" || !SameFile(output.path, input.path)) continue;
    throw ConfigError(fmt::format("{} {} is the same file as {} {}: refusing to write over an input", output.option,
                                  output.path.string(), input.option, input.path.string()));
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
