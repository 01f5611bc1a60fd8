// asv_bench_db: the experiment database (asvcpp/db/database.h) under concurrent writers and a large
// result table.
//
//  writers  `--writers` processes (fork; each opens its own connection, as asvrun processes do)
//           each begin a run and record `--epochs` epochs and one result per epoch, then finish
//           the run. Reported: wall time of the slowest writer, writes per second, failed writes
//           (any DbError; the benchmark's target is none).
//  query    a fresh database with `--rows` result rows spread over `--configs` runs (one config
//           each, 4 trial lists), inserted with plain SQLite in transactions of 100,000 rows and
//           not ANALYZEd (asvcpp never analyses a user's database); then timed:
//             query             Database::Results with best_per_config ("best EER per config",
//                               as `asvrun results --best`; target < 100 ms)
//             query_trial_list  the same for one trial list (`asvrun results --best
//                               --trial-list voxceleb1_o`)
//             sql_per_list      the plain-SQL form documented at Database::Results, as a user of
//                               the sqlite3 shell would run it for one trial list
//             sql_join          the naive `MIN(eer) ... JOIN runs ... GROUP BY config`, which
//                               reads every result whatever the indexes (for comparison)
//  runs     with `--runs N` (e.g. 10,000): one process begins N runs, records 3 epochs and 3
//           results of each and finishes it (8 transactions per run, as asvrun writes them); then
//           timed: ListRuns (all N), Results best per config over every list and for one list, one
//           run's Epochs, and ResultSummary. On SQLite and, with `--postgres`, on PostgreSQL.
//
// `--postgres URI` (a libpq URI of a server database whose user may CREATE DATABASE, e.g.
// postgresql://me@localhost:5432/postgres) repeats the writers and the runs cases on PostgreSQL,
// each in a fresh database it creates there and drops at the end; the 1 M-row query case stays
// SQLite's (its fill writes the file directly).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/db/database.h"
#include "tools/bench/bench_util.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

constexpr const char* kTrialLists[] = {"voxceleb1_o", "voxceleb1_e", "voxceleb1_h", "demo"};

// One writer process: returns the number of failed writes.
int Writer(const std::string& path, int index, int epochs) {
  int failed = 0;
  asv::db::Database db(path);
  asv::db::RunInfo info;
  info.recipe = "voxceleb/xvector";
  info.config = fmt::format("writer{}", index);
  const std::int64_t run = db.BeginRun(info);
  for (int e = 1; e <= epochs; ++e) {
    try {
      asv::db::EpochRecord epoch;
      epoch.epoch = e;
      epoch.loss = 5.0 / e;
      epoch.accuracy = 100.0 - 50.0 / e;
      epoch.learning_rate = 0.2;
      epoch.seconds = 60;
      db.RecordEpoch(run, epoch);
      asv::db::ResultRecord result;
      result.epoch = e;
      result.trial_list = kTrialLists[e % 4];
      result.eer = 10.0 / e + 0.001 * index;
      result.min_dcf = 0.5;
      result.n_target = 100;
      result.n_nontarget = 10000;
      db.RecordResult(run, result);
    } catch (const asv::DbError& err) {
      ASV_LOG(Error, "writer {}: {}", index, err.what());
      ++failed;
    }
  }
  db.FinishRun(run, asv::db::RunStatus::kFinished);
  return failed;
}

void Exec(sqlite3* db, const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    const std::string text = message ? message : "?";
    sqlite3_free(message);
    throw asv::DbError(fmt::format("bench fill: {}: {}", sql, text));
  }
}

