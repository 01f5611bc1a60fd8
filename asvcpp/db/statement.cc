// Statement and the errors of both stores, and SqliteConnection: the thin layer over SQLite's C
// API that every query of an SQLite experiment database goes through (see statement.h and
// connection.h).
#include "asvcpp/db/statement.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <utility>

#include "asvcpp/db/connection.h"

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

// A statement of an SQLite connection.
class SqliteStatement final : public StatementBackend {
 public:
  SqliteStatement(sqlite3* db, std::string_view sql) : db_(db), sql_(sql) {
    const int rc = sqlite3_prepare_v2(db, sql_.data(), static_cast<int>(sql_.size()), &stmt_, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(stmt_);
      stmt_ = nullptr;
      Fail(rc, /*with_sql=*/true);
    }
  }
  ~SqliteStatement() override { sqlite3_finalize(stmt_); }
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  void BindInt(int index, std::int64_t value) override { CheckBind(sqlite3_bind_int64(stmt_, index, value)); }
  void BindReal(int index, double value) override { CheckBind(sqlite3_bind_double(stmt_, index, value)); }
  void BindText(int index, std::string_view value) override {
    CheckBind(sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  }
  void BindNull(int index) override { CheckBind(sqlite3_bind_null(stmt_, index)); }
  int ParameterIndex(const char* name) const override { return sqlite3_bind_parameter_index(stmt_, name); }
  bool Step() override {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    Fail(rc, /*with_sql=*/false);
  }
  void Reset() override { sqlite3_reset(stmt_); }
  void ClearBindings() override { sqlite3_clear_bindings(stmt_); }
  int ColumnCount() const override { return sqlite3_column_count(stmt_); }
  bool IsNull(int col) const override { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::int64_t Int(int col) const override { return sqlite3_column_int64(stmt_, col); }
  double Real(int col) const override { return sqlite3_column_double(stmt_, col); }
  std::string Text(int col) const override {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return text ? std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col))) : std::string();
  }

 private:
  [[noreturn]] void Fail(int rc, bool with_sql) const {
    throw SqliteError(rc, DescribeSqlite(sqlite3_errmsg(db_), rc),
                      with_sql ? std::string_view(sql_) : std::string_view());
  }
  void CheckBind(int rc) const {
    if (rc != SQLITE_OK) Fail(rc, /*with_sql=*/true);
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
};

}  // namespace

StatementError::StatementError(const std::string& detail, std::string_view sql)
    : DbError(ErrorText(detail, sql)), detail_(detail) {}

SqliteError::SqliteError(int sqlite_code, const std::string& detail, std::string_view sql)
    : StatementError(detail, sql), sqlite_code_(sqlite_code) {}

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

SqliteConnection::~SqliteConnection() { sqlite3_close_v2(db_); }

std::unique_ptr<StatementBackend> SqliteConnection::Prepare(std::string_view sql) {
  return std::make_unique<SqliteStatement>(db_, sql);
}

void SqliteConnection::Exec(std::string_view sql) { db::Exec(db_, sql); }

std::int64_t SqliteConnection::Changes() const { return sqlite3_changes64(db_); }

bool SqliteConnection::InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }

void SqliteConnection::RollbackQuietly() noexcept {
  if (InTransaction()) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

Statement::Statement(sqlite3* db, std::string_view sql)
    : backend_(std::make_unique<SqliteStatement>(db, sql)), sql_(sql) {}

Statement::Statement(Connection& connection, std::string_view sql)
    : backend_(connection.Prepare(sql)), sql_(sql) {}

Statement::~Statement() = default;
Statement::Statement(Statement&& other) noexcept = default;
Statement& Statement::operator=(Statement&& other) noexcept = default;

Statement& Statement::Bind(int index, std::int64_t value) {
  backend_->BindInt(index, value);
  return *this;
}

Statement& Statement::Bind(int index, double value) {
  if (std::isnan(value)) {
    backend_->BindNull(index);
  } else {
    backend_->BindReal(index, value);
  }
  return *this;
}

Statement& Statement::Bind(int index, std::string_view value) {
  backend_->BindText(index, value);
  return *this;
}

Statement& Statement::BindNull(int index) {
  backend_->BindNull(index);
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

int Statement::ParameterIndex(const char* name) const { return backend_->ParameterIndex(name); }

bool Statement::Step() { return backend_->Step(); }

void Statement::Run() {
  while (Step()) {
  }
}

void Statement::Reset() { backend_->Reset(); }

void Statement::ClearBindings() { backend_->ClearBindings(); }

int Statement::ColumnCount() const { return backend_->ColumnCount(); }

bool Statement::IsNull(int col) const { return backend_->IsNull(col); }

std::int64_t Statement::Int(int col) const { return IsNull(col) ? 0 : backend_->Int(col); }

std::optional<std::int64_t> Statement::OptInt(int col) const {
  if (IsNull(col)) return std::nullopt;
  return backend_->Int(col);
}

double Statement::Real(int col) const {
  return IsNull(col) ? std::numeric_limits<double>::quiet_NaN() : backend_->Real(col);
}

std::optional<double> Statement::OptReal(int col) const {
  if (IsNull(col)) return std::nullopt;
  return backend_->Real(col);
}

std::string Statement::Text(int col) const { return IsNull(col) ? std::string() : backend_->Text(col); }

std::optional<std::string> Statement::OptText(int col) const {
  if (IsNull(col)) return std::nullopt;
  return backend_->Text(col);
}

}  // namespace asv::db
