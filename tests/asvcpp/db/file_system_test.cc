// SQLite kept off network file systems: the file-system names of statfs(2) magic numbers, and a
// writable open refused there (a probe stands in for the mount) unless explicitly allowed, then
// without WAL; reading stays possible.
#include "asvcpp/db/file_system.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "asvcpp/base/error.h"
#include "asvcpp/db/database.h"
#include "tests/asvcpp/db/db_test_util.h"

namespace asv::db {
namespace {

TEST(FileSystemTest, NetworkFileSystemsByMagicNumber) {
  EXPECT_EQ(NetworkFileSystemOfType(0x6969, ""), "nfs");
  EXPECT_EQ(NetworkFileSystemOfType(0xFF534D42L, ""), "cifs");
  EXPECT_EQ(NetworkFileSystemOfType(0xFE534D42L, ""), "smb2");
  EXPECT_EQ(NetworkFileSystemOfType(0x0BD00BD0, ""), "lustre");
  EXPECT_EQ(NetworkFileSystemOfType(0x47504653, ""), "gpfs");
  EXPECT_EQ(NetworkFileSystemOfType(0x19830326, ""), "beegfs");
  EXPECT_EQ(NetworkFileSystemOfType(0x00C36400, ""), "ceph");
  EXPECT_EQ(NetworkFileSystemOfType(0x01021997, ""), "9p");
  // FUSE: network only for the mounts that are.
  EXPECT_EQ(NetworkFileSystemOfType(0x65735546, "fuse.sshfs"), "fuse.sshfs");
  EXPECT_EQ(NetworkFileSystemOfType(0x65735546, "fuse.gcsfuse"), "fuse.gcsfuse");
  EXPECT_EQ(NetworkFileSystemOfType(0x65735546, "fuse.lxcfs"), std::nullopt);
  EXPECT_EQ(NetworkFileSystemOfType(0x65735546, "fuse"), std::nullopt);
  // Local ones: ext4, xfs, btrfs, tmpfs, overlay.
  for (long local : {0xEF53L, 0x58465342L, 0x9123683EL, 0x01021994L, 0x794C7630L}) {
    EXPECT_EQ(NetworkFileSystemOfType(local, ""), std::nullopt) << std::hex << local;
  }
  // This machine's temporary folder is local; a path that does not exist yet is asked through
  // its nearest existing folder.
  EXPECT_EQ(NetworkFileSystem(std::filesystem::temp_directory_path() / "no" / "such" / "file.db"), std::nullopt);
}

TEST(FileSystemTest, WritableOpenOnANetworkFileSystemIsRefusedUnlessAllowed) {
  const testing::ScopedDir dir("network_fs");
  const auto path = dir / "experiments.db";
  DatabaseOptions options;
  options.allow_network_file_system = false;
  options.file_system_probe = [](const std::filesystem::path&) { return std::optional<std::string>("nfs"); };
  try {
    Database refused(path, options);
    ADD_FAILURE() << "opened on NFS";
  } catch (const DbError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path.string() + ": it is on a network file system (nfs)"), std::string::npos) << what;
    EXPECT_NE(what.find("ASV_DB_ALLOW_NETWORK_FS=1"), std::string::npos) << what;
  }
  EXPECT_FALSE(std::filesystem::exists(path));  // nothing was created

  // Allowed: a rollback journal instead of WAL, and the database works.
  options.allow_network_file_system = true;
  {
    Database allowed(path, options);
    EXPECT_GT(allowed.BeginRun(testing::SampleRunInfo()), 0);
  }
  EXPECT_EQ(testing::RawDb(path).Scalar("PRAGMA journal_mode"), "delete");
  EXPECT_FALSE(std::filesystem::exists(path.string() + "-wal"));

  // Reading is never refused.
  DatabaseOptions reading = options;
  reading.allow_network_file_system = false;
  reading.read_only = true;
  EXPECT_EQ(Database(path, reading).ListRuns().size(), 1u);

  // A local file system: WAL as always.
  const auto local = dir / "local.db";
  DatabaseOptions plain;
  plain.file_system_probe = [](const std::filesystem::path&) { return std::optional<std::string>(); };
  { Database opened(local, plain); }
  EXPECT_EQ(testing::RawDb(local).Scalar("PRAGMA journal_mode"), "wal");
}

}  // namespace
}  // namespace asv::db