// Fills `path` (a database made by asv::db::Database) with `rows` results over `configs` runs.
void Fill(const fs::path& path, std::int64_t rows, int configs) {
  std::vector<std::int64_t> runs;
  {
    asv::db::Database db(path);
    for (int c = 0; c < configs; ++c) {
      asv::db::RunInfo info;
      info.recipe = "voxceleb/xvector";
      info.config = fmt::format("config{}", c);
      runs.push_back(db.BeginRun(info));
      db.FinishRun(runs.back(), asv::db::RunStatus::kFinished);
    }
  }
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) throw asv::DbError("bench fill: cannot open " + path.string());
  sqlite3_stmt* insert = nullptr;
  try {
    const char* sql =
        "INSERT INTO results (run_id, epoch, trial_list, eer, min_dcf, p_target, c_miss, c_fa, n_target, "
        "n_nontarget, recorded_time, stage) VALUES (?, ?, ?, ?, 0.5, 0.05, 1, 1, 100, 10000, "
        "'2026-01-01T00:00:00.000Z', 5)";
    if (sqlite3_prepare_v2(db, sql, -1, &insert, nullptr) != SQLITE_OK) {
      throw asv::DbError(fmt::format("bench fill: {}", sqlite3_errmsg(db)));
    }
    constexpr std::int64_t kPerTransaction = 100000;
    std::uint64_t state = 12345;
    for (std::int64_t r = 0; r < rows; ++r) {
      if (r % kPerTransaction == 0) Exec(db, "BEGIN IMMEDIATE");
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;  // PCG-style LCG step
      const double eer = 1.0 + static_cast<double>(state >> 40) / static_cast<double>(1ULL << 24) * 9.0;
      sqlite3_bind_int64(insert, 1, runs[static_cast<std::size_t>(r % configs)]);
      sqlite3_bind_int(insert, 2, static_cast<int>(r / configs % 1000) + 1);
      sqlite3_bind_text(insert, 3, kTrialLists[(r / configs) % 4], -1, SQLITE_STATIC);
      sqlite3_bind_double(insert, 4, eer);
      if (sqlite3_step(insert) != SQLITE_DONE) throw asv::DbError(fmt::format("bench fill: {}", sqlite3_errmsg(db)));
      sqlite3_reset(insert);
      if ((r + 1) % kPerTransaction == 0 || r + 1 == rows) Exec(db, "COMMIT");
    }
  } catch (...) {
    sqlite3_finalize(insert);
    sqlite3_close(db);
    throw;
  }
  sqlite3_finalize(insert);
  sqlite3_close(db);
}

// Runs `sql` on the server database `uri` (CREATE or DROP DATABASE). Throws DbError.
void PostgresAdmin(const std::string& uri, const std::string& sql) {
  PGconn* conn = PQconnectdb(uri.c_str());
  PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);  // "does not exist, skipping"
  std::string error;
  if (PQstatus(conn) != CONNECTION_OK) {
    error = PQerrorMessage(conn);
  } else {
    PGresult* result = PQexec(conn, sql.c_str());
    if (PQresultStatus(result) != PGRES_COMMAND_OK) error = PQresultErrorMessage(result);
    PQclear(result);
  }
  PQfinish(conn);
  if (!error.empty()) throw asv::DbError(fmt::format("bench: {} on {}: {}", sql, asv::db::RedactPassword(uri), error));
}

// `uri` with its database name replaced by `database`.
std::string WithDatabase(const std::string& uri, const std::string& database) {
  const std::size_t authority = uri.find("://") + 3;
  const std::size_t end = uri.find_first_of("/?", authority);
  const std::size_t query = uri.find('?', authority);
  return uri.substr(0, end == std::string::npos ? uri.size() : end) + "/" + database +
         (query == std::string::npos ? "" : uri.substr(query));
}

// `writers` processes writing concurrently into `location` (made before they start).
asv::bench::Json WritersCase(const std::string& location, int writers, int epochs) {
  { asv::db::Database create(location); }  // schema made once, before the writers race
  const auto start = Clock::now();
  std::vector<pid_t> children;
  for (int w = 0; w < writers; ++w) {
    const pid_t pid = fork();
    if (pid < 0) throw asv::Error(asv::kExitFailure, "fork failed");
    if (pid == 0) {
      int failed = 0;
      try {
        failed = Writer(location, w, epochs);
      } catch (const std::exception& e) {
        ASV_LOG(Error, "writer {}: {}", w, e.what());
        failed = epochs;
      }
      _exit(failed > 250 ? 250 : failed);
    }
    children.push_back(pid);
  }
  int failed_writers = 0;
  int failed_writes = 0;
  for (const pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 250;
    if (code != 0) ++failed_writers;
    failed_writes += code;
  }
  const double seconds = Seconds(start);
  std::int64_t epoch_rows = 0;
  std::int64_t result_rows = 0;
  {
    asv::db::Database db(location);
    for (const auto& run : db.ListRuns()) epoch_rows += static_cast<std::int64_t>(db.Epochs(run.id).size());
    result_rows = static_cast<std::int64_t>(db.Results().size());
  }
  const double writes = 2.0 * writers * epochs;
  return {{"processes", writers},
          {"epochs_each", epochs},
          {"seconds", seconds},
          {"writes_per_second", writes / seconds},
          {"failed_writers", failed_writers},
          {"failed_writes", failed_writes},
          {"epoch_rows", epoch_rows},
          {"result_rows", result_rows},
          {"expected_rows", writers * epochs}};
}

