#include "asvcpp/recipe/run_context.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "asvcpp/base/checksum.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/db/database.h"

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
  Record("artifact", [this, record] { db_->RecordArtifact(run_id_, record); });
}

bool RunContext::TryFlush(std::chrono::milliseconds limit) {
  const auto normal = db_->options().retry_limit;
  db_->set_retry_limit(limit);
  try {
    while (!pending_.empty()) {
      pending_.front().write();
      pending_.pop_front();
    }
  } catch (const DbBusyError&) {
    db_->set_retry_limit(normal);
    return false;
  } catch (...) {
    db_->set_retry_limit(normal);
    throw;
  }
  db_->set_retry_limit(normal);
  return true;
}

void RunContext::Record(const char* what, std::function<void()> write) {
  // Records already waiting go first; a short try, since the database was locked a moment ago.
  if (!pending_.empty() &&
      !TryFlush(std::min<std::chrono::milliseconds>(db_->options().retry_limit, std::chrono::seconds(2)))) {
    pending_.push_back({what, std::move(write)});
    return;
  }
  try {
    write();
  } catch (const DbBusyError& e) {
    pending_.push_back({what, std::move(write)});
    ASV_LOG(Warning, "the experiment database is locked by another process; the {} record waits and is written "
            "later ({})", what, e.what());
  }
}

void RunContext::FlushRecords(std::chrono::milliseconds patience) {
  if (db_ == nullptr || pending_.empty()) return;
  const std::size_t waiting = pending_.size();
  try {
    if (TryFlush(patience)) {
      ASV_LOG(Info, "wrote the {} records that waited for the experiment database", waiting);
      return;
    }
  } catch (const DbError& e) {
    throw DbError(fmt::format("{} records of run {} could not be written to the experiment database: {}",
                              pending_.size(), run_id_, e.what()));
  }
  throw DbError(fmt::format(
      "{} records of run {} (the first: {}) could not be written: the experiment database {} stayed locked by "
      "another process for {} s",
      pending_.size(), run_id_, pending_.front().what, db_->path().string(),
      std::chrono::duration_cast<std::chrono::seconds>(patience).count()));
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
  if (db_ != nullptr) Record("epoch", [this, epoch] { db_->RecordEpoch(run_id_, epoch); });
}

void RunContext::RecordResult(db::ResultRecord result) {
  if (db_ == nullptr) return;
  if (!result.stage) result.stage = stage_number_;
  Record("result", [this, result] { db_->RecordResult(run_id_, result); });
}

}  // namespace asv::recipe
