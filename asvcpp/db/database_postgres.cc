// Opening an experiment database on a PostgreSQL server: the connection, what the database is to
// asvcpp (new, asvcpp's, another application's), and the migrations of schema.h translated by the
// dialect (dialect.h), each in a write transaction that holds the writers' advisory lock, so that
// concurrent openers apply each migration once between them. The schema version and asvcpp's mark
// are the one row of table asvcpp_schema (SQLite keeps them in PRAGMA user_version and
// application_id).
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/db/connection.h"
#include "asvcpp/db/database.h"
#include "asvcpp/db/postgres_connection.h"
#include "asvcpp/db/schema.h"
#include "asvcpp/db/statement.h"

namespace asv::db {
namespace {

enum class PostgresKind { kEmpty, kAsvcpp, kForeign };

// What the connection's current schema is to asvcpp (reads only).
PostgresKind ClassifyPostgres(Connection& conn, std::string* why_foreign) {
  std::vector<std::string> tables;
  Statement names(conn, "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                        "ORDER BY table_name");
  while (names.Step()) tables.push_back(names.Text(0));
  if (tables.empty()) return PostgresKind::kEmpty;
  if (std::find(tables.begin(), tables.end(), "asvcpp_schema") != tables.end()) {
    Statement mark(conn, "SELECT application_id FROM asvcpp_schema");
    const std::int64_t id = mark.Step() ? mark.Int(0) : 0;
    if (id == kApplicationId) return PostgresKind::kAsvcpp;
    *why_foreign = fmt::format("its asvcpp_schema.application_id is {:#x}, not asvcpp's {:#x}", id, kApplicationId);
    return PostgresKind::kForeign;
  }
  std::string listed;
  for (std::size_t i = 0; i < tables.size() && i < 8; ++i) listed += (i ? ", " : "") + tables[i];
  if (tables.size() > 8) listed += ", ...";
  *why_foreign = fmt::format("it has tables {} but no table asvcpp_schema", listed);
  return PostgresKind::kForeign;
}

[[noreturn]] void ThrowNotAsvcpp(const std::string& why) {
  throw DbError(fmt::format(
      "not an asvcpp experiment database ({}); asvcpp leaves it untouched: choose another database or --db URI",
      why));
}

int PostgresVersion(Connection& conn) {
  Statement stmt(conn, "SELECT version FROM asvcpp_schema");
  return stmt.Step() ? static_cast<int>(stmt.Int(0)) : 0;
}

}  // namespace

void Database::OpenPostgres() {
  try {
    conn_ = std::make_unique<PostgresConnection>(path_.string());
  } catch (const DbError& e) {
    throw DbError(fmt::format("experiment database {}: open: {}", location_, e.what()));
  }
  // A writer waiting for the writers' lock gives up after busy_timeout as on SQLite (55P03, busy):
  // Retry then waits on until retry_limit. (0 would mean no limit to PostgreSQL.)
  const std::int64_t lock_timeout_ms = std::max<std::int64_t>(1, options_.busy_timeout.count());
  Retry("configure connection", nullptr,
        [&] { conn_->Exec(fmt::format("SET lock_timeout = {}", lock_timeout_ms)); });
  const int latest = LatestSchemaVersion();
  if (options_.read_only) {
    Retry("open read-only", nullptr, [&] {
      conn_->Exec("SET default_transaction_read_only = on");
      std::string why;
      const PostgresKind kind = ClassifyPostgres(*conn_, &why);
      if (kind == PostgresKind::kForeign) ThrowNotAsvcpp(why);
      if (kind == PostgresKind::kEmpty) {
        throw DbError("the database has no asvcpp schema yet (no run was recorded in it)");
      }
      const int version = PostgresVersion(*conn_);
      if (version > latest) {
        throw DbError(fmt::format("schema version {} is newer than the newest this build of asvcpp knows ({}); use a "
                                  "newer asvcpp to open it",
                                  version, latest));
      }
      if (version < latest) {
        throw DbError(fmt::format("schema version {} is older than this build's ({}) and a read-only open cannot "
                                  "upgrade it; open it once for writing to upgrade it",
                                  version, latest));
      }
    });
    return;
  }
  const int target = options_.max_schema_version > 0 ? std::min(options_.max_schema_version, latest) : latest;
  for (bool done = false; !done;) {
    Write("migrate schema", [&] {
      done = false;
      std::string why;
      const PostgresKind kind = ClassifyPostgres(*conn_, &why);
      if (kind == PostgresKind::kForeign) ThrowNotAsvcpp(why);
      if (kind == PostgresKind::kEmpty) {
        conn_->Exec("CREATE TABLE asvcpp_schema (application_id BIGINT NOT NULL, version INTEGER NOT NULL)");
        Statement(*conn_, "INSERT INTO asvcpp_schema (application_id, version) VALUES (:id, 0)")
            .Bind(":id", static_cast<std::int64_t>(kApplicationId))
            .Run();
      }
      const int version = PostgresVersion(*conn_);
      if (version > latest) {
        throw DbError(fmt::format("schema version {} is newer than the newest this build of asvcpp knows ({}); use a "
                                  "newer asvcpp to open it",
                                  version, latest));
      }
      if (version >= target) {
        done = true;
        return;
      }
      const Migration& migration = Migrations()[static_cast<std::size_t>(version)];
      conn_->Exec(conn_->dialect().TranslateDdl(migration.sql));
      Statement(*conn_, "UPDATE asvcpp_schema SET version = :version").Bind(":version", migration.version).Run();
      ASV_LOG(Debug, "experiment database {}: migrated to schema version {} ({})", location_, migration.version,
              migration.description);
    });
  }
}

}  // namespace asv::db