// `runs` runs written one after another into `location`, then the listing queries on them.
asv::bench::Json RunsCase(const std::string& location, int runs, int warmup, int repeats) {
  asv::db::Database db(location);
  const auto start = Clock::now();
  std::int64_t last = 0;
  for (int r = 0; r < runs; ++r) {
    asv::db::RunInfo info;
    info.recipe = "voxceleb/xvector";
    info.config = fmt::format("config{}", r % 100);
    last = db.BeginRun(info);
    for (int e = 1; e <= 3; ++e) {
      asv::db::EpochRecord epoch;
      epoch.epoch = e;
      epoch.loss = 5.0 / e;
      db.RecordEpoch(last, epoch);
      asv::db::ResultRecord result;
      result.epoch = e;
      result.trial_list = kTrialLists[(r + e) % 4];
      result.eer = 10.0 / e + 0.0001 * r;
      result.costs = {asv::db::CostRecord{0.05, 1, 1, 0.3, 0.35}};
      db.RecordResult(last, result);
    }
    db.FinishRun(last, asv::db::RunStatus::kFinished);
  }
  const double seconds = Seconds(start);
  std::size_t listed = 0;
  const auto list = asv::bench::Measure(warmup, repeats, [&] { listed = db.ListRuns().size(); });
  asv::db::ResultFilter best;
  best.best_per_config = true;
  std::size_t best_rows = 0;
  const auto best_all = asv::bench::Measure(warmup, repeats, [&] { best_rows = db.Results(best).size(); });
  best.trial_list = kTrialLists[0];
  std::size_t best_list_rows = 0;
  const auto best_list = asv::bench::Measure(warmup, repeats, [&] { best_list_rows = db.Results(best).size(); });
  const auto epochs = asv::bench::Measure(warmup, repeats, [&] { db.Epochs(last); });
  std::size_t summary_rows = 0;
  const auto summary = asv::bench::Measure(warmup, repeats, [&] { summary_rows = db.ResultSummary().size(); });
  return {{"runs", runs},
          {"write_seconds", seconds},
          {"transactions_per_second", 8.0 * runs / seconds},
          {"list_runs", {{"rows", listed}, {"timing", list.ToJson()}}},
          {"best_per_config", {{"rows", best_rows}, {"timing", best_all.ToJson()}}},
          {"best_per_config_one_list", {{"rows", best_list_rows}, {"timing", best_list.ToJson()}}},
          {"epochs_of_one_run", epochs.ToJson()},
          {"result_summary", {{"rows", summary_rows}, {"timing", summary.ToJson()}}}};
}

constexpr const char* kSqlPerList = R"sql(
  SELECT r.recipe, r.config, MIN((SELECT MIN(x.eer) FROM results x
                                  WHERE x.run_id = r.id AND x.trial_list = 'voxceleb1_o'))
  FROM runs r GROUP BY r.recipe, r.config)sql";
constexpr const char* kSqlJoin =
    "SELECT r.config, MIN(x.eer) FROM results x JOIN runs r ON r.id = x.run_id GROUP BY r.config";

// Runs `sql` to the end on a plain read-only connection; returns the number of rows.
std::int64_t RowsOf(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) {
    throw asv::DbError(fmt::format("bench query: {}", sqlite3_errmsg(db)));
  }
  std::int64_t rows = 0;
  int rc = 0;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) ++rows;
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) throw asv::DbError(fmt::format("bench query: {}", sqlite3_errmsg(db)));
  return rows;
}

