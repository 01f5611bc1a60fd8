// The SQL that differs between the experiment database's two stores, SQLite and PostgreSQL, in one
// place. Every other query of Database (database_*.cc) is written once, in SQL both accept:
// parameters as ":name" (PostgresConnection numbers them), `INSERT ... RETURNING id` instead of
// sqlite3_last_insert_rowid, `INSERT ... ON CONFLICT ... DO UPDATE` for upserts, and an alias for
// every subquery in FROM, and CAST(:x AS TEXT) IS NULL (or BIGINT) where a parameter is tested for
// NULL, since PostgreSQL cannot infer the type of a NULL parameter from IS NULL alone.
//
// The migrations of schema.h are written in SQLite's DDL; TranslateDdl turns them into
// PostgreSQL's: INTEGER becomes BIGINT (SQLite's integers are 64-bit), INTEGER PRIMARY KEY an
// identity column, REAL DOUBLE PRECISION (SQLite's REAL is 8 bytes, PostgreSQL's 4) and TEXT
// `TEXT COLLATE "C"`, so that text sorts by its bytes as in SQLite whatever the server's locale.
#pragma once

#include <string>
#include <string_view>

namespace asv::db {

/// Which store a connection talks to.
enum class Engine { kSqlite, kPostgres };

/// The SQL of one store where the two differ.
struct Dialect {
  Engine engine;
  /// The name of the store in messages: "SQLite" or "PostgreSQL".
  std::string_view name;
  /// Starts a write transaction that excludes every other writer until COMMIT (SQLite: BEGIN
  /// IMMEDIATE; PostgreSQL: BEGIN and a transaction-scoped advisory lock, so that a look-up and an
  /// insert such as Database::TryBeginRun's are atomic as on SQLite).
  std::string_view begin_write;
  /// Starts a read transaction with one snapshot for all its statements (SQLite: BEGIN;
  /// PostgreSQL: BEGIN ISOLATION LEVEL REPEATABLE READ).
  std::string_view begin_read;

  /// `sqlite_ddl` (a migration of schema.h) in this store's DDL (see the top of this file).
  std::string TranslateDdl(std::string_view sqlite_ddl) const;
  /// "INDEXED BY `index`" on SQLite (forces the planner's choice), "" on PostgreSQL.
  std::string IndexedBy(std::string_view index) const;
};

/// The dialects of the two stores.
const Dialect& SqliteDialect();
const Dialect& PostgresDialect();

}  // namespace asv::db
