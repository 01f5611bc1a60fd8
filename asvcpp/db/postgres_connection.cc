// PostgresConnection and its statements: the layer over libpq that every query of a PostgreSQL
// experiment database goes through (see postgres_connection.h).
#include "asvcpp/db/postgres_connection.h"

#include <fmt/format.h>
#include <libpq-fe.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "asvcpp/base/error.h"

namespace asv::db {
namespace {

// Type OIDs of PostgreSQL's built-in types (pg_type.h), the types parameters are sent as.
constexpr Oid kInt8Oid = 20;
constexpr Oid kTextOid = 25;
constexpr Oid kFloat8Oid = 701;

bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string TrimmedMessage(const char* message) {
  std::string text = message ? message : "";
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

[[noreturn]] void ThrowConnectionLost(pg_conn* conn, std::string_view sql) {
  throw PostgresError("08006",
                      fmt::format("no connection to the PostgreSQL server ({})", TrimmedMessage(PQerrorMessage(conn))),
                      sql);
}

// Throws PostgresError for a failed result (which it clears); returns the result otherwise.
PGresult* Check(pg_conn* conn, PGresult* result, std::string_view sql) {
  const ExecStatusType status = result ? PQresultStatus(result) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY) return result;
  // Copied before PQclear, which frees the memory the field points into.
  const char* field = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  const std::string state = field ? field : "";
  std::string message = TrimmedMessage(result ? PQresultErrorMessage(result) : PQerrorMessage(conn));
  PQclear(result);
  if (PQstatus(conn) == CONNECTION_BAD) {
    throw PostgresError(state.empty() ? "08006" : state,
                        fmt::format("no connection to the PostgreSQL server ({})", message), sql);
  }
  throw PostgresError(state, message, sql);
}

// A statement: the SQL with its parameters renumbered as $N, the bound values, and the result of
// its last run.
class PostgresStatement final : public StatementBackend {
 public:
  PostgresStatement(PostgresConnection& connection, std::string_view sql) : connection_(connection) {
    Translate(sql);
    values_.assign(static_cast<std::size_t>(count_), std::nullopt);
    types_.assign(static_cast<std::size_t>(count_), 0);
  }
  ~PostgresStatement() override { PQclear(result_); }
  PostgresStatement(const PostgresStatement&) = delete;
  PostgresStatement& operator=(const PostgresStatement&) = delete;

  void BindInt(int index, std::int64_t value) override { Set(index, std::to_string(value), kInt8Oid); }
  void BindReal(int index, double value) override { Set(index, fmt::format("{}", value), kFloat8Oid); }
  void BindText(int index, std::string_view value) override { Set(index, std::string(value), kTextOid); }
  void BindNull(int index) override {
    CheckIndex(index);
    values_[static_cast<std::size_t>(index - 1)].reset();
    types_[static_cast<std::size_t>(index - 1)] = 0;
  }
  int ParameterIndex(const char* name) const override {
    const auto found = names_.find(name);
    return found == names_.end() ? 0 : found->second;
  }
  bool Step() override {
    if (result_ == nullptr) {
      pg_conn* conn = connection_.Ready();
      std::vector<const char*> values;
      for (const auto& value : values_) values.push_back(value ? value->c_str() : nullptr);
      result_ = Check(conn,
                      PQexecParams(conn, sql_.c_str(), count_, types_.data(), values.data(), nullptr, nullptr, 0),
                      sql_);
      const char* changed = PQcmdTuples(result_);
      if (changed != nullptr && *changed != '\0') connection_.set_changes(std::strtoll(changed, nullptr, 10));
      row_ = -1;
    }
    ++row_;
    return row_ < PQntuples(result_);
  }
  void Reset() override {
    PQclear(result_);
    result_ = nullptr;
  }
  void ClearBindings() override {
    for (int i = 1; i <= count_; ++i) BindNull(i);
  }
  int ColumnCount() const override { return result_ ? PQnfields(result_) : 0; }
  bool IsNull(int col) const override { return PQgetisnull(result_, row_, col) != 0; }
  std::int64_t Int(int col) const override {
    const char* text = PQgetvalue(result_, row_, col);
    if (text[0] == 't' || text[0] == 'f') return text[0] == 't' ? 1 : 0;  // a boolean column
    return std::strtoll(text, nullptr, 10);
  }
  double Real(int col) const override { return std::strtod(PQgetvalue(result_, row_, col), nullptr); }
  std::string Text(int col) const override {
    return std::string(PQgetvalue(result_, row_, col), static_cast<std::size_t>(PQgetlength(result_, row_, col)));
  }

 private:
  void CheckIndex(int index) const {
    if (index < 1 || index > count_) {
      throw PostgresError("", fmt::format("parameter index {} out of range (1 to {})", index, count_), original_);
    }
  }
  void Set(int index, std::string value, Oid type) {
    CheckIndex(index);
    values_[static_cast<std::size_t>(index - 1)] = std::move(value);
    types_[static_cast<std::size_t>(index - 1)] = type;
  }

