// Database: the connection's lifetime and the transaction loop every operation runs in (Retry,
// Write, Read). The operations themselves live in
//   database_open.cc   opening an SQLite file (read-write and read-only), file classification,
//                      schema migration
//   database_postgres.cc  opening a PostgreSQL database and its migrations
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
#include "asvcpp/db/connection.h"
#include "asvcpp/db/postgres_connection.h"
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
    : path_(path), location_(RedactPassword(path.string())), options_(options) {
  FillCurrentProcess(&self_);
  try {
    if (IsPostgresUri(path_.string())) {
      OpenPostgres();
    } else if (options_.read_only) {
      OpenReadOnly();
    } else {
      OpenReadWrite();
    }
  } catch (...) {
    conn_.reset();
    db_ = nullptr;
    throw;
  }
}

Database::~Database() = default;

Database::Database(Database&& other) noexcept
    : path_(std::move(other.path_)),
      location_(std::move(other.location_)),
      options_(other.options_),
      conn_(std::move(other.conn_)),
      db_(std::exchange(other.db_, nullptr)),
      self_(std::move(other.self_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    path_ = std::move(other.path_);
    location_ = std::move(other.location_);
    options_ = other.options_;
    conn_ = std::move(other.conn_);
    db_ = std::exchange(other.db_, nullptr);
    self_ = std::move(other.self_);
  }
  return *this;
}

Engine Database::engine() const {
  CheckOpen();
  return conn_->dialect().engine;
}

void Database::CheckOpen() const {
  ASV_CHECK(conn_ != nullptr, "use of a moved-from asv::db::Database");
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
  const auto rollback = [this] { conn_->RollbackQuietly(); };
  for (int attempt = 1;; ++attempt) {
    try {
      if (begin) conn_->Exec(begin);
      body();
      if (begin) conn_->Exec("COMMIT");
      return;
    } catch (const StatementError& failure) {
      rollback();
      const auto elapsed = Clock::now() - start;
      if (full != nullptr && failure.full()) {
        *full = true;
        return;
      }
      if (!failure.busy()) {
        throw DbError(fmt::format("experiment database {}: {}: {}", location_, operation, failure.what()));
      }
      if (elapsed >= options_.retry_limit) {
        throw DbBusyError(fmt::format(
            "experiment database {}: {}: {}; gave up after {} attempts in {} ms (another process "
            "holds the database lock)",
            location_, operation, failure.what(), attempt,
            std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()));
      }
    } catch (const DbError& e) {
      rollback();
      throw DbError(fmt::format("experiment database {}: {}: {}", location_, operation, e.what()));
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
  CheckOpen();
  const std::string begin(conn_->dialect().begin_write);
  Retry(operation, begin.c_str(), body, full);
}

void Database::Read(std::string_view operation, const std::function<void()>& body) {
  // A deferred transaction gives the reads of one call a single consistent snapshot.
  CheckOpen();
  const std::string begin(conn_->dialect().begin_read);
  Retry(operation, begin.c_str(), body);
}

}  // namespace asv::db
