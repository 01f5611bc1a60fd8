// Which file system a folder is on, as far as SQLite cares: its locking is unreliable on network
// file systems and its WAL mode needs shared memory that they do not provide
// (https://www.sqlite.org/wal.html, "WAL does not work over a network filesystem";
// https://www.sqlite.org/lockingv3.html, "How To Corrupt Your Database Files").
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace asv::db {

/// The network file system of a statfs(2) `f_type` magic number: "nfs", "smb", "smb2", "cifs",
/// "lustre", "gpfs", "beegfs", "ceph", "9p", "afs" or "ncp"; for FUSE (0x65735546), `fuse_type`
/// (the mount's type in /proc/self/mountinfo, e.g. "fuse.sshfs") when it names a network one
/// (sshfs, s3fs, gcsfuse, glusterfs, rclone, juicefs, blobfuse, blobfuse2, goofys, cvmfs);
/// nullopt for a local file system (ext4, xfs, btrfs, tmpfs, overlay, other FUSE mounts, ...).
/// Magic numbers from Linux's include/uapi/linux/magic.h and the file systems' own sources.
/// Never throws.
std::optional<std::string> NetworkFileSystemOfType(long f_type, const std::string& fuse_type);

/// The network file system `path` (a file or folder; the nearest existing ancestor is asked) is
/// on, from statfs(2) and, for FUSE, /proc/self/mountinfo; nullopt for a local one or when it
/// cannot be told. Never throws.
std::optional<std::string> NetworkFileSystem(const std::filesystem::path& path);

}  // namespace asv::db