int Main(int argc, char** argv) {
  int writers = 16;
  int epochs = 1000;
  std::int64_t rows = 1000000;
  int configs = 1000;
  int warmup = 1;
  int repeats = 5;
  std::string dir;
  std::string json_path = "-";
  int runs = 0;
  std::string postgres;
  CLI::App app{"asv_bench_db: experiment database with concurrent writers and a large results table"};
  app.add_option("--writers", writers, "Concurrent writer processes")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--epochs", epochs, "Epochs (and results) each writer records")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--rows", rows, "Result rows for the query")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--configs", configs, "Runs (configs) the rows are spread over")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--warmup", warmup, "Untimed queries first")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--repeats", repeats, "Timed queries")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--dir", dir, "Folder for the database files (must exist; default: a temporary folder)");
  app.add_option("--json", json_path, "Write the timings here (- = stdout)")->capture_default_str();
  app.add_option("--runs", runs, "Runs of the runs case (0: skip it)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--postgres", postgres,
                 "Also on PostgreSQL: URI of a server database whose user may CREATE DATABASE, e.g. "
                 "postgresql://me@localhost:5432/postgres");
  app.footer("Examples:\n  asv_bench_db --writers 16 --epochs 1000 --rows 1000000 --json db.json\n"
             "  asv_bench_db --runs 10000 --postgres postgresql://me@localhost:5432/postgres --json db.json");
  CLI11_PARSE(app, argc, argv);

  const bool own_dir = dir.empty();
  const fs::path folder = own_dir ? fs::temp_directory_path() / fmt::format("asv_bench_db.{}", getpid()) : fs::path(dir);
  fs::create_directories(folder);
  const fs::path writers_db = folder / "writers.sqlite";
  const fs::path query_db = folder / "query.sqlite";
  const fs::path runs_db = folder / "runs.sqlite";
  for (const fs::path& file : {writers_db, query_db, runs_db}) fs::remove(file);

  const asv::bench::Json writers_report = WritersCase(writers_db.string(), writers, epochs);
  std::vector<std::string> postgres_databases;
  const auto postgres_database = [&](const char* what) {
    const std::string name = fmt::format("asv_bench_{}_{}", getpid(), what);
    PostgresAdmin(postgres, "DROP DATABASE IF EXISTS " + name);
    PostgresAdmin(postgres, "CREATE DATABASE " + name);
    postgres_databases.push_back(name);
    return WithDatabase(postgres, name);
  };
  asv::bench::Json postgres_report;
  if (!postgres.empty()) {
    postgres_report["server"] = asv::db::RedactPassword(postgres);
    postgres_report["writers"] = WritersCase(postgres_database("writers"), writers, epochs);
  }
  asv::bench::Json runs_report;
  if (runs > 0) {
    runs_report["sqlite"] = RunsCase(runs_db.string(), runs, warmup, repeats);
    if (!postgres.empty()) runs_report["postgresql"] = RunsCase(postgres_database("runs"), runs, warmup, repeats);
  }
  for (const std::string& name : postgres_databases) PostgresAdmin(postgres, "DROP DATABASE IF EXISTS " + name);

  const auto fill_start = Clock::now();
  Fill(query_db, rows, configs);
  const double fill_seconds = Seconds(fill_start);
  asv::db::Database db(query_db);
  asv::db::ResultFilter best;
  best.best_per_config = true;
  std::size_t best_rows = 0;
  const auto query = asv::bench::Measure(warmup, repeats, [&] { best_rows = db.Results(best).size(); });
  best.trial_list = kTrialLists[0];
  std::size_t best_list_rows = 0;
  const auto query_list = asv::bench::Measure(warmup, repeats, [&] { best_list_rows = db.Results(best).size(); });
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(query_db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(raw);
    throw asv::DbError("bench query: cannot open " + query_db.string());
  }
  std::int64_t per_list_rows = 0;
  std::int64_t join_rows = 0;
  const auto sql_per_list = asv::bench::Measure(warmup, repeats, [&] { per_list_rows = RowsOf(raw, kSqlPerList); });
  const auto sql_join = asv::bench::Measure(warmup, repeats, [&] { join_rows = RowsOf(raw, kSqlJoin); });
  sqlite3_close(raw);

  asv::bench::Json report{
      {"case", "db"},
      {"writers", writers_report},
      {"fill", {{"rows", rows}, {"configs", configs}, {"seconds", fill_seconds}}},
      {"best_per_config_rows", best_rows},
      {"query", query.ToJson()},
      {"query_trial_list", {{"rows", best_list_rows}, {"timing", query_list.ToJson()}}},
      {"sql_per_list", {{"sql", kSqlPerList}, {"rows", per_list_rows}, {"timing", sql_per_list.ToJson()}}},
      {"sql_join", {{"sql", kSqlJoin}, {"rows", join_rows}, {"timing", sql_join.ToJson()}}}};
  if (runs > 0) report["runs"] = runs_report;
  if (!postgres.empty()) report["postgresql"] = postgres_report;
  if (own_dir) fs::remove_all(folder);
  asv::bench::WriteJson(report, json_path);
  const auto lost = [&](const asv::bench::Json& w) {
    return w["failed_writes"].get<int>() != 0 || w["epoch_rows"].get<std::int64_t>() != w["expected_rows"].get<int>();
  };
  const bool failed = lost(writers_report) || (!postgres.empty() && lost(postgres_report["writers"]));
  return failed ? asv::kExitDbError : asv::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return asv::bench::RunMain(Main, argc, argv);
}
