#include "asvcpp/db/file_system.h"

#include <sys/vfs.h>

#include <fstream>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

namespace asv::db {
namespace {

namespace stdfs = std::filesystem;

constexpr long kFuseMagic = 0x65735546;

// The type of the mount that holds `path` (longest mount point that is a prefix of it) in
// /proc/self/mountinfo: "<id> <parent> <dev> <root> <mount point> <options> ... - <type> <source> ...".
std::string MountType(const stdfs::path& path) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  std::string best_point;
  std::string best_type;
  const std::string target = path.string();
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    if (!(fields >> id >> parent >> dev >> root >> point)) continue;
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string type;
    tail >> type;
    const bool under = target == point || point == "/" ||
                       (target.compare(0, point.size(), point) == 0 && target.size() > point.size() &&
                        target[point.size()] == '/');
    if (under && point.size() >= best_point.size()) {
      best_point = point;
      best_type = type;
    }
  }
  return best_type;
}

}  // namespace

std::optional<std::string> NetworkFileSystemOfType(long f_type, const std::string& fuse_type) {
  static const std::vector<std::pair<long, const char*>> kNetwork = {
      {0x6969, "nfs"},           {0x517B, "smb"},           {0xFE534D42L, "smb2"},   {0xFF534D42L, "cifs"},
      {0x0BD00BD0, "lustre"},    {0x47504653, "gpfs"},      {0x19830326, "beegfs"},  {0x00C36400, "ceph"},
      {0x01021997, "9p"},        {0x5346414F, "afs"},       {0x6B414653, "afs"},     {0x564C, "ncp"},
  };
  for (const auto& [magic, name] : kNetwork) {
    if (f_type == magic) return std::string(name);
  }
  if (f_type == kFuseMagic) {
    static const std::set<std::string> kNetworkFuse = {"sshfs", "s3fs", "gcsfuse", "glusterfs", "rclone",
                                                       "juicefs", "blobfuse", "blobfuse2", "goofys", "cvmfs"};
    const std::string prefix = "fuse.";
    if (fuse_type.compare(0, prefix.size(), prefix) == 0 && kNetworkFuse.count(fuse_type.substr(prefix.size())) > 0) {
      return fuse_type;
    }
  }
  return std::nullopt;
}

std::optional<std::string> NetworkFileSystem(const stdfs::path& path) {
  std::error_code ec;
  stdfs::path probe = stdfs::absolute(path, ec);
  if (ec) return std::nullopt;
  while (!stdfs::exists(probe, ec) && probe.has_parent_path() && probe != probe.parent_path()) {
    probe = probe.parent_path();
  }
  struct statfs info {};
  if (::statfs(probe.c_str(), &info) != 0) return std::nullopt;
  const long type = static_cast<long>(info.f_type);
  const stdfs::path canonical = stdfs::weakly_canonical(probe, ec);
  return NetworkFileSystemOfType(type, type == kFuseMagic ? MountType(ec ? probe : canonical) : std::string());
}

}  // namespace asv::db
