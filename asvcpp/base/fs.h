// Filesystem helpers: whole-file reads, atomic writes (temporary name + rename) that replace
// nothing but regular files, the check that an output is not one of a command's inputs, the path
// of the running executable.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asv::fs {

/// Reads a whole file as bytes. Throws DataError naming the path if it is missing, unreadable or
/// not a regular file (a directory, device, FIFO or socket: a FIFO could block forever and a
/// device such as /dev/zero never end).
std::string ReadFile(const std::filesystem::path& path);

/// How an output path is written (ResolveOutput).
enum class OutputKind {
  kFile,    ///< A regular file, or nothing yet: written atomically (temporary name + rename).
  kStream,  ///< A character or block device, a FIFO or a socket: opened and written in place.
  kStdout,  ///< "-": the standard output of this process.
};

/// An output path with its symbolic links resolved.
struct OutputTarget {
  std::filesystem::path path;  ///< What is written: the final target of a chain of links.
  OutputKind kind = OutputKind::kFile;
};

/// Decides how `path` is written: "-" is standard output; a symbolic link is followed to its
/// final target (relative links against their own folder, a dangling one to the file it names),
/// so that writing through a link changes the file it points at and leaves the link; a device,
/// FIFO or socket is a stream; a regular or missing file is written atomically. Throws DataError
/// naming `path` when it (or its target) is a directory, or its links loop or nest deeper than 40.
OutputTarget ResolveOutput(const std::filesystem::path& path);

/// Writes `contents` to `path` as ResolveOutput decides. A regular or missing file is written
/// atomically: into "<target>.tmp.<pid>" in the same folder, fsync, then rename over the target,
/// creating missing parent folders; on failure the temporary file is removed, DataError names the
/// path and the system's reason (e.g. "No space left on device"), and an existing file is left
/// untouched. Temporary files of the target left by killed processes are removed first, and an
/// interrupted asvrun removes this one (asvcpp/base/temp_files.h). Devices, FIFOs and "-" are
/// written in place as streams (a write error such as /dev/full's throws DataError with its
/// reason). Directories are refused (DataError) and never replaced.
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
/// Symbolic links are followed as by ResolveOutput; a path that is not a regular file (device,
/// FIFO, "-", directory) is refused with DataError before anything is written.
void WriteFilesAtomic(const std::vector<std::pair<std::filesystem::path, std::string>>& files);

/// True when `a` and `b` name the same file: the same device and inode when both exist (through
/// any spelling, "../", symbolic or hard link), else the same path after making both absolute and
/// resolving the links of their existing parts. Never throws.
bool SameFile(const std::filesystem::path& a, const std::filesystem::path& b);

/// One input of a command, for CheckOutputIsNotInput: the option or argument that names it
/// (e.g. "--db") and its path.
struct NamedPath {
  std::string_view option;
  std::filesystem::path path;
};

/// Refuses to write an output over one of the command's own inputs: throws ConfigError (exit 2)
/// "<output option> <path> is the same file as <input option> <path>" when SameFile(output,
/// input.path) for any input. Outputs "-" and empty paths are never inputs.
void CheckOutputIsNotInput(const NamedPath& output, const std::vector<NamedPath>& inputs);

/// How many fsync/syncfs calls WriteFileAtomic and WriteFilesAtomic have made in this process (for
/// tests of how often a writer syncs).
std::int64_t SyncCalls();

/// The running executable's path, symbolic links resolved (Linux: /proc/self/exe). asvrun uses it
/// to start asvrun-torch beside itself and its data-parallel workers. Throws Error (exit status
/// kExitFailure) naming /proc/self/exe when it cannot be read.
std::filesystem::path SelfExecutable();

}  // namespace asv::fs
