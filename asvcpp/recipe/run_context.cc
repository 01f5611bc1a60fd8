#include "asvcpp/recipe/run_context.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/db/database.h"
#include "asvcpp/base/checksum.h"

namespace asv::recipe {
namespace {

namespace stdfs = std::filesystem;

std::vector<stdfs::path> SortedChildren(const stdfs::path& folder) {
  std::vector<stdfs::path> out;
  std::error_code ec;
  for (const auto& entry : stdfs::directory_iterator(folder, ec)) out.push_back(entry.path());
  if (ec) throw DataError(fmt::format("{}: cannot list folder: {}", folder.string(), ec.message()));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

void RunContext::RecordArtifactOfSize(const stdfs::path& path, const std::string& kind, std::int64_t bytes,
                                      const std::string& checksum) {
  db::ArtifactRecord record;
  if (stage_id_ != 0) record.stage_id = stage_id_;
  record.path = path.string();
  record.kind = kind;
  record.bytes = bytes;
  record.checksum = checksum;
  db_->RecordArtifact(run_id_, record);
}

void RunContext::RecordArtifact(const stdfs::path& file, const std::string& kind) {
  if (db_ == nullptr) return;
  std::error_code ec;
  if (!stdfs::exists(file, ec)) {
    RecordArtifactOfSize(file, kind, 0);
    return;
  }
  const auto size = stdfs::file_size(file, ec);
  RecordArtifactOfSize(file, kind, ec ? 0 : static_cast<std::int64_t>(size), fs::FileChecksum(file));
}

void RunContext::RecordArtifactWithChecksum(const stdfs::path& file, const std::string& kind,
                                            const std::string& checksum) {
  if (db_ == nullptr) return;
  std::error_code ec;
  const auto size = stdfs::file_size(file, ec);
  if (ec) throw DataError(fmt::format("{}: cannot read its size: {}", file.string(), ec.message()));
  RecordArtifactOfSize(file, kind, static_cast<std::int64_t>(size), checksum);
}

void RunContext::RecordFolderArtifacts(const stdfs::path& folder, const std::string& kind) {
  if (db_ == nullptr) return;
  for (const auto& child : SortedChildren(folder)) {
    std::error_code ec;
    if (stdfs::is_regular_file(child, ec)) {
      RecordArtifact(child, kind);
    } else if (stdfs::is_directory(child, ec)) {
      std::int64_t bytes = 0;
      for (const auto& entry : stdfs::recursive_directory_iterator(child, ec)) {
        std::error_code size_ec;
        if (entry.is_regular_file(size_ec)) {
          const auto size = entry.file_size(size_ec);
          if (!size_ec) bytes += static_cast<std::int64_t>(size);
        }
      }
      RecordArtifactOfSize(child, kind, bytes);
    }
  }
}

void RunContext::RecordEpoch(const db::EpochRecord& epoch) {
  if (db_ != nullptr) db_->RecordEpoch(run_id_, epoch);
}

void RunContext::RecordResult(db::ResultRecord result) {
  if (db_ == nullptr) return;
  if (!result.stage) result.stage = stage_number_;
  db_->RecordResult(run_id_, result);
}

}  // namespace asv::recipe