  // SQLite's parameter syntax as PostgreSQL's: "?N" is $N; ":name" gets the next number after the
  // largest so far, and the same number wherever it recurs. Literals, quoted names, comments and
  // "::" casts are copied unchanged.
  void Translate(std::string_view sql) {
    original_ = std::string(sql);
    for (std::size_t i = 0; i < sql.size();) {
      const char c = sql[i];
      if (c == '\'' || c == '"') {
        const std::size_t end = sql.find(c, i + 1);
        const std::size_t stop = end == std::string_view::npos ? sql.size() : end + 1;
        sql_.append(sql.substr(i, stop - i));
        i = stop;
      } else if (sql.compare(i, 2, "--") == 0) {
        const std::size_t end = sql.find('\n', i);
        const std::size_t stop = end == std::string_view::npos ? sql.size() : end;
        sql_.append(sql.substr(i, stop - i));
        i = stop;
      } else if (sql.compare(i, 2, "::") == 0) {
        sql_ += "::";
        i += 2;
      } else if (c == ':' && i + 1 < sql.size() &&
                 (std::isalpha(static_cast<unsigned char>(sql[i + 1])) || sql[i + 1] == '_')) {
        std::size_t end = i + 1;
        while (end < sql.size() && IsNameChar(sql[end])) ++end;
        const std::string name(sql.substr(i, end - i));
        auto [it, added] = names_.try_emplace(name, count_ + 1);
        if (added) ++count_;
        sql_ += fmt::format("${}", it->second);
        i = end;
      } else if (c == '?' && i + 1 < sql.size() && std::isdigit(static_cast<unsigned char>(sql[i + 1]))) {
        std::size_t end = i + 1;
        while (end < sql.size() && std::isdigit(static_cast<unsigned char>(sql[end]))) ++end;
        const int number = std::atoi(std::string(sql.substr(i + 1, end - i - 1)).c_str());
        count_ = std::max(count_, number);
        sql_ += fmt::format("${}", number);
        i = end;
      } else {
        sql_ += c;
        ++i;
      }
    }
  }

  PostgresConnection& connection_;
  std::string original_;
  std::string sql_;
  std::map<std::string, int, std::less<>> names_;
  int count_ = 0;
  std::vector<std::optional<std::string>> values_;
  std::vector<Oid> types_;
  PGresult* result_ = nullptr;
  int row_ = -1;
};

void IgnoreNotice(void* /*arg*/, const char* /*message*/) {}

}  // namespace

bool IsPostgresUri(std::string_view location) {
  return location.rfind("postgresql://", 0) == 0 || location.rfind("postgres://", 0) == 0;
}

std::string RedactPassword(std::string_view uri) {
  std::string out(uri);
  const std::size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const std::size_t start = scheme + 3;
    const std::size_t end = out.find_first_of("/?", start);
    const std::size_t at = out.rfind('@', end == std::string::npos ? std::string::npos : end);
    if (at != std::string::npos && at >= start) {
      const std::size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  for (std::size_t key = out.find("password="); key != std::string::npos; key = out.find("password=", key + 1)) {
    const std::size_t value = key + 9;
    const std::size_t end = out.find('&', value);
    out.replace(value, (end == std::string::npos ? out.size() : end) - value, "***");
  }
  return out;
}

PostgresError::PostgresError(std::string sqlstate, const std::string& detail, std::string_view sql)
    : StatementError(sqlstate.empty() ? detail : fmt::format("{} (SQLSTATE {})", detail, sqlstate), sql),
      sqlstate_(std::move(sqlstate)) {}

bool PostgresError::busy() const noexcept {
  return sqlstate_ == "40001" || sqlstate_ == "40P01" || sqlstate_ == "55P03";
}

bool PostgresError::full() const noexcept { return sqlstate_ == "53100"; }

PostgresConnection::PostgresConnection(const std::string& uri) {
  conn_ = PQconnectdb(uri.c_str());
  if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) {
    const std::string reason = conn_ ? TrimmedMessage(PQerrorMessage(conn_)) : "out of memory";
    PQfinish(conn_);
    conn_ = nullptr;
    throw DbError(fmt::format("cannot connect to the PostgreSQL server of {}: {}", RedactPassword(uri), reason));
  }
  PQsetNoticeProcessor(conn_, &IgnoreNotice, nullptr);
}

PostgresConnection::~PostgresConnection() { PQfinish(conn_); }

pg_conn* PostgresConnection::Ready() {
  if (PQstatus(conn_) == CONNECTION_BAD) ThrowConnectionLost(conn_, {});
  return conn_;
}

std::unique_ptr<StatementBackend> PostgresConnection::Prepare(std::string_view sql) {
  return std::make_unique<PostgresStatement>(*this, sql);
}

void PostgresConnection::Exec(std::string_view sql) {
  // A new transaction may start on a fresh connection: nothing of the lost one is half-done.
  if (PQstatus(conn_) == CONNECTION_BAD && sql.rfind("BEGIN", 0) == 0) PQreset(conn_);
  pg_conn* conn = Ready();
  const std::string text(sql);
  PQclear(Check(conn, PQexec(conn, text.c_str()), sql));
}

bool PostgresConnection::InTransaction() const {
  const PGTransactionStatusType status = PQtransactionStatus(conn_);
  return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE;
}

void PostgresConnection::RollbackQuietly() noexcept {
  if (InTransaction()) PQclear(PQexec(conn_, "ROLLBACK"));
}

}  // namespace asv::db
