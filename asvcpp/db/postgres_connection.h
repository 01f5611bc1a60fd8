// A connection to a PostgreSQL server holding an experiment database (libpq), and what names one.
//
//   asv::db::PostgresConnection connection("postgresql://asv@db.cluster:5432/experiments");
//   asv::db::Statement(connection, "SELECT id FROM runs WHERE recipe = :recipe").Bind(":recipe", r);
//
// A statement's ":name" and "?N" parameters become PostgreSQL's "$N" (numbered as SQLite numbers
// them) and run with PQexecParams, integers as int8, doubles as float8 and text as text (NULL with
// the type the server infers). Results come back as text and are parsed by the getters.
//
// Errors: PostgresError (a StatementError) carries the SQLSTATE. busy() is true for a
// serialization failure (40001), a deadlock (40P01) and a lock not available (55P03), full() for a
// full disk (53100). A connection the server dropped (the server stopped or restarted) fails every
// statement with PostgresError "no connection to the PostgreSQL server" (SQLSTATE 08006, or the
// server's shutdown code 57P01): the open transaction is lost, never half-committed. It is
// reset (reconnected) only when the next transaction begins (Exec of "BEGIN ...").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "asvcpp/db/connection.h"
#include "asvcpp/db/location.h"
#include "asvcpp/db/statement.h"

struct pg_conn;

namespace asv::db {

/// A PostgreSQL statement or call failed.
class PostgresError : public StatementError {
 public:
  /// `sqlstate`: the five-character SQLSTATE ("" when the server sent none); `detail`: the
  /// server's or libpq's message; `sql`: the statement, "" when not relevant.
  PostgresError(std::string sqlstate, const std::string& detail, std::string_view sql = {});
  const std::string& sqlstate() const noexcept { return sqlstate_; }
  bool busy() const noexcept override;
  bool full() const noexcept override;

 private:
  std::string sqlstate_;
};

/// One libpq connection. Not copyable.
class PostgresConnection final : public Connection {
 public:
  /// Connects to `uri` (a libpq connection URI, e.g. postgresql://user@host:port/dbname; libpq's
  /// environment variables such as PGPASSWORD and the ~/.pgpass file apply). Notices are not
  /// printed. Throws DbError naming the URI without its password and libpq's reason when the
  /// server cannot be reached or refuses the login.
  explicit PostgresConnection(const std::string& uri);
  ~PostgresConnection() override;
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  const Dialect& dialect() const override { return PostgresDialect(); }
  std::unique_ptr<StatementBackend> Prepare(std::string_view sql) override;
  void Exec(std::string_view sql) override;
  std::int64_t Changes() const override { return changes_; }
  bool InTransaction() const override;
  void RollbackQuietly() noexcept override;

  /// The libpq connection. Throws PostgresError (08006) when the server dropped it.
  pg_conn* Ready();
  /// Records the row count of the last INSERT, UPDATE or DELETE (for Changes()).
  void set_changes(std::int64_t changes) { changes_ = changes; }

 private:
  pg_conn* conn_ = nullptr;
  std::int64_t changes_ = 0;
};

}  // namespace asv::db
