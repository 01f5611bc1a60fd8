// Filesystem helpers: whole-file reads, atomic writes (temporary name + rename), the path of the
// running executable.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>

namespace asv::fs {

/// Reads a whole file as bytes. Throws DataError naming the path if it is missing or unreadable.
std::string ReadFile(const std::filesystem::path& path);

/// Writes `contents` to `path` atomically: into "<path>.tmp.<pid>" in the same folder, fsync,
/// then rename over `path`. Creates missing parent folders. On failure the temporary file is
/// removed and DataError names the path; an existing `path` is left untouched. Temporary files of
/// `path` left by killed processes are removed first, and an interrupted asvrun removes this one
/// (asvcpp/base/temp_files.h).
void WriteFileAtomic(const std::filesystem::path& path, const std::string& contents);

/// Like WriteFileAtomic, but the caller streams the contents into `write`.
void WriteFileAtomic(const std::filesystem::path& path,
                     const std::function<void(std::ostream&)>& write);

/// The running executable's path, symbolic links resolved (Linux: /proc/self/exe). asvrun uses it
/// to start asvrun-torch beside itself and its data-parallel workers. Throws Error (exit status
/// kExitFailure) naming /proc/self/exe when it cannot be read.
std::filesystem::path SelfExecutable();

}  // namespace asv::fs
