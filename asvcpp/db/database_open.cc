// Opening the experiment database: the connection and its settings, what kind of SQLite file it
// is (new, asvcpp's, an asvcpp file from before application_id, another application's), the
// read-only open with its immutable fallback, WAL mode, schema migrations, and the schema-level
// queries SchemaVersion and IntegrityCheck.
#include "asvcpp/db/database.h"
#include "asvcpp/db/file_system.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <system_error>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/db/connection.h"
#include "asvcpp/db/schema.h"
#include "asvcpp/db/statement.h"

namespace asv::db {
namespace {

int UserVersion(sqlite3* db) {
  Statement stmt(db, "PRAGMA user_version");
  return stmt.Step() ? static_cast<int>(stmt.Int(0)) : 0;
}

std::int32_t ApplicationId(sqlite3* db) {
  Statement stmt(db, "PRAGMA application_id");
  return stmt.Step() ? static_cast<std::int32_t>(stmt.Int(0)) : 0;
}

// The tables every asvcpp experiment database has (schema version 1 on).
const std::vector<std::string>& AsvcppTables() {
  static const std::vector<std::string> tables = {"artifacts", "epochs", "results", "runs", "stages"};
  return tables;
}

// What an SQLite file is to asvcpp, from its header and schema (reads only).
enum class FileKind {
  kEmpty,    // no schema objects and no application id: a new database
  kAsvcpp,   // application_id = kApplicationId
  kLegacy,   // no application id but asvcpp's tables: created before the id was stamped
  kForeign,  // anything else: another application's file
};

FileKind Classify(sqlite3* db, std::string* why_foreign) {
  const std::int32_t id = ApplicationId(db);
  if (id == kApplicationId) return FileKind::kAsvcpp;
  if (id != 0) {
    *why_foreign = fmt::format("its application_id is {:#x}, not asvcpp's {:#x}",
                               static_cast<std::uint32_t>(id), kApplicationId);
    return FileKind::kForeign;
  }
  // One statement, so one snapshot of the schema: outside a transaction, two queries could see
  // the file before and after another process's first migration.
  std::vector<std::string> names;
  bool other_objects = false;
  Statement stmt(db, R"sql(
    SELECT name, type = 'table' FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'
    ORDER BY name)sql");
  while (stmt.Step()) {
    if (stmt.Int(1) != 0) {
      names.push_back(stmt.Text(0));
    } else {
      other_objects = true;
    }
  }
  if (names.empty()) {
    if (!other_objects) return FileKind::kEmpty;
    *why_foreign = "it has views, indexes or triggers but none of asvcpp's tables";
    return FileKind::kForeign;
  }
  const bool has_all = std::all_of(AsvcppTables().begin(), AsvcppTables().end(), [&](const std::string& t) {
    return std::find(names.begin(), names.end(), t) != names.end();
  });
  if (has_all && UserVersion(db) >= 1) return FileKind::kLegacy;
  std::string listed;
  for (std::size_t i = 0; i < names.size() && i < 8; ++i) listed += (i ? ", " : "") + names[i];
  if (names.size() > 8) listed += ", ...";
  *why_foreign = fmt::format("it has tables {} but not asvcpp's schema ({})", listed,
                             fmt::join(AsvcppTables(), ", "));
  return FileKind::kForeign;
}

[[noreturn]] void ThrowForeign(const std::string& why) {
  throw DbError(fmt::format(
      "not an asvcpp experiment database ({}); asvcpp leaves it untouched: choose another --db "
      "file or output folder",
      why));
}

// "file:" URI of `path` with `query`, percent-encoding what a URI path must not contain.
std::string FileUri(const std::filesystem::path& path, const std::string& query) {
  std::string uri = "file:";
  for (const unsigned char c : std::filesystem::absolute(path).string()) {
    if (std::isalnum(c) || std::string_view("/-_.~").find(static_cast<char>(c)) != std::string_view::npos) {
      uri += static_cast<char>(c);
    } else {
      uri += fmt::format("%{:02X}", c);
    }
  }
  return uri + "?" + query;
}

// A file whose schema is newer than this build's is refused before anything is read or changed.
void RequireKnownSchema(int version, int latest) {
  if (version > latest) {
    throw DbError(fmt::format(
        "schema version {} is newer than the newest this build of asvcpp knows ({}); use a newer asvcpp to open it",
        version, latest));
  }
}

}  // namespace

void Database::OpenConnection(const std::string& name, int flags) {
  conn_.reset();
  db_ = nullptr;
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(name.c_str(), &db, flags, nullptr);
  conn_ = std::make_unique<SqliteConnection>(db);  // closes it, also when the open failed
  if (rc != SQLITE_OK) {
    const std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    throw DbError(
        fmt::format("experiment database {}: open: {}", path_.string(), DescribeSqlite(message, rc)));
  }
  db_ = db;
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, static_cast<int>(options_.busy_timeout.count()));
  if (options_.max_page_count > 0) {
    Retry("set max_page_count", nullptr, [&] {
      Statement(db_, fmt::format("PRAGMA max_page_count = {}", options_.max_page_count)).Run();
    });
  }
}

