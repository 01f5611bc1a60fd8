// Helpers shared by the experiment-database tests.
#pragma once

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "asvcpp/db/database.h"
#include "asvcpp/db/postgres_connection.h"

namespace asv::db::testing {

/// A fresh, empty folder under the temporary directory, unique to this process and `name`,
/// removed again on destruction (also when the test fails).
class ScopedDir {
 public:
  explicit ScopedDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("asv_db_test_" + std::to_string(::getpid()) + "_" + name)) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScopedDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScopedDir(const ScopedDir&) = delete;
  ScopedDir& operator=(const ScopedDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::filesystem::path& child) const {
    return path_ / child;
  }

 private:
  std::filesystem::path path_;
};

/// A plain connection, as a user of the `sqlite3` or `psql` CLI would have, to inspect or tamper
/// with the database behind the library's back: an SQLite file, or a PostgreSQL database when
/// `location` is a connection URI.
class RawDb {
 public:
  explicit RawDb(const std::filesystem::path& location) {
    if (IsPostgresUri(location.string())) {
      pg_ = PQconnectdb(location.c_str());
      EXPECT_EQ(PQstatus(pg_), CONNECTION_OK) << PQerrorMessage(pg_);
      PQclear(PQexec(pg_, "SET client_min_messages = warning"));
      return;
    }
    EXPECT_EQ(sqlite3_open(location.c_str(), &db_), SQLITE_OK);
    sqlite3_busy_timeout(db_, 5000);
  }
  ~RawDb() {
    if (pg_) PQfinish(pg_);
    sqlite3_close(db_);
  }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  void Exec(const std::string& sql) {
    if (pg_) {
      PGresult* result = PQexec(pg_, sql.c_str());
      const auto status = PQresultStatus(result);
      EXPECT_TRUE(status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)
          << sql << ": " << PQresultErrorMessage(result);
      PQclear(result);
      return;
    }
    char* error = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (error ? error : "");
    sqlite3_free(error);
  }

  /// All rows of `sql`, each column as text ("NULL" for NULL), columns joined by '|'.
  std::vector<std::string> Query(const std::string& sql) {
    std::vector<std::string> rows;
    if (pg_) {
      PGresult* result = PQexec(pg_, sql.c_str());
      EXPECT_EQ(PQresultStatus(result), PGRES_TUPLES_OK) << sql << ": " << PQresultErrorMessage(result);
      for (int r = 0; r < PQntuples(result); ++r) {
        std::string row;
        for (int c = 0; c < PQnfields(result); ++c) {
          if (c) row += '|';
          row += PQgetisnull(result, r, c) ? "NULL" : PQgetvalue(result, r, c);
        }
        rows.push_back(row);
      }
      PQclear(result);
      return rows;
    }
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db_);
    while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
      std::string row;
      for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
        if (i) row += '|';
        const auto* text = sqlite3_column_text(stmt, i);
        row += text ? reinterpret_cast<const char*>(text) : "NULL";
      }
      rows.push_back(row);
    }
    sqlite3_finalize(stmt);
    return rows;
  }

  /// The single value of a one-row, one-column query.
  std::string Scalar(const std::string& sql) {
    const auto rows = Query(sql);
    EXPECT_EQ(rows.size(), 1u) << sql;
    return rows.empty() ? std::string() : rows.front();
  }

  /// The SQLite connection (null for PostgreSQL).
  sqlite3* get() { return db_; }

 private:
  sqlite3* db_ = nullptr;
  PGconn* pg_ = nullptr;
};

/// A RunInfo with every field set to a distinctive value, for the calling process.
inline RunInfo SampleRunInfo(const std::string& recipe = "voxceleb/xvector",
                             const std::string& config = "net") {
  RunInfo info;
  info.recipe = recipe;
  info.config = config;
  info.parent_chain = {"aug", "fe"};
  info.settings_json = R"({"network":{"epochs":3}})";
  info.settings_hash = "a1b2c3";
  info.command_line = "asvrun voxceleb/xvector net --set network.epochs=3";
  FillCurrentProcess(&info);
  info.gpu_ids = {0, 2, 3};
  info.world_size = 3;
  info.code_version = "v0.1.0-5-gdeadbee";
  info.output_folder = "/tmp/out";
  return info;
}

/// The bytes of `path` ("" when missing), to show that a file was not changed.
inline std::string FileBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

/// Outcome of RunAsUnprivileged: the child's exit status and what it wrote to `report`.
struct ChildOutcome {
  int status = -1;
  std::string report;
};

/// Runs `body` in a forked child whose permissions the file system enforces: as this user when
/// it is not root, else after dropping to user and group `nobody` (65534), since permission bits
/// do not stop root. `body` returns the child's exit status and may append text to its argument.
/// Returns nullopt (the caller skips) when root cannot drop privileges here. No SQLite connection
/// may be open in the parent across the fork.
inline std::optional<ChildOutcome> RunAsUnprivileged(const std::function<int(std::string*)>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return std::nullopt;
  const bool root = ::geteuid() == 0;
  const pid_t child = ::fork();
  if (child < 0) return std::nullopt;
  if (child == 0) {
    ::close(fds[0]);
    if (root && (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0)) {
      ::_exit(100);
    }
    std::string report;
    int code = 0;
    try {
      code = body(&report);
    } catch (const std::exception& e) {
      report += std::string("exception: ") + e.what();
      code = 99;
    }
    const char* data = report.data();
    std::size_t left = report.size();
    while (left > 0) {
      const ssize_t n = ::write(fds[1], data, left);
      if (n <= 0) break;
      data += n;
      left -= static_cast<std::size_t>(n);
    }
    ::_exit(code);
  }
  ::close(fds[1]);
  ChildOutcome outcome;
  std::array<char, 4096> buffer;
  for (ssize_t n; (n = ::read(fds[0], buffer.data(), buffer.size())) > 0;) outcome.report.append(buffer.data(), n);
  ::close(fds[0]);
  int status = 0;
  if (::waitpid(child, &status, 0) != child || !WIFEXITED(status)) return ChildOutcome{-1, outcome.report};
  outcome.status = WEXITSTATUS(status);
  if (outcome.status == 100) return std::nullopt;
  return outcome;
}

}  // namespace asv::db::testing

/// Expects `statement` to throw `exception` whose what() contains every string in the braces.
#define ASV_EXPECT_THROW_CONTAINS(statement, exception, ...)                              \
  do {                                                                                   \
    try {                                                                                \
      statement;                                                                         \
      ADD_FAILURE() << "expected " #exception " from " #statement;                       \
    } catch (const exception& e) {                                                       \
      for (const std::string& part : std::vector<std::string>{__VA_ARGS__}) {            \
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos)                   \
            << "message '" << e.what() << "' lacks '" << part << "'";                    \
      }                                                                                  \
    }                                                                                    \
  } while (false)
