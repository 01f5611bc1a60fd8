// Helpers shared by the experiment-database tests.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "asvcpp/db/database.h"

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

/// A plain sqlite3 connection, as a user of the `sqlite3` CLI would have, to inspect or tamper
/// with the file behind the library's back.
class RawDb {
 public:
  explicit RawDb(const std::filesystem::path& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    sqlite3_busy_timeout(db_, 5000);
  }
  ~RawDb() { sqlite3_close(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  void Exec(const std::string& sql) {
    char* error = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (error ? error : "");
    sqlite3_free(error);
  }

  /// All rows of `sql`, each column as text ("NULL" for NULL), columns joined by '|'.
  std::vector<std::string> Query(const std::string& sql) {
    std::vector<std::string> rows;
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

  sqlite3* get() { return db_; }

 private:
  sqlite3* db_ = nullptr;
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
