// Statement and SqliteError: the thin RAII layer over SQLite's C API that every query of the
// experiment database goes through (see statement.h).
#include "asvcpp/db/statement.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <utility>

namespace asv::db {
namespace {

// `sql` on one line (runs of whitespace become one space), cut after kSqlInErrorBytes bytes.
std::string CompactSql(std::string_view sql) {
  std::string compact;
  bool space = false;
  for (const char c : sql) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !compact.empty();
      continue;
    }
    if (space) compact += ' ';
    space = false;
    compact += c;
    if (compact.size() >= kSqlInErrorBytes) {
      compact += " ...";
      break;
    }
  }
  return compact;
}

std::string ErrorText(const std::string& detail, std::string_view sql) {
  return sql.empty() ? detail : fmt::format("{}; SQL: {}", detail, CompactSql(sql));
}

}  // namespace

SqliteError::SqliteError(int sqlite_code, const std::string& detail, std::string_view sql)
    : DbError(ErrorText(detail, sql)), sqlite_code_(sqlite_code), detail_(detail) {}

bool SqliteError::busy() const noexcept {
  const int primary = sqlite_code_ & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

bool SqliteError::full() const noexcept { return (sqlite_code_ & 0xff) == SQLITE_FULL; }

std::string DescribeSqlite(std::string_view message, int code) {
  const std::string_view generic = sqlite3_errstr(code);
  return message == generic ? std::string(message) : fmt::format("{} ({})", message, generic);
}

void Exec(sqlite3* db, std::string_view sql) {
  const std::string text(sql);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, text.c_str(), nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    const std::string message = error ? error : sqlite3_errmsg(db);
    sqlite3_free(error);
    throw SqliteError(rc, DescribeSqlite(message, rc), sql);
  }
}

Statement::Statement(sqlite3* db, std::string_view sql) : db_(db), sql_(sql) {
  const int rc =
      sqlite3_prepare_v2(db, sql_.data(), static_cast<int>(sql_.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
    Fail(rc, /*with_sql=*/true);
  }
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)), sql_(std::move(other.sql_)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    sql_ = std::move(other.sql_);
  }
  return *this;
}

void Statement::Fail(int rc, bool with_sql) const {
  throw SqliteError(rc, DescribeSqlite(sqlite3_errmsg(db_), rc),
                    with_sql ? std::string_view(sql_) : std::string_view());
}

void Statement::CheckBind(int rc) const {
  if (rc != SQLITE_OK) Fail(rc, /*with_sql=*/true);
}

Statement& Statement::Bind(int index, std::int64_t value) {
  CheckBind(sqlite3_bind_int64(stmt_, index, value));
  return *this;
}

Statement& Statement::Bind(int index, double value) {
  CheckBind(std::isnan(value) ? sqlite3_bind_null(stmt_, index)
                              : sqlite3_bind_double(stmt_, index, value));
  return *this;
}

Statement& Statement::Bind(int index, std::string_view value) {
  CheckBind(sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT,
                                SQLITE_UTF8));
  return *this;
}

Statement& Statement::BindNull(int index) {
  CheckBind(sqlite3_bind_null(stmt_, index));
  return *this;
}

Statement& Statement::BindOrNull(const char* name, const std::string& value) {
  if (const int index = ParameterIndex(name)) {
    if (value.empty()) {
      BindNull(index);
    } else {
      Bind(index, value);
    }
  }
  return *this;
}

int Statement::ParameterIndex(const char* name) const {
  return sqlite3_bind_parameter_index(stmt_, name);
}

bool Statement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Fail(rc, /*with_sql=*/false);
}

void Statement::Run() {
  while (Step()) {
  }
}

void Statement::Reset() { sqlite3_reset(stmt_); }

void Statement::ClearBindings() { sqlite3_clear_bindings(stmt_); }

int Statement::ColumnCount() const { return sqlite3_column_count(stmt_); }

bool Statement::IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

std::int64_t Statement::Int(int col) const { return sqlite3_column_int64(stmt_, col); }

std::optional<std::int64_t> Statement::OptInt(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Int(col);
}

double Statement::Real(int col) const {
  return IsNull(col) ? std::numeric_limits<double>::quiet_NaN() : sqlite3_column_double(stmt_, col);
}

std::optional<double> Statement::OptReal(int col) const {
  if (IsNull(col)) return std::nullopt;
  return sqlite3_column_double(stmt_, col);
}

std::string Statement::Text(int col) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  return text ? std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)))
              : std::string();
}

std::optional<std::string> Statement::OptText(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Text(col);
}

}  // namespace asv::db
