// The experiment-database tests run against both stores: a fixture whose parameter is the store
// (SQLite or PostgreSQL) and that yields a fresh database of it for every test.
//
//   class DbFooTest : public testing::StoreTest {};
//   TEST_P(DbFooTest, Bar) { Database db(location()); ... }
//   ASV_INSTANTIATE_STORES(DbFooTest);           // Stores/DbFooTest.Bar/SQLite, .../PostgreSQL
//
// SQLite: experiments.db in a fresh folder. PostgreSQL: a fresh database (CREATE DATABASE) on the
// test server, dropped again after the test. The server is, in this order: the one in
// $ASV_TEST_POSTGRES_URI; the one of the ctest fixture `postgres_server`
// (tests/tools/postgres/ctest_fixture.sh, state in <build>/postgres_test_server); else one this
// process starts with tests/tools/postgres/start_server.sh and stops at exit. When none can run
// (no PostgreSQL 15 binaries, no user to run them), the PostgreSQL tests skip with the reason.
#pragma once

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/asvcpp/db/db_test_util.h"
#include "tests/build_paths.h"

namespace asv::db::testing {

enum class Store { kSqlite, kPostgres };

inline std::string StoreName(const ::testing::TestParamInfo<Store>& info) {
  return info.param == Store::kSqlite ? "SQLite" : "PostgreSQL";
}

/// The test server's admin URI (database `postgres`), or "" with `*skip` set to why there is none.
inline std::string PostgresServerUri(std::string* skip) {
  struct Server {
    std::string uri;
    std::string reason;
    std::string own_folder;  // a server this process started
    ~Server() {
      if (!own_folder.empty()) {
        const std::string stop =
            std::string(ASV_SOURCE_DIR) + "/tests/tools/postgres/stop_server.sh '" + own_folder + "'";
        [[maybe_unused]] const int rc = std::system(stop.c_str());
      }
    }
  };
  static Server server = [] {
    Server s;
    if (const char* env = std::getenv("ASV_TEST_POSTGRES_URI"); env != nullptr && *env != '\0') {
      s.uri = env;
      return s;
    }
    const std::filesystem::path state = std::filesystem::path(ASV_BINARY_DIR) / "postgres_test_server";
    const auto read = [](const std::filesystem::path& file) {
      std::ifstream in(file);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
      return text;
    };
    if (std::filesystem::exists(state / "uri")) {
      s.uri = read(state / "uri");
      return s;
    }
    if (std::filesystem::exists(state / "skip")) {
      s.reason = read(state / "skip");
      return s;
    }
    const std::string start = std::string(ASV_SOURCE_DIR) + "/tests/tools/postgres/start_server.sh 2>&1";
    FILE* pipe = ::popen(start.c_str(), "r");
    std::string out;
    if (pipe != nullptr) {
      char buffer[4096];
      for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
    }
    const int status = pipe ? ::pclose(pipe) : -1;
    const int code = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::vector<std::string> lines;
    std::istringstream split(out);
    for (std::string line; std::getline(split, line);) lines.push_back(line);
    if (code == 0 && lines.size() >= 2) {
      s.own_folder = lines[lines.size() - 2];
      s.uri = lines.back();
    } else if (code == 77) {
      s.reason = out;
    } else {
      s.reason = "start_server.sh failed (status " + std::to_string(code) + "): " + out;
    }
    return s;
  }();
  if (server.uri.empty()) *skip = server.reason;
  return server.uri;
}

/// `uri` with its database name replaced by `database`.
inline std::string WithDatabase(const std::string& uri, const std::string& database) {
  const std::size_t authority = uri.find("://") + 3;
  const std::size_t slash = uri.find('/', authority);
  const std::size_t query = uri.find('?', authority);
  const std::string tail = query == std::string::npos ? "" : uri.substr(query);
  return uri.substr(0, slash == std::string::npos ? std::min(query, uri.size()) : slash) + "/" + database + tail;
}

/// Runs `sql` on `uri` (one connection); returns libpq's error text, "" on success.
inline std::string PostgresExec(const std::string& uri, const std::string& sql) {
  PGconn* conn = PQconnectdb(uri.c_str());
  PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);  // "does not exist, skipping"
  std::string error;
  if (PQstatus(conn) != CONNECTION_OK) {
    error = PQerrorMessage(conn);
  } else {
    PGresult* result = PQexec(conn, sql.c_str());
    const auto status = PQresultStatus(result);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) error = PQresultErrorMessage(result);
    PQclear(result);
  }
  PQfinish(conn);
  return error;
}

/// A fixture parameterised by the store; see the top of this file.
class StoreTest : public ::testing::TestWithParam<Store> {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<ScopedDir>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    if (postgres()) {
      std::string skip;
      server_ = PostgresServerUri(&skip);
      if (server_.empty()) GTEST_SKIP() << "no PostgreSQL test server: " << skip;
    }
    location_ = NewLocation();
  }
  void TearDown() override {
    for (const std::string& name : databases_) {
      PostgresExec(server_, "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    }
    dir_.reset();
  }

  bool postgres() const { return GetParam() == Store::kPostgres; }
  /// The fresh database of this test: a file path or a connection URI.
  const std::string& location() const { return location_; }
  /// Another fresh, empty database of this test (a path or URI; nothing exists there yet).
  std::string NewLocation() { return NewLocation(GetParam()); }
  /// A fresh, empty database of `store` (a PostgreSQL one: the test skips when there is no server).
  std::string NewLocation(Store store) {
    const std::size_t n = made_++;
    if (store == Store::kSqlite) {
      return (dir_->path() / (n == 0 ? "experiments.db" : "store" + std::to_string(n) + "/experiments.db")).string();
    }
    if (server_.empty()) {
      std::string skip;
      server_ = PostgresServerUri(&skip);
      if (server_.empty()) {
        ADD_FAILURE() << "no PostgreSQL test server: " << skip;
        return {};
      }
    }
    const std::string name = "asv_test_" + std::to_string(::getpid()) + "_" + std::to_string(n);
    const std::string error = PostgresExec(server_, "CREATE DATABASE " + name + " TEMPLATE template0");
    EXPECT_EQ(error, "") << "CREATE DATABASE " << name;
    databases_.push_back(name);
    return WithDatabase(server_, name);
  }
  const ScopedDir& dir() const { return *dir_; }

 private:
  std::unique_ptr<ScopedDir> dir_;
  std::string server_;
  std::string location_;
  std::vector<std::string> databases_;
  std::size_t made_ = 0;
};

}  // namespace asv::db::testing

#define ASV_INSTANTIATE_STORES(suite)                                                                         \
  INSTANTIATE_TEST_SUITE_P(Stores, suite,                                                                     \
                           ::testing::Values(::asv::db::testing::Store::kSqlite,                              \
                                             ::asv::db::testing::Store::kPostgres),                           \
                           ::asv::db::testing::StoreName)
#define ASV_INSTANTIATE_SQLITE_ONLY(suite)                                                                    \
  INSTANTIATE_TEST_SUITE_P(Sqlite, suite, ::testing::Values(::asv::db::testing::Store::kSqlite),             \
                           ::asv::db::testing::StoreName)
