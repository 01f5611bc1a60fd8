#include "asvcpp/db/database.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <system_error>
#include <thread>
#include <utility>

#include "asvcpp/base/check.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/db/row_mappers.h"
#include "asvcpp/db/schema.h"
#include "asvcpp/db/statement.h"
#include "asvcpp/db/timestamp.h"

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
  std::vector<std::string> names;
  Statement stmt(db, R"sql(
    SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND type = 'table'
    ORDER BY name)sql");
  while (stmt.Step()) names.push_back(stmt.Text(0));
  if (names.empty()) {
    Statement any(db, "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'");
    if (any.Step() && any.Int(0) == 0) return FileKind::kEmpty;
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

// SQL function asv_process_alive(pid, process_start): IsProcessAlive, for runs of this host.
void ProcessAliveFunction(sqlite3_context* context, int /*argc*/, sqlite3_value** argv) {
  sqlite3_result_int(context, IsProcessAlive(sqlite3_value_int64(argv[0]),
                                             sqlite3_value_int64(argv[1]))
                                  ? 1
                                  : 0);
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

// The first `max_bytes` bytes of `text`, not splitting a UTF-8 sequence.
std::string Utf8Prefix(const std::string& text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

template <typename T>
std::string ToJson(const std::vector<T>& values) {
  return nlohmann::json(values).dump();
}

// Throws DbError naming the missing row when the last statement changed nothing.
void ExpectChanged(sqlite3* db, const char* table, std::int64_t id) {
  if (sqlite3_changes(db) == 0) throw DbError(fmt::format("there is no {} with id {}", table, id));
}

}  // namespace

std::filesystem::path Database::DefaultPath(const std::filesystem::path& output_folder) {
  return output_folder / "experiments.db";
}

Database::Database(const std::filesystem::path& path, DatabaseOptions options)
    : path_(path), options_(options) {
  FillCurrentProcess(&self_);
  try {
    if (options_.read_only) {
      OpenReadOnly();
    } else {
      OpenReadWrite();
    }
  } catch (...) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

void Database::OpenConnection(const std::string& name, int flags) {
  sqlite3_close_v2(db_);
  db_ = nullptr;
  const int rc = sqlite3_open_v2(name.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    throw DbError(
        fmt::format("experiment database {}: open: {}", path_.string(), DescribeSqlite(message, rc)));
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, static_cast<int>(options_.busy_timeout.count()));
  if (sqlite3_create_function_v2(db_, "asv_process_alive", 2, SQLITE_UTF8, nullptr,
                                 &ProcessAliveFunction, nullptr, nullptr, nullptr) != SQLITE_OK) {
    throw DbError(fmt::format("experiment database {}: open: {}", path_.string(),
                              sqlite3_errmsg(db_)));
  }
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
  OpenConnection(path_.string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  Configure();
  Migrate();
}

namespace {

// A file whose schema is newer than this build's is refused before anything is read or changed.
void RequireKnownSchema(int version, int latest) {
  if (version > latest) {
    throw DbError(fmt::format(
        "schema version {} is newer than the newest this build of asvcpp knows ({}); use a newer asvcpp to open it",
        version, latest));
  }
}

}  // namespace


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

Database::~Database() {
  if (db_) sqlite3_close_v2(db_);
}

Database::Database(Database&& other) noexcept
    : path_(std::move(other.path_)),
      options_(other.options_),
      db_(std::exchange(other.db_, nullptr)),
      self_(std::move(other.self_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    if (db_) sqlite3_close_v2(db_);
    path_ = std::move(other.path_);
    options_ = other.options_;
    db_ = std::exchange(other.db_, nullptr);
    self_ = std::move(other.self_);
  }
  return *this;
}

void Database::CheckOpen() const {
  ASV_CHECK(db_ != nullptr, "use of a moved-from asv::db::Database");
}

void Database::Retry(std::string_view operation, const char* begin,
                     const std::function<void()>& body, bool* full) {
  CheckOpen();
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  // Jitter keeps processes that collided once from colliding again in lock step.
  std::minstd_rand rng(static_cast<unsigned>(::getpid()) ^
                       static_cast<unsigned>(start.time_since_epoch().count()));
  auto delay = std::chrono::microseconds(500);
  const auto rollback = [this] {
    if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  };
  for (int attempt = 1;; ++attempt) {
    try {
      if (begin) Exec(db_, begin);
      body();
      if (begin) Exec(db_, "COMMIT");
      return;
    } catch (const SqliteError& failure) {
      rollback();
      const auto elapsed = Clock::now() - start;
      if (full != nullptr && failure.full()) {
        *full = true;
        return;
      }
      if (!failure.busy()) {
        throw DbError(fmt::format("experiment database {}: {}: {}", path_.string(), operation,
                                  failure.what()));
      }
      if (elapsed >= options_.retry_limit) {
        throw DbError(fmt::format(
            "experiment database {}: {}: {}; gave up after {} attempts in {} ms (another process "
            "holds the database lock)",
            path_.string(), operation, failure.what(), attempt,
            std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()));
      }
    } catch (const DbError& e) {
      rollback();
      throw DbError(fmt::format("experiment database {}: {}: {}", path_.string(), operation,
                                e.what()));
    } catch (...) {
      rollback();
      throw;
    }
    std::uniform_int_distribution<long> jitter(0, delay.count());
    std::this_thread::sleep_for(delay + std::chrono::microseconds(jitter(rng)));
    delay = std::min<std::chrono::microseconds>(delay * 2, std::chrono::milliseconds(100));
  }
}

void Database::Write(std::string_view operation, const std::function<void()>& body, bool* full) {
  Retry(operation, "BEGIN IMMEDIATE", body, full);
}

void Database::Read(std::string_view operation, const std::function<void()>& body) {
  // A deferred transaction gives the reads of one call a single consistent snapshot.
  Retry(operation, "BEGIN", body);
}

void Database::Configure() {
  const int latest = LatestSchemaVersion();
  // Reading the header first also detects files that are not SQLite databases (SQLITE_NOTADB),
  // and refuses a newer schema before anything is changed.
  Retry("open", nullptr, [&] {
    std::string why;
    if (Classify(db_, &why) == FileKind::kForeign) ThrowForeign(why);
    const int version = UserVersion(db_);
    RequireKnownSchema(version, latest);
  });
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

std::int64_t Database::InsertRun(const RunInfo& filled) {
  const std::string now = NowUtc();
  Statement stmt(db_, R"sql(
    INSERT INTO runs (recipe, config, parent_chain, settings_json, settings_hash, command_line,
                      host, pid, process_start, boot_id, pid_namespace, gpu_ids, world_size,
                      code_version, output_folder, status, start_time, heartbeat_time)
    VALUES (:recipe, :config, :parent_chain, :settings_json, :settings_hash, :command_line,
            :host, :pid, :process_start, :boot_id, :pid_namespace, :gpu_ids, :world_size,
            :code_version, :output_folder, 'running', :now, :now))sql");
  stmt.Bind(":recipe", filled.recipe)
      .Bind(":config", filled.config)
      .Bind(":parent_chain", ToJson(filled.parent_chain))
      .Bind(":settings_json", filled.settings_json)
      .Bind(":settings_hash", filled.settings_hash)
      .Bind(":command_line", filled.command_line)
      .Bind(":host", filled.host)
      .Bind(":pid", filled.pid)
      .Bind(":process_start", filled.process_start)
      .Bind(":boot_id", filled.boot_id)
      .Bind(":pid_namespace", filled.pid_namespace)
      .Bind(":gpu_ids", ToJson(filled.gpu_ids))
      .Bind(":world_size", filled.world_size)
      .Bind(":code_version", filled.code_version)
      .Bind(":output_folder", filled.output_folder)
      .Bind(":now", now)
      .Run();
  return sqlite3_last_insert_rowid(db_);
}

std::int64_t Database::BeginRun(const RunInfo& info) {
  RunInfo filled = info;
  if (filled.pid == 0) FillCurrentProcess(&filled);
  std::int64_t id = 0;
  Write("BeginRun", [&] { id = InsertRun(filled); });
  return id;
}

std::optional<std::int64_t> Database::TryBeginRun(const RunInfo& info,
                                                  std::vector<RunRow>* holders) {
  RunInfo filled = info;
  if (filled.pid == 0) FillCurrentProcess(&filled);
  if (!filled.gpu_ids.empty()) MarkCrashedRuns();
  std::optional<std::int64_t> id;
  std::vector<RunRow> busy;
  // Lookup and insert share one write transaction: no other process can begin a run on these
  // GPUs between the two.
  Write("TryBeginRun", [&] {
    id.reset();
    busy = SelectGpuHolders(filled.host, filled.gpu_ids);
    if (busy.empty()) id = InsertRun(filled);
  });
  if (holders) *holders = std::move(busy);
  return id;
}

std::vector<RunRow> Database::RunsHoldingGpus(const std::string& host,
                                              const std::vector<int>& gpu_ids) {
  if (gpu_ids.empty()) return {};
  MarkCrashedRuns();
  std::vector<RunRow> holders;
  Read("RunsHoldingGpus", [&] { holders = SelectGpuHolders(host, gpu_ids); });
  return holders;
}

std::vector<RunRow> Database::SelectGpuHolders(const std::string& host,
                                               const std::vector<int>& gpu_ids) {
  std::vector<RunRow> holders;
  if (gpu_ids.empty()) return holders;
  Statement stmt(db_, fmt::format(R"sql(
    SELECT * FROM (SELECT {} FROM runs WHERE status = 'running' AND host = :host)
    WHERE effective_status = 'running'
    ORDER BY id)sql",
                                  kRunColumns));
  BindEffectiveStatus(stmt, self_, options_.stale_heartbeat);
  stmt.Bind(":host", host);
  while (stmt.Step()) {
    RunRow row = ReadRunRow(stmt);
    const bool overlaps = std::any_of(row.info.gpu_ids.begin(), row.info.gpu_ids.end(), [&](int g) {
      return std::find(gpu_ids.begin(), gpu_ids.end(), g) != gpu_ids.end();
    });
    if (!overlaps) continue;
    // A local process that died after MarkCrashedRuns() looked holds nothing either.
    const bool local = row.info.host == self_.host && row.info.boot_id == self_.boot_id &&
                       row.info.pid_namespace == self_.pid_namespace;
    if (local && !IsProcessAlive(row.info.pid, row.info.process_start)) continue;
    holders.push_back(std::move(row));
  }
  return holders;
}

void Database::FinishRun(std::int64_t run_id, RunStatus status, const std::string& error_text) {
  bool full = false;
  Write("FinishRun", [&] {
    const std::string now = NowUtc();
    Statement(db_, R"sql(
      UPDATE runs SET status = :status, end_time = :now, heartbeat_time = :now,
                      error_text = :error_text
      WHERE id = :id)sql")
        .Bind(":status", ToString(status))
        .Bind(":now", now)
        .BindOrNull(":error_text", error_text)
        .Bind(":id", run_id)
        .Run();
    ExpectChanged(db_, "run", run_id);
    if (status != RunStatus::kRunning) {
      // A run that ends (e.g. interrupted by a signal) ends its unfinished stages with it.
      Statement(db_, R"sql(
        UPDATE stages SET status = :status, end_time = :now,
                          error_text = COALESCE(error_text, :error_text)
        WHERE run_id = :id AND status = 'running')sql")
          .Bind(":status", ToString(status))
          .Bind(":now", now)
          .BindOrNull(":error_text", error_text)
          .Bind(":id", run_id)
          .Run();
    }
  }, &full);
  if (!full) return;
  // The database (disk) is full. The run's status and the first cause matter most: update its
  // row alone, with a short error text that does not make the row grow beyond its page.
  std::string short_text;
  if (!error_text.empty()) {
    short_text = error_text.size() <= kShortErrorBytes
                     ? error_text
                     : Utf8Prefix(error_text, kShortErrorBytes) + " [...]";
    short_text += " [error text cut: the experiment database is full]";
  }
  bool still_full = false;
  Write("FinishRun", [&] {
    Statement(db_, R"sql(
      UPDATE runs SET status = :status, end_time = :now, heartbeat_time = :now,
                      error_text = :error_text
      WHERE id = :id)sql")
        .Bind(":status", ToString(status))
        .Bind(":now", NowUtc())
        .BindOrNull(":error_text", short_text)
        .Bind(":id", run_id)
        .Run();
    ExpectChanged(db_, "run", run_id);
  }, &still_full);
  if (still_full) {
    throw DbError(fmt::format(
        "experiment database {}: FinishRun: database or disk is full: could not record run {} as "
        "{}, not even with its error text cut to {} bytes",
        path_.string(), run_id, ToString(status), kShortErrorBytes));
  }
  ASV_LOG(Warning,
          "experiment database {}: the database or disk is full: recorded run {} as {} with its "
          "error text cut to {} bytes and left its stages as they were",
          path_.string(), run_id, ToString(status), kShortErrorBytes);
}

namespace {

// Inside a write of run `run_id`: that write is a sign of life.
void TouchHeartbeat(sqlite3* db, std::int64_t run_id, const std::string& now) {
  Statement(db, "UPDATE runs SET heartbeat_time = :now WHERE id = :id AND status = 'running'")
      .Bind(":now", now)
      .Bind(":id", run_id)
      .Run();
}

}  // namespace

void Database::Heartbeat(std::int64_t run_id) {
  Write("Heartbeat", [&] {
    Statement(db_, "UPDATE runs SET heartbeat_time = :now WHERE id = :id")
        .Bind(":now", NowUtc())
        .Bind(":id", run_id)
        .Run();
    ExpectChanged(db_, "run", run_id);
  });
}

std::int64_t Database::BeginStage(std::int64_t run_id, int stage, const std::string& name) {
  std::int64_t id = 0;
  Write("BeginStage", [&] {
    const std::string now = NowUtc();
    Statement(db_, R"sql(
      INSERT INTO stages (run_id, stage, name, status, start_time)
      VALUES (:run_id, :stage, :name, 'running', :now))sql")
        .Bind(":run_id", run_id)
        .Bind(":stage", stage)
        .Bind(":name", name)
        .Bind(":now", now)
        .Run();
    id = sqlite3_last_insert_rowid(db_);
    TouchHeartbeat(db_, run_id, now);
  });
  return id;
}

void Database::FinishStage(std::int64_t stage_id, RunStatus status, const std::string& error_text) {
  Write("FinishStage", [&] {
    const std::string now = NowUtc();
    Statement(db_, R"sql(
      UPDATE stages SET status = :status, end_time = :now, error_text = :error_text
      WHERE id = :id)sql")
        .Bind(":status", ToString(status))
        .Bind(":now", now)
        .BindOrNull(":error_text", error_text)
        .Bind(":id", stage_id)
        .Run();
    ExpectChanged(db_, "stage", stage_id);
    Statement(db_, R"sql(
      UPDATE runs SET heartbeat_time = :now
      WHERE id = (SELECT run_id FROM stages WHERE id = :id) AND status = 'running')sql")
        .Bind(":now", now)
        .Bind(":id", stage_id)
        .Run();
  });
}

void Database::RecordEpoch(std::int64_t run_id, const EpochRecord& epoch) {
  Write("RecordEpoch", [&] {
    const std::string now = NowUtc();
    Statement(db_, R"sql(
      INSERT INTO epochs (run_id, epoch, loss, accuracy, learning_rate, seconds, frames_per_second,
                          val_loss, val_accuracy, data_wait_percent, recorded_time)
      VALUES (:run_id, :epoch, :loss, :accuracy, :learning_rate, :seconds, :frames_per_second,
              :val_loss, :val_accuracy, :data_wait_percent, :now)
      ON CONFLICT (run_id, epoch) DO UPDATE SET
        loss = excluded.loss, accuracy = excluded.accuracy,
        learning_rate = excluded.learning_rate, seconds = excluded.seconds,
        frames_per_second = excluded.frames_per_second, val_loss = excluded.val_loss,
        val_accuracy = excluded.val_accuracy, data_wait_percent = excluded.data_wait_percent,
        recorded_time = excluded.recorded_time)sql")
        .Bind(":run_id", run_id)
        .Bind(":epoch", epoch.epoch)
        .Bind(":loss", epoch.loss)
        .Bind(":accuracy", epoch.accuracy)
        .Bind(":learning_rate", epoch.learning_rate)
        .Bind(":seconds", epoch.seconds)
        .Bind(":frames_per_second", epoch.frames_per_second)
        .Bind(":val_loss", epoch.val_loss)
        .Bind(":val_accuracy", epoch.val_accuracy)
        .Bind(":data_wait_percent", epoch.data_wait_percent)
        .Bind(":now", now)
        .Run();
    TouchHeartbeat(db_, run_id, now);
  });
}

std::int64_t Database::RecordResult(std::int64_t run_id, const ResultRecord& result) {
  std::int64_t id = 0;
  Write("RecordResult", [&] {
    const std::string now = NowUtc();
    Statement(db_, R"sql(
      INSERT INTO results (run_id, epoch, trial_list, eer, min_dcf, p_target, c_miss, c_fa,
                           n_target, n_nontarget, recorded_time, stage)
      VALUES (:run_id, :epoch, :trial_list, :eer, :min_dcf, :p_target, :c_miss, :c_fa,
              :n_target, :n_nontarget, :now, :stage))sql")
        .Bind(":run_id", run_id)
        .Bind(":epoch", result.epoch)
        .Bind(":trial_list", result.trial_list)
        .Bind(":eer", result.eer)
        .Bind(":min_dcf", result.min_dcf)
        .Bind(":p_target", result.p_target)
        .Bind(":c_miss", result.c_miss)
        .Bind(":c_fa", result.c_fa)
        .Bind(":n_target", result.n_target)
        .Bind(":n_nontarget", result.n_nontarget)
        .Bind(":stage", result.stage)
        .Bind(":now", now)
        .Run();
    id = sqlite3_last_insert_rowid(db_);
    TouchHeartbeat(db_, run_id, now);
  });
  return id;
}

std::int64_t Database::RecordArtifact(std::int64_t run_id, const ArtifactRecord& artifact) {
  std::int64_t id = 0;
  Write("RecordArtifact", [&] {
    const std::string now = NowUtc();
    Statement(db_, R"sql(
      INSERT INTO artifacts (run_id, stage_id, path, kind, checksum, bytes, recorded_time)
      VALUES (:run_id, :stage_id, :path, :kind, :checksum, :bytes, :now))sql")
        .Bind(":run_id", run_id)
        .Bind(":stage_id", artifact.stage_id)
        .Bind(":path", artifact.path)
        .Bind(":kind", artifact.kind)
        .Bind(":checksum", artifact.checksum)
        .Bind(":bytes", artifact.bytes)
        .Bind(":now", now)
        .Run();
    id = sqlite3_last_insert_rowid(db_);
    TouchHeartbeat(db_, run_id, now);
  });
  return id;
}

int Database::MarkCrashedRuns() {
  struct Dead {
    std::int64_t id;
    std::int64_t pid;
  };
  if (options_.read_only) return 0;
  std::vector<Dead> dead;
  // Liveness is checked outside the write transaction (it reads /proc); the UPDATE below only
  // touches runs that are still 'running', so a run that finished meanwhile is left alone.
  Read("MarkCrashedRuns", [&] {
    dead.clear();
    Statement stmt(db_, R"sql(
      SELECT id, pid, process_start FROM runs
      WHERE status = 'running' AND host = :host AND boot_id = :boot AND pid_namespace = :ns)sql");
    stmt.Bind(":host", self_.host).Bind(":boot", self_.boot_id).Bind(":ns", self_.pid_namespace);
    while (stmt.Step()) {
      if (!IsProcessAlive(stmt.Int(1), stmt.Int(2))) dead.push_back({stmt.Int(0), stmt.Int(1)});
    }
  });
  if (dead.empty()) return 0;
  int marked = 0;
  Write("MarkCrashedRuns", [&] {
    marked = 0;
    const std::string now = NowUtc();
    for (const Dead& run : dead) {
      // end_time: the last sign of life; the text also says when the crash was found.
      Statement(db_, R"sql(
        UPDATE runs SET status = 'crashed', end_time = heartbeat_time,
                        error_text = COALESCE(error_text, :reason || heartbeat_time || :found)
        WHERE id = :id AND status = 'running')sql")
          .Bind(":reason", fmt::format("process {} on host {} ended without finishing the run; "
                                       "last sign of life (heartbeat) at ",
                                       run.pid, self_.host))
          .Bind(":found", fmt::format(", found gone at {}", now))
          .Bind(":id", run.id)
          .Run();
      if (sqlite3_changes(db_) == 0) continue;
      ++marked;
      Statement(db_, R"sql(
        UPDATE stages SET status = 'crashed',
                          end_time = (SELECT heartbeat_time FROM runs WHERE id = :id)
        WHERE run_id = :id AND status = 'running')sql")
          .Bind(":id", run.id)
          .Run();
    }
  });
  if (marked > 0) {
    ASV_LOG(Info, "experiment database {}: marked {} run(s) whose process is gone as crashed",
            path_.string(), marked);
  }
  return marked;
}

std::vector<RunRow> Database::QueryRuns(const RunFilter& filter,
                                        std::optional<std::int64_t> run_id) {
  MarkCrashedRuns();
  std::vector<RunRow> rows;
  Read("ListRuns", [&] {
    rows.clear();
    Statement stmt(db_, fmt::format(R"sql(
      SELECT * FROM (SELECT {} FROM runs)
      WHERE (:recipe IS NULL OR recipe = :recipe)
        AND (:config IS NULL OR config = :config)
        AND (:status IS NULL OR effective_status = :status)
        AND (:id IS NULL OR id = :id)
      ORDER BY id DESC
      LIMIT :limit)sql",
                                    kRunColumns));
    BindEffectiveStatus(stmt, self_, options_.stale_heartbeat);
    stmt.Bind(":recipe", filter.recipe)
        .Bind(":config", filter.config)
        .Bind(":id", run_id)
        .Bind(":limit", filter.limit > 0 ? filter.limit : -1);
    if (filter.status) {
      stmt.Bind(":status", ToString(*filter.status));
    } else {
      stmt.Bind(":status", std::nullopt);
    }
    while (stmt.Step()) rows.push_back(ReadRunRow(stmt));
  });
  return rows;
}

std::vector<RunRow> Database::ListRuns(const RunFilter& filter) {
  return QueryRuns(filter, std::nullopt);
}

std::optional<RunRow> Database::GetRun(std::int64_t run_id) {
  auto rows = QueryRuns({}, run_id);
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());
}

// Every result matching the filters, newest first (columns as ReadResultRow reads them).
constexpr std::string_view kResultsSql = R"sql(
  SELECT r.id, r.run_id, runs.recipe, runs.config, r.epoch, r.trial_list, r.eer, r.min_dcf,
         r.p_target, r.c_miss, r.c_fa, r.n_target, r.n_nontarget, r.recorded_time, r.stage
  FROM results AS r JOIN runs ON runs.id = r.run_id
  WHERE (:recipe IS NULL OR runs.recipe = :recipe)
    AND (:config IS NULL OR runs.config = :config)
    AND (:trial_list IS NULL OR r.trial_list = :trial_list)
    AND (:run_id IS NULL OR r.run_id = :run_id)
    AND (:stage IS NULL OR r.stage = :stage)
  ORDER BY r.id DESC
  LIMIT :limit)sql";

// The best result of each (recipe, config, trial list) without reading every result: one seek in
// index results(run_id, trial_list, eer, id DESC, stage) (schema version 4) per (run, trial list).
//   names  the distinct trial lists, skipping from one to the next in results(trial_list, eer)
//          (a loose index scan; SQLite's GROUP BY/DISTINCT would read every entry)
//   best   per matching run and name: the first non-NULL EER in (eer, id DESC) order, that is the
//          lowest EER and among ties the latest; only when there is none, the latest NaN (NULL)
//          EER. Pairs without results give NULL. MATERIALIZED: inlined, SQLite would evaluate the
//          subqueries again for every reference to their value. INDEXED BY: with sqlite_stat1 the
//          planner may prefer results(trial_list, eer), a scan over every run's results.
//   ranked the best of the runs of each config, with the same ordering rule
constexpr std::string_view kBestPerConfigSql = R"sql(
  WITH RECURSIVE
    names(trial_list) AS (
      SELECT COALESCE(:trial_list, (SELECT MIN(trial_list) FROM results))
      UNION ALL
      SELECT (SELECT MIN(trial_list) FROM results WHERE results.trial_list > names.trial_list)
      FROM names WHERE :trial_list IS NULL AND names.trial_list IS NOT NULL),
    best AS MATERIALIZED (
      SELECT COALESCE(
               (SELECT id FROM results INDEXED BY results_run_trial_list_eer
                WHERE run_id = runs.id AND trial_list = names.trial_list AND eer IS NOT NULL
                  AND (:stage IS NULL OR stage = :stage)
                ORDER BY eer, id DESC LIMIT 1),
               (SELECT MAX(id) FROM results INDEXED BY results_run_trial_list_eer
                WHERE run_id = runs.id AND trial_list = names.trial_list AND eer IS NULL
                  AND (:stage IS NULL OR stage = :stage))) AS id
      FROM runs CROSS JOIN names
      WHERE names.trial_list IS NOT NULL
        AND (:recipe IS NULL OR runs.recipe = :recipe)
        AND (:config IS NULL OR runs.config = :config)
        AND (:run_id IS NULL OR runs.id = :run_id)),
    ranked AS (
      SELECT r.id, r.run_id, runs.recipe, runs.config, r.epoch, r.trial_list, r.eer, r.min_dcf,
             r.p_target, r.c_miss, r.c_fa, r.n_target, r.n_nontarget, r.recorded_time, r.stage,
             ROW_NUMBER() OVER (PARTITION BY runs.recipe, runs.config, r.trial_list
                                ORDER BY r.eer IS NULL, r.eer ASC, r.id DESC) AS rank
      FROM best JOIN results AS r ON r.id = best.id JOIN runs ON runs.id = r.run_id)
  SELECT id, run_id, recipe, config, epoch, trial_list, eer, min_dcf, p_target, c_miss, c_fa,
         n_target, n_nontarget, recorded_time, stage
  FROM ranked
  WHERE rank = 1
  ORDER BY recipe, config, trial_list
  LIMIT :limit)sql";

