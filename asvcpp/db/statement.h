// A prepared statement of either store (SQLite: RAII over sqlite3_stmt; PostgreSQL: a libpq query
// run with its parameters, see postgres_connection.h) and the errors it throws.
//
//   asv::db::Statement stmt(connection, "SELECT id, name FROM stages WHERE run_id = :run_id AND stage = ?2");
//   stmt.Bind(":run_id", run_id).Bind(2, 5);
//   while (stmt.Step()) rows.push_back({stmt.Int(0), stmt.Text(1)});
//   stmt.Reset();                      // step it again, with the same or new bindings
//
// Parameters are bound by 1-based index or by name (":name"); binding a name the statement does
// not use does nothing, so one list of bindings can serve several variants of a query. A NaN
// double and an empty optional bind NULL; Real() reads NULL back as NaN, the Opt* getters as
// nullopt. Every failure throws a StatementError (SqliteError or PostgresError), which says whether
// the store was busy (worth retrying) or full; SqliteError keeps SQLite's (extended) result code,
// PostgresError the SQLSTATE. Errors of prepare and bind name the statement's SQL (whitespace
// collapsed, cut after kSqlInErrorBytes bytes). The SQL is written once for both stores; what
// differs between them is in dialect.h.
//
// A Statement belongs to the connection it was prepared on: use both from one thread at a time and
// destroy the statement before closing the connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <memory>

#include "asvcpp/base/error.h"

struct sqlite3;

namespace asv::db {

class Connection;

/// A statement of either store failed. what() is the store's message, followed by
/// "; SQL: <statement>" when the failure is tied to one statement's text.
class StatementError : public DbError {
 public:
  /// `detail`: the message without the SQL; `sql`: the statement's SQL, "" when not relevant.
  StatementError(const std::string& detail, std::string_view sql);
  /// True when another connection held a lock the statement needed: worth retrying.
  virtual bool busy() const noexcept = 0;
  /// True when the database or the disk under it is full.
  virtual bool full() const noexcept = 0;
  /// The message without the SQL.
  const std::string& detail() const noexcept { return detail_; }

 private:
  std::string detail_;
};

/// An SQLite call failed. what() is "<SQLite's message> (<generic text of the code>)", followed by
/// "; SQL: <statement>" when the failure is tied to one statement's text (prepare, bind).
class SqliteError : public StatementError {
 public:
  /// `sqlite_code`: SQLite's result code (extended when the connection reports extended codes);
  /// `detail`: the message without the SQL; `sql`: the statement's SQL, "" when not relevant.
  SqliteError(int sqlite_code, const std::string& detail, std::string_view sql = {});

  /// SQLite's result code, e.g. SQLITE_BUSY (5) or SQLITE_FULL (13) or an extended code.
  int sqlite_code() const noexcept { return sqlite_code_; }
  /// True for SQLITE_BUSY and SQLITE_LOCKED (and their extended codes): worth retrying.
  bool busy() const noexcept override;
  /// True for SQLITE_FULL (the database or the disk is full).
  bool full() const noexcept override;

