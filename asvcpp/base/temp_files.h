// Temporary files of atomic writes ("<target>.tmp.<pid>": written, then renamed over <target>),
// and their cleanup when a process does not get to rename them:
// - a process that is interrupted (asvrun's SIGINT/SIGTERM/SIGHUP watcher) removes its own
//   temporary files before it exits (RemoveRegisteredTempFiles);
// - a process killed outright (SIGKILL, power loss) leaves them behind; the next process that
//   writes into the same folder removes those whose process no longer runs on this host
//   (RemoveStaleTempFiles, once per folder and process, so that writing many files into a large
//   folder stays linear).
// So disk use after any number of interrupted runs and one finished run is that of one finished
// run. Output folders shared by writers on several hosts at once are not supported: a process id
// of another host could look gone here.
#pragma once

#include <cstddef>
#include <filesystem>

namespace asv::fs {

/// "<target>.tmp.<pid of this process>", the temporary name of an atomic write of `target`.
std::filesystem::path TempPathFor(const std::filesystem::path& target);

/// Records `tmp` as a temporary file of this process, to be removed by
/// RemoveRegisteredTempFiles. Thread-safe.
void RegisterTempFile(const std::filesystem::path& tmp);

/// Forgets `tmp` (after it was renamed into place or removed). Thread-safe; unknown paths are
/// ignored.
void UnregisterTempFile(const std::filesystem::path& tmp);

/// Removes every registered temporary file (on interruption, just before the process exits).
/// Never throws; returns the number of files removed.
std::size_t RemoveRegisteredTempFiles() noexcept;

/// Removes the temporary files "<name>.tmp.<pid>" directly in `folder` whose process <pid> no
/// longer exists on this host (left by a killed writer). Files of running processes, this one
/// included, and every other file are kept. Never throws (a folder that cannot be read removes
/// nothing); returns the number of files removed.
std::size_t RemoveStaleTempFiles(const std::filesystem::path& folder) noexcept;

/// Registers TempPathFor(target) for its lifetime and, the first time this process writes into
/// target's folder, removes the stale temporary files there (RemoveStaleTempFiles). The
/// destructor removes the temporary file unless Release() was called after it was renamed into
/// place.
class ScopedTempFile {
 public:
  explicit ScopedTempFile(const std::filesystem::path& target);
  ~ScopedTempFile();
  ScopedTempFile(const ScopedTempFile&) = delete;
  ScopedTempFile& operator=(const ScopedTempFile&) = delete;

  /// The temporary path, TempPathFor(target).
  const std::filesystem::path& path() const { return tmp_; }
  /// The file was renamed into place (or is otherwise not ours to remove any more).
  void Release();

 private:
  std::filesystem::path tmp_;
  bool released_ = false;
};

}  // namespace asv::fs
