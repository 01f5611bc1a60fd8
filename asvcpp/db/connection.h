// One connection to an experiment database's store, SQLite or PostgreSQL: what Database needs of
// either (prepare a statement, run SQL, count changed rows, know whether a transaction is open)
// and the dialect of its SQL. Database (database.h) writes every query once against this
// interface; SqliteConnection and PostgresConnection (postgres_connection.h) implement it.
//
// A Connection is used from one thread at a time and never across fork().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "asvcpp/db/dialect.h"
#include "asvcpp/db/statement.h"

struct sqlite3;

namespace asv::db {

/// A connection to one store.
class Connection {
 public:
  virtual ~Connection() = default;
  /// The SQL that differs between the stores (dialect.h).
  virtual const Dialect& dialect() const = 0;
  /// A statement of `sql` (parameters ":name" or "?N"); see Statement. Throws StatementError.
  virtual std::unique_ptr<StatementBackend> Prepare(std::string_view sql) = 0;
  /// Runs `sql`, one or more statements separated by ';', discarding rows. Throws StatementError
  /// (with the SQL) on the first failure.
  virtual void Exec(std::string_view sql) = 0;
  /// Rows inserted, updated or deleted by the last INSERT, UPDATE or DELETE that ran.
  virtual std::int64_t Changes() const = 0;
  /// True while a transaction is open (between BEGIN and COMMIT or ROLLBACK).
  virtual bool InTransaction() const = 0;
  /// Ends an open transaction with ROLLBACK, ignoring errors (the connection may be lost).
  virtual void RollbackQuietly() noexcept = 0;
};

/// A connection to an SQLite file, owning `db` (closed with sqlite3_close_v2).
class SqliteConnection final : public Connection {
 public:
  explicit SqliteConnection(sqlite3* db) : db_(db) {}
  ~SqliteConnection() override;
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  const Dialect& dialect() const override { return SqliteDialect(); }
  std::unique_ptr<StatementBackend> Prepare(std::string_view sql) override;
  void Exec(std::string_view sql) override;
  std::int64_t Changes() const override;
  bool InTransaction() const override;
  void RollbackQuietly() noexcept override;

  sqlite3* get() const { return db_; }

 private:
  sqlite3* db_;
};

}  // namespace asv::db