std::vector<ResultRow> Database::Results(const ResultFilter& filter) {
  std::vector<ResultRow> rows;
  Read("Results", [&] {
    rows.clear();
    Statement stmt(db_, filter.best_per_config ? kBestPerConfigSql : kResultsSql);
    stmt.Bind(":recipe", filter.recipe)
        .Bind(":config", filter.config)
        .Bind(":trial_list", filter.trial_list)
        .Bind(":run_id", filter.run_id)
        .Bind(":stage", filter.stage)
        .Bind(":limit", filter.limit > 0 ? filter.limit : -1);
    while (stmt.Step()) rows.push_back(ReadResultRow(stmt));
  });
  return rows;
}

std::vector<EpochRow> Database::Epochs(std::int64_t run_id) {
  std::vector<EpochRow> rows;
  Read("Epochs", [&] {
    rows.clear();
    Statement stmt(db_, fmt::format("SELECT {} FROM epochs WHERE run_id = :run_id ORDER BY epoch",
                                    kEpochColumns));
    stmt.Bind(":run_id", run_id);
    while (stmt.Step()) rows.push_back(ReadEpochRow(stmt));
  });
  return rows;
}

std::vector<StageRow> Database::Stages(std::int64_t run_id) {
  std::vector<StageRow> rows;
  Read("Stages", [&] {
    rows.clear();
    Statement stmt(db_, fmt::format("SELECT {} FROM stages WHERE run_id = :run_id ORDER BY id",
                                    kStageColumns));
    stmt.Bind(":run_id", run_id);
    while (stmt.Step()) rows.push_back(ReadStageRow(stmt));
  });
  return rows;
}

std::vector<ArtifactRow> Database::Artifacts(std::int64_t run_id) {
  std::vector<ArtifactRow> rows;
  Read("Artifacts", [&] {
    rows.clear();
    Statement stmt(db_, fmt::format("SELECT {} FROM artifacts WHERE run_id = :run_id ORDER BY id",
                                    kArtifactColumns));
    stmt.Bind(":run_id", run_id);
    while (stmt.Step()) rows.push_back(ReadArtifactRow(stmt));
  });
  return rows;
}

int Database::SchemaVersion() {
  int version = 0;
  Read("SchemaVersion", [&] { version = UserVersion(db_); });
  return version;
}

std::string Database::IntegrityCheck() {
  std::string report;
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
