// Filesystem helpers: whole-file reads, atomic writes (temporary name + rename), the path of the
// running executable.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

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

/// WriteFileAtomic for many files with one sync for all of them instead of one fsync each (an fsync
/// costs milliseconds, which for VoxCeleb2's 150,480 concatenation lists added minutes): writes
/// every (path, contents) into "<path>.tmp.<pid>" (missing parent folders created), syncs the file
/// system of each distinct parent folder once (syncfs), then renames every file into place. Each
/// file thus has its old contents or all of its new ones, as with WriteFileAtomic. On failure the
/// temporary files are removed and DataError names the path; files renamed before the failure keep
/// their new contents, the others their old ones. Callers bound the memory by passing batches.
void WriteFilesAtomic(const std::vector<std::pair<std::filesystem::path, std::string>>& files);

/// How many fsync/syncfs calls WriteFileAtomic and WriteFilesAtomic have made in this process (for
/// tests of how often a writer syncs).
std::int64_t SyncCalls();

/// The running executable's path, symbolic links resolved (Linux: /proc/self/exe). asvrun uses it
/// to start asvrun-torch beside itself and its data-parallel workers. Throws Error (exit status
/// kExitFailure) naming /proc/self/exe when it cannot be read.
std::filesystem::path SelfExecutable();

}  // namespace asv::fs