void Database::OpenReadWrite() {
  if (path_.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(path_.parent_path(), ec);
    // Another process may have created it at the same moment; only a missing folder is an error.
    if (ec && !std::filesystem::is_directory(path_.parent_path())) {
      throw DbError(fmt::format("experiment database {}: cannot create folder {}: {}",
                                path_.string(), path_.parent_path().string(), ec.message()));
    }
  }
  const auto network = options_.file_system_probe ? options_.file_system_probe(path_) : NetworkFileSystem(path_);
  if (network && !options_.allow_network_file_system) {
    throw DbError(fmt::format(
        "experiment database {}: it is on a network file system ({}), where SQLite's locking is unreliable "
        "and its WAL mode does not work, so concurrent runs could corrupt it: put it on a local disk "
        "(paths.output_folder, or --db FILE), use a PostgreSQL store (paths.experiment_db = "
        "'postgresql://...'), or set paths.allow_experiment_db_on_network_fs = True (or ASV_DB_ALLOW_NETWORK_FS=1) "
        "to use it there with a rollback journal at your own risk",
        path_.string(), *network));
  }
  if (network) {
    ASV_LOG(Warning, "experiment database {} is on a network file system ({}): used with a rollback journal "
            "(allowed by paths.allow_experiment_db_on_network_fs or ASV_DB_ALLOW_NETWORK_FS=1); concurrent writers from several machines may corrupt it",
            path_.string(), *network);
  }
  OpenConnection(path_.string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  Configure(network.has_value());
  Migrate();
}

void Database::OpenReadOnly() {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path_, ec)) {
    throw DbError(fmt::format("experiment database {}: open read-only: no such file",
                              path_.string()));
  }
  const int latest = LatestSchemaVersion();
  const auto check = [&] {
    std::string why;
    const FileKind kind = Classify(db_, &why);
    if (kind == FileKind::kForeign) ThrowForeign(why);
    if (kind == FileKind::kEmpty) {
      throw DbError("the file has no asvcpp schema yet (no run was recorded in it)");
    }
    const int version = UserVersion(db_);
    RequireKnownSchema(version, latest);
    if (version < latest) {
      throw DbError(fmt::format(
          "schema version {} is older than this build's ({}) and a read-only open cannot "
          "upgrade it; open it once for writing (e.g. any asvrun run with --db {}) to upgrade it",
          version, latest, path_.string()));
    }
  };
  OpenConnection(path_.string(), SQLITE_OPEN_READONLY);
  // A WAL database needs its -shm file, which a reader creates when missing; in a read-only
  // folder or mount it cannot (SQLITE_READONLY_CANTINIT, SQLITE_CANTOPEN). There no process can
  // be writing either (a writer needs the same file), so the main file is the whole database:
  // open it as immutable, which needs no -shm and takes no locks.
  int rc = SQLITE_OK;
  std::string reason;
  try {
    Statement(db_, "SELECT count(*) FROM sqlite_master").Step();
  } catch (const SqliteError& e) {
    rc = e.sqlite_code();
    reason = e.detail();
  }
  const int primary = rc & 0xff;
  if (primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN) {
    std::error_code wal_ec;
    const auto wal = std::filesystem::path(path_.string() + "-wal");
    if (std::filesystem::exists(wal, wal_ec) && std::filesystem::file_size(wal, wal_ec) > 0 &&
        !wal_ec) {
      ASV_LOG(Warning,
              "experiment database {}: reading it immutable (its -shm file cannot be created: {}); "
              "the changes in {} that a crashed writer left behind are not seen",
              path_.string(), reason, wal.string());
    } else {
      ASV_LOG(Debug, "experiment database {}: read as immutable ({})", path_.string(), reason);
    }
    OpenConnection(FileUri(path_, "immutable=1"), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
  }
  Retry("open read-only", nullptr, check);
}

