// One writer per system folder. Two runs that write the same paths.system_folder at once
// overwrite each other's checkpoints, embeddings and scores, and the first run's records then
// point at the second run's files. A run therefore holds an exclusive lock on its system folder
// while its stages run: flock(2) on "<system folder>/.asvrun.lock", a file that also names the
// holder (run, config, host, process, start time) for the error or wait message of the next run.
//
// The kernel releases the lock when its process ends, however it ends (kill -9 included), so a
// lock left by a dead process is simply taken over: the file's stale text is replaced. flock
// works across the hosts of an NFS mount on Linux (it is emulated with POSIX byte-range locks
// there); on file systems without any locking (some FUSE mounts) taking the lock fails with an
// error that says so.
//
//   SystemFolderLock lock(system_folder, {run_id, "net", "", 0, ""}, /*wait=*/false);
//   // ... run the stages; the lock is released when `lock` is destroyed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

namespace asv::recipe {

/// Who holds (or asks for) a system folder.
struct FolderHolder {
  FolderHolder(std::int64_t run = 0, std::string config_name = "", std::string host_name = "",
               std::int64_t process = 0, std::string since_utc = "")
      : run_id(run),
        config(std::move(config_name)),
        host(std::move(host_name)),
        pid(process),
        since(std::move(since_utc)) {}

  std::int64_t run_id = 0;  ///< Run in the experiment database; 0 while not recorded yet.
  std::string config;
  std::string host;         ///< Filled in by the lock (gethostname) when empty.
  std::int64_t pid = 0;     ///< Filled in by the lock (this process) when 0.
  std::string since;        ///< When the lock was taken (db::NowUtc, UTC); set by the lock.
};

/// "run 12 (config 'net', host gpu3, pid 4711, since 2026-11-28T10:00:00.000Z)" and the like;
/// parts that are not known are left out.
std::string DescribeHolder(const FolderHolder& holder);

class SystemFolderLock {
 public:
  /// Creates `folder` if needed and takes its lock for `holder`. When another process holds it:
  /// with `wait`, blocks until it is released (logging once who holds it); without, throws
  /// StageError (exit 5) "<folder> is in use by <holder>" with what to do. Throws DataError naming
  /// the lock file when it cannot be created, or the file system supports no locks.
  SystemFolderLock(const std::filesystem::path& folder, FolderHolder holder, bool wait);
  /// Releases the lock (the file stays; its text names the last holder).
  ~SystemFolderLock();
  SystemFolderLock(const SystemFolderLock&) = delete;
  SystemFolderLock& operator=(const SystemFolderLock&) = delete;

  /// Rewrites the holder text, e.g. with the run id once the run is recorded. Throws DataError
  /// when the file cannot be written.
  void Update(const FolderHolder& holder);

  /// "<folder>/.asvrun.lock".
  static std::filesystem::path LockFile(const std::filesystem::path& folder);

  /// The holder the lock file of `folder` names (the current one while it is held, the last one
  /// after), or nullopt when there is no readable lock file.
  static std::optional<FolderHolder> LastHolder(const std::filesystem::path& folder);

 private:
  std::filesystem::path file_;
  FolderHolder holder_;
  int fd_ = -1;
};

}  // namespace asv::recipe
