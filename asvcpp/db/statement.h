// A prepared SQLite statement (RAII over sqlite3_stmt) and the error it throws.
//
//   asv::db::Statement stmt(db, "SELECT id, name FROM stages WHERE run_id = :run_id AND stage = ?2");
//   stmt.Bind(":run_id", run_id).Bind(2, 5);
//   while (stmt.Step()) rows.push_back({stmt.Int(0), stmt.Text(1)});
//   stmt.Reset();                      // step it again, with the same or new bindings
//
// Parameters are bound by 1-based index or by name (":name"); binding a name the statement does
// not use does nothing, so one list of bindings can serve several variants of a query. A NaN
// double and an empty optional bind NULL; Real() reads NULL back as NaN, the Opt* getters as
// nullopt. Every failure throws SqliteError, which keeps SQLite's (extended) result code so that a
// caller can tell a busy or full database from other errors; errors of prepare and bind name the
// statement's SQL (whitespace collapsed, cut after kSqlInErrorBytes bytes).
//
// A Statement belongs to the connection it was prepared on: use both from one thread at a time and
// destroy the statement before closing the connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "asvcpp/base/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace asv::db {

/// An SQLite call failed. what() is "<SQLite's message> (<generic text of the code>)", followed by
/// "; SQL: <statement>" when the failure is tied to one statement's text (prepare, bind).
class SqliteError : public DbError {
 public:
  /// `sqlite_code`: SQLite's result code (extended when the connection reports extended codes);
  /// `detail`: the message without the SQL; `sql`: the statement's SQL, "" when not relevant.
  SqliteError(int sqlite_code, const std::string& detail, std::string_view sql = {});

  /// SQLite's result code, e.g. SQLITE_BUSY (5) or SQLITE_FULL (13) or an extended code.
  int sqlite_code() const noexcept { return sqlite_code_; }
  /// The message without the SQL.
  const std::string& detail() const noexcept { return detail_; }
  /// True for SQLITE_BUSY and SQLITE_LOCKED (and their extended codes): worth retrying.
  bool busy() const noexcept;
  /// True for SQLITE_FULL (the database or the disk is full).
  bool full() const noexcept;

 private:
  int sqlite_code_;
  std::string detail_;
};

/// How many bytes of a statement's SQL (whitespace collapsed) an error message quotes.
inline constexpr std::size_t kSqlInErrorBytes = 120;

/// "`message` (`code`'s generic text)", or just `message` when both say the same.
std::string DescribeSqlite(std::string_view message, int code);

/// Runs `sql`, one or more statements separated by ';' whose rows (if any) are discarded.
/// Throws SqliteError (with the SQL) on the first failure.
void Exec(sqlite3* db, std::string_view sql);

/// One prepared statement of connection `db`. Movable, not copyable.
class Statement {
 public:
  /// Prepares the first statement of `sql` on `db` (which must outlive this object). Throws
  /// SqliteError naming the SQL if it does not compile (syntax error, no such table, ...) or the
  /// schema cannot be read (busy, not a database).
  Statement(sqlite3* db, std::string_view sql);
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  /// Binds parameter `index` (1-based, as SQLite counts; ?NNN sets the number). A NaN double, an
  /// empty optional and std::nullopt bind NULL; text is copied. Returns *this for chaining. Throws
  /// SqliteError naming the SQL when `index` is not a parameter of the statement (SQLITE_RANGE).
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
  /// Throws SqliteError (busy, constraint violation, full disk, read-only database, ...).
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
  /// The connection the statement belongs to.
  sqlite3* db() const { return db_; }

 private:
  [[noreturn]] void Fail(int rc, bool with_sql) const;
  void CheckBind(int rc) const;

  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
};

}  // namespace asv::db
