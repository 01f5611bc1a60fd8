// Database: the connection's lifetime and the transaction loop every operation runs in (Retry,
// Write, Read). The operations themselves live in
//   database_open.cc   opening (read-write and read-only), file classification, schema migration
//   database_write.cc  runs, stages, epochs, results, artifacts, heartbeats, crash marking
//   database_read.cc   listings and lookups (runs, GPU holders, results, epochs, stages, artifacts)
// on top of Statement (statement.h) and the row mappers (row_mappers.h).
#include "asvcpp/db/database.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <thread>
#include <utility>

#include "asvcpp/base/check.h"
#include "asvcpp/base/error.h"
#include "asvcpp/db/statement.h"

namespace asv::db {

std::filesystem::path Database::DefaultPath(const std::filesystem::path& output_folder) {
  return output_folder / "experiments.db";
}

bool AllowNetworkFileSystemByDefault() {
  const char* allow = std::getenv("ASV_DB_ALLOW_NETWORK_FS");
  return allow != nullptr && std::string(allow) == "1";
}

Database::Database(const std::filesystem::path& path, DatabaseOptions options)
    : path_(path), options_(options) {
  FillCurrentProcess(&self_);
  try {
    if (options_.read_only) {
      OpenReadOnly();
    } else {
      OpenReadWrite();
    }
  } catch (...) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

Database::~Database() {
  if (db_) sqlite3_close_v2(db_);
}

Database::Database(Database&& other) noexcept
    : path_(std::move(other.path_)),
      options_(other.options_),
      db_(std::exchange(other.db_, nullptr)),
      self_(std::move(other.self_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    if (db_) sqlite3_close_v2(db_);
    path_ = std::move(other.path_);
    options_ = other.options_;
    db_ = std::exchange(other.db_, nullptr);
    self_ = std::move(other.self_);
  }
  return *this;
}

void Database::CheckOpen() const {
  ASV_CHECK(db_ != nullptr, "use of a moved-from asv::db::Database");
}

void Database::Retry(std::string_view operation, const char* begin,
                     const std::function<void()>& body, bool* full) {
  CheckOpen();
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  // Jitter keeps processes that collided once from colliding again in lock step.
  std::minstd_rand rng(static_cast<unsigned>(::getpid()) ^
                       static_cast<unsigned>(start.time_since_epoch().count()));
  auto delay = std::chrono::microseconds(500);
  const auto rollback = [this] {
    if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  };
  for (int attempt = 1;; ++attempt) {
    try {
      if (begin) Exec(db_, begin);
      body();
      if (begin) Exec(db_, "COMMIT");
      return;
    } catch (const SqliteError& failure) {
      rollback();
      const auto elapsed = Clock::now() - start;
      if (full != nullptr && failure.full()) {
        *full = true;
        return;
      }
      if (!failure.busy()) {
        throw DbError(fmt::format("experiment database {}: {}: {}", path_.string(), operation,
                                  failure.what()));
      }
      if (elapsed >= options_.retry_limit) {
        throw DbBusyError(fmt::format(
            "experiment database {}: {}: {}; gave up after {} attempts in {} ms (another process "
            "holds the database lock)",
            path_.string(), operation, failure.what(), attempt,
            std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()));
      }
    } catch (const DbError& e) {
      rollback();
      throw DbError(fmt::format("experiment database {}: {}: {}", path_.string(), operation,
                                e.what()));
    } catch (...) {
      rollback();
      throw;
    }
    std::uniform_int_distribution<long> jitter(0, delay.count());
    std::this_thread::sleep_for(delay + std::chrono::microseconds(jitter(rng)));
    delay = std::min<std::chrono::microseconds>(delay * 2, std::chrono::milliseconds(100));
  }
}

void Database::Write(std::string_view operation, const std::function<void()>& body, bool* full) {
  Retry(operation, "BEGIN IMMEDIATE", body, full);
}

void Database::Read(std::string_view operation, const std::function<void()>& body) {
  // A deferred transaction gives the reads of one call a single consistent snapshot.
  Retry(operation, "BEGIN", body);
}

}  // namespace asv::db