 private:
  int sqlite_code_;
};

/// What a statement does on one store; Statement forwards to it. Implemented by the SQLite and
/// PostgreSQL connections (connection.h); the members behave as Statement's of the same name.
class StatementBackend {
 public:
  virtual ~StatementBackend() = default;
  virtual void BindInt(int index, std::int64_t value) = 0;
  virtual void BindReal(int index, double value) = 0;  ///< Never NaN (Statement binds NULL).
  virtual void BindText(int index, std::string_view value) = 0;
  virtual void BindNull(int index) = 0;
  virtual int ParameterIndex(const char* name) const = 0;
  virtual bool Step() = 0;
  virtual void Reset() = 0;
  virtual void ClearBindings() = 0;
  virtual int ColumnCount() const = 0;
  virtual bool IsNull(int col) const = 0;
  virtual std::int64_t Int(int col) const = 0;
  virtual double Real(int col) const = 0;  ///< Not called for NULL.
  virtual std::string Text(int col) const = 0;
};

/// How many bytes of a statement's SQL (whitespace collapsed) an error message quotes.
inline constexpr std::size_t kSqlInErrorBytes = 120;

/// "`message` (`code`'s generic text)", or just `message` when both say the same.
std::string DescribeSqlite(std::string_view message, int code);

/// Runs `sql`, one or more statements separated by ';' whose rows (if any) are discarded.
/// Throws SqliteError (with the SQL) on the first failure.
void Exec(sqlite3* db, std::string_view sql);

/// One prepared statement of a connection. Movable, not copyable.
class Statement {
 public:
  /// Prepares the first statement of `sql` on SQLite connection `db` (which must outlive this
  /// object). Throws SqliteError naming the SQL if it does not compile (syntax error, no such
  /// table, ...) or the schema cannot be read (busy, not a database).
  Statement(sqlite3* db, std::string_view sql);
  /// Prepares `sql` on `connection` (either store; it must outlive this object). Parameters are
  /// written ":name" or "?N" for both stores. Throws StatementError naming the SQL; PostgreSQL
  /// checks the SQL when the statement first runs (Step), SQLite here.
  Statement(Connection& connection, std::string_view sql);
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  /// Binds parameter `index` (1-based, as SQLite counts; ?NNN sets the number). A NaN double, an
  /// empty optional and std::nullopt bind NULL; text is copied. Returns *this for chaining. Throws
  /// StatementError naming the SQL when `index` is not a parameter of the statement
  /// (SQLite: SQLITE_RANGE).
  Statement& Bind(int index, std::int64_t value);
  Statement& Bind(int index, int value) { return Bind(index, static_cast<std::int64_t>(value)); }
  Statement& Bind(int index, double value);
  Statement& Bind(int index, std::string_view value);
  Statement& Bind(int index, const std::string& value) { return Bind(index, std::string_view(value)); }
  Statement& Bind(int index, const char* value) { return Bind(index, std::string_view(value)); }
  Statement& Bind(int index, std::nullopt_t) { return BindNull(index); }
  template <typename T>
  Statement& Bind(int index, const std::optional<T>& value) {
    return value ? Bind(index, *value) : BindNull(index);
  }
  /// Binds NULL to parameter `index`. Throws SqliteError as Bind.
  Statement& BindNull(int index);

  /// Binds the parameter called `name` (with its prefix, e.g. ":run_id") like Bind(index, value);
  /// does nothing when the statement has no such parameter.
  template <typename T>
  Statement& Bind(const char* name, const T& value) {
    if (const int index = ParameterIndex(name)) Bind(index, value);
    return *this;
  }
  /// Binds NULL for an empty `value`, else the text.
  Statement& BindOrNull(const char* name, const std::string& value);

  /// 1-based index of the parameter called `name` (e.g. ":run_id"); 0 when there is none.
  int ParameterIndex(const char* name) const;

  /// Runs the statement to its next row: true when a row is available (read it with the column
  /// getters), false when the statement is done (Reset() before running it again).
  /// Throws StatementError (busy, constraint violation, full disk, read-only database, lost
  /// connection, ...).
  bool Step();

  /// Steps until done, discarding rows (for INSERT, UPDATE, DELETE and pragmas). Throws as Step.
  void Run();

  /// Makes the statement ready to run again from its start, keeping the bound values (see
  /// ClearBindings). Never throws (an error of the last Step was already thrown there).
  void Reset();

  /// Sets every parameter to NULL.
  void ClearBindings();

  /// Column getters for the current row (after Step() returned true); `col` is 0-based.
  /// Int: 0 for NULL; Real: NaN for NULL; Text: "" for NULL; the Opt* forms give nullopt for NULL.
  int ColumnCount() const;
  bool IsNull(int col) const;
  std::int64_t Int(int col) const;
  std::optional<std::int64_t> OptInt(int col) const;
  double Real(int col) const;
  std::optional<double> OptReal(int col) const;
  std::string Text(int col) const;
  std::optional<std::string> OptText(int col) const;

  /// The SQL the statement was prepared from.
  const std::string& sql() const { return sql_; }

 private:
  std::unique_ptr<StatementBackend> backend_;
  std::string sql_;
};

}  // namespace asv::db