void Database::Configure(bool rollback_journal) {
  const int latest = LatestSchemaVersion();
  // Reading the header first also detects files that are not SQLite databases (SQLITE_NOTADB),
  // and refuses a newer schema before anything is changed.
  Retry("open", nullptr, [&] {
    std::string why;
    if (Classify(db_, &why) == FileKind::kForeign) ThrowForeign(why);
    const int version = UserVersion(db_);
    RequireKnownSchema(version, latest);
  });
  if (rollback_journal) {
    Retry("use a rollback journal", nullptr, [&] {
      Statement stmt(db_, "PRAGMA journal_mode=DELETE");
      const std::string mode = stmt.Step() ? stmt.Text(0) : std::string();
      if (mode != "delete") {
        throw DbError(fmt::format("could not switch to a rollback journal (journal_mode is '{}')", mode));
      }
    });
  } else {
    Retry("enable WAL mode", nullptr, [&] {
      Statement stmt(db_, "PRAGMA journal_mode=WAL");
      const std::string mode = stmt.Step() ? stmt.Text(0) : std::string();
      if (mode != "wal") {
        throw DbError(fmt::format(
            "could not switch to WAL journal mode (journal_mode is '{}'); is the file on a file "
            "system without shared-memory support, such as NFS?",
            mode));
      }
    });
  }
  Retry("configure connection", nullptr,
        [&] { Exec(db_, "PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;"); });
}

void Database::Migrate() {
  const int latest = LatestSchemaVersion();
  const int target =
      options_.max_schema_version > 0 ? std::min(options_.max_schema_version, latest) : latest;
  // One transaction per migration; the version is read inside it, so concurrent openers each
  // apply a migration at most once between them.
  for (bool done = false; !done;) {
    Write("migrate schema", [&] {
      done = false;
      // Checked again inside the transaction: the file may have changed since Configure().
      std::string why;
      const FileKind kind = Classify(db_, &why);
      if (kind == FileKind::kForeign) ThrowForeign(why);
      if (kind != FileKind::kAsvcpp) {
        Exec(db_, fmt::format("PRAGMA application_id = {}", kApplicationId));
      }
      const int version = UserVersion(db_);
      if (version > latest) {
        throw DbError(fmt::format("schema version {} is newer than the newest this build knows ({})",
                                  version, latest));
      }
      if (version >= target) {
        done = true;
        return;
      }
      const Migration& migration = Migrations()[static_cast<std::size_t>(version)];
      Exec(db_, migration.sql);
      Exec(db_, fmt::format("PRAGMA user_version = {}", migration.version));
      ASV_LOG(Debug, "experiment database {}: migrated to schema version {} ({})", path_.string(),
              migration.version, migration.description);
    });
  }
}

int Database::SchemaVersion() {
  int version = 0;
  if (engine() == Engine::kPostgres) {
    Read("SchemaVersion", [&] {
      Statement stmt(*conn_, "SELECT version FROM asvcpp_schema");
      version = stmt.Step() ? static_cast<int>(stmt.Int(0)) : 0;
    });
    return version;
  }
  Read("SchemaVersion", [&] { version = UserVersion(db_); });
  return version;
}

std::string Database::IntegrityCheck() {
  std::string report;
  if (engine() == Engine::kPostgres) {
    Read("IntegrityCheck", [&] {
      report.clear();
      std::vector<std::string> tables;
      Statement names(*conn_, "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                              "ORDER BY table_name");
      while (names.Step()) tables.push_back(names.Text(0));
      for (const std::string& table : tables) {
        try {
          conn_->Exec(fmt::format("SAVEPOINT asv_check; SELECT count(*) FROM \"{}\"; RELEASE asv_check", table));
        } catch (const StatementError& e) {
          conn_->Exec("ROLLBACK TO asv_check");
          if (!report.empty()) report += '\n';
          report += fmt::format("table {}: {}", table, e.detail());
        }
      }
      if (report.empty()) report = "ok";
    });
    return report;
  }
  Read("IntegrityCheck", [&] {
    report.clear();
    Statement stmt(db_, "PRAGMA integrity_check");
    while (stmt.Step()) {
      if (!report.empty()) report += '\n';
      report += stmt.Text(0);
    }
  });
  return report;
}

}  // namespace asv::db
