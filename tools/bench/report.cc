// asv_bench_report: `asvrun report` on a large experiment database (README.md).
//
// Builds a database of `--runs` runs over `--configs` configs (each with the full settings JSON of
// a run, `--epochs` epochs, results spread evenly to make `--results` rows over 4 trial lists, each
// with minDCF at 2 operating points in result_costs, and, for every tenth run, a DET file of
// `--det-points` points), inserted with plain SQLite in transactions; the last 10 runs are still
// running on another host. Then times report::WriteReport (asvcpp/report/report_html.h) on a
// read-only connection, as `asvrun report` runs it: the whole page, written atomically.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <sqlite3.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/db/database.h"
#include "asvcpp/db/timestamp.h"
#include "asvcpp/eval/det.h"
#include "asvcpp/report/report_html.h"
#include "tools/bench/bench_util.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// User + system CPU seconds of this process so far.
double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

constexpr const char* kTrialLists[] = {"voxceleb1_o", "voxceleb1_e", "voxceleb1_h", "demo"};

void Exec(sqlite3* db, const std::string& sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    const std::string text = message ? message : "?";
    sqlite3_free(message);
    throw asv::DbError(fmt::format("bench fill: {}: {}", sql.substr(0, 80), text));
  }
}

// A prepared statement that is bound, stepped and reset once per row.
class Insert {
 public:
  Insert(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) {
      throw asv::DbError(fmt::format("bench fill: {}", sqlite3_errmsg(db)));
    }
  }
  ~Insert() { sqlite3_finalize(stmt_); }
  Insert(const Insert&) = delete;
  Insert& operator=(const Insert&) = delete;
  sqlite3_stmt* operator*() const { return stmt_; }
  void Step() {
    if (sqlite3_step(stmt_) != SQLITE_DONE) throw asv::DbError(fmt::format("bench fill: {}", sqlite3_errmsg(db_)));
    sqlite3_reset(stmt_);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// A flat settings object of `keys` settings like a run's (about 40 bytes each); `config` varies one.
std::string SettingsJson(int keys, int config) {
  std::string out = "{";
  for (int k = 0; k < keys; ++k) {
    out += fmt::format("{}\"group{}.setting_number_{}\":{}", k ? "," : "", k % 8, k, k == 0 ? config : k * 3);
  }
  return out + "}";
}

struct Sizes {
  int runs = 10000;
  int configs = 1000;
  int epochs = 10;
  std::int64_t results = 1000000;
  int det_points = 850;
  int settings_keys = 100;
};

void Fill(const fs::path& path, const fs::path& det_dir, const Sizes& sizes) {
  { asv::db::Database create(path); }
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) throw asv::DbError("bench fill: cannot open " + path.string());
  try {
    const std::string now = asv::db::NowUtc();
    Exec(db, "BEGIN IMMEDIATE");
    {
      Insert run(db,
                 "INSERT INTO runs (id, recipe, config, parent_chain, settings_json, settings_hash, host, gpu_ids, "
                 "world_size, code_version, output_folder, status, start_time, end_time, heartbeat_time) VALUES "
                 "(?1, 'voxceleb/xvector', ?2, '[\"fe\"]', ?3, ?4, ?5, '[0,1]', 2, '0.1.0 (bench)', ?6, ?7, ?8, ?9, ?8)");
      for (int r = 1; r <= sizes.runs; ++r) {
        const int config = r % sizes.configs;
        const bool running = r > sizes.runs - 10;
        const std::string settings = SettingsJson(sizes.settings_keys, config);
        const std::string name = fmt::format("config{}", config);
        const std::string hash = fmt::format("{:016x}", config);
        sqlite3_bind_int64(*run, 1, r);
        sqlite3_bind_text(*run, 2, name.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(*run, 3, settings.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(*run, 4, hash.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(*run, 5, running ? "another-host" : "bench-host", -1, SQLITE_STATIC);
        sqlite3_bind_text(*run, 6, det_dir.c_str(), -1, SQLITE_STATIC);
        sqlite3_bind_text(*run, 7, running ? "running" : "finished", -1, SQLITE_STATIC);
        sqlite3_bind_text(*run, 8, now.c_str(), -1, SQLITE_TRANSIENT);
        if (running) {
          sqlite3_bind_null(*run, 9);
        } else {
          sqlite3_bind_text(*run, 9, now.c_str(), -1, SQLITE_TRANSIENT);
        }
        run.Step();
      }
      Insert epoch(db,
                   "INSERT INTO epochs (run_id, epoch, loss, accuracy, learning_rate, seconds, frames_per_second, "
                   "recorded_time, data_wait_percent) VALUES (?1, ?2, ?3, ?4, 0.1, 60, ?5, ?6, 1.5)");
      for (int r = 1; r <= sizes.runs; ++r) {
        for (int e = 1; e <= sizes.epochs; ++e) {
          sqlite3_bind_int64(*epoch, 1, r);
          sqlite3_bind_int(*epoch, 2, e);
          sqlite3_bind_double(*epoch, 3, 5.0 / e + 0.001 * (r % 97));
          sqlite3_bind_double(*epoch, 4, 100.0 - 50.0 / e);
          sqlite3_bind_double(*epoch, 5, 20000 + 13 * (r % 101));
          sqlite3_bind_text(*epoch, 6, now.c_str(), -1, SQLITE_TRANSIENT);
          epoch.Step();
        }
      }
      Insert stage(db, "INSERT INTO stages (run_id, stage, name, status, start_time) VALUES (?1, 5, 'train', 'running', ?2)");
      for (int r = sizes.runs - 9; r <= sizes.runs; ++r) {
        sqlite3_bind_int64(*stage, 1, r);
        sqlite3_bind_text(*stage, 2, now.c_str(), -1, SQLITE_TRANSIENT);
        stage.Step();
      }
      Insert det(db, "INSERT INTO artifacts (run_id, path, kind, recorded_time) VALUES (?1, ?2, 'det', ?3)");
      for (int r = 10; r <= sizes.runs; r += 10) {
        const std::string file = fmt::format("scores/det_{}_{}.tsv", kTrialLists[0], r);
        sqlite3_bind_int64(*det, 1, r);
        sqlite3_bind_text(*det, 2, file.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(*det, 3, now.c_str(), -1, SQLITE_TRANSIENT);
        det.Step();
        // Two Gaussians, d' from 2 to 4 by run.
        const double d = 2.0 + 2.0 * r / sizes.runs;
        std::vector<asv::eval::DetPoint> points;
        for (int i = 0; i < sizes.det_points; ++i) {
          const double t = -d / 2 - 3 + (d + 6) * i / (sizes.det_points - 1);
          points.push_back({0.5 * std::erfc(-(t - d / 2) / std::sqrt(2.0)), 0.5 * std::erfc((t + d / 2) / std::sqrt(2.0)), t});
        }
        asv::eval::WriteDetPoints(det_dir / file, points);
      }
    }
    Exec(db, "COMMIT");
    Insert result(db,
                  "INSERT INTO results (id, run_id, epoch, trial_list, eer, min_dcf, p_target, c_miss, c_fa, n_target, "
                  "n_nontarget, recorded_time, stage) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0.05, 1, 1, 100, 10000, ?7, 5)");
    Insert cost(db, "INSERT INTO result_costs (result_id, p_target, c_miss, c_fa, min_dcf) VALUES (?1, ?2, 1, 1, ?3)");
    const std::int64_t per_run = std::max<std::int64_t>(1, sizes.results / sizes.runs);
    std::uint64_t state = 12345;
    for (std::int64_t i = 0; i < sizes.results; ++i) {
      if (i % 100000 == 0) Exec(db, "BEGIN IMMEDIATE");
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;  // PCG-style LCG step
      const double eer = 1.0 + static_cast<double>(state >> 40) / static_cast<double>(1ULL << 24) * 9.0;
      const std::int64_t run = i / per_run % sizes.runs + 1;
      const std::int64_t k = i % per_run;
      sqlite3_bind_int64(*result, 1, i + 1);
      sqlite3_bind_int64(*result, 2, run);
      sqlite3_bind_int64(*result, 3, k / 4 + 1);
      sqlite3_bind_text(*result, 4, kTrialLists[k % 4], -1, SQLITE_STATIC);
      sqlite3_bind_double(*result, 5, eer);
      sqlite3_bind_double(*result, 6, eer / 20);
      sqlite3_bind_text(*result, 7, "2026-01-01T00:00:00.000Z", -1, SQLITE_STATIC);
      result.Step();
      for (const double p : {0.05, 0.01}) {
        sqlite3_bind_int64(*cost, 1, i + 1);
        sqlite3_bind_double(*cost, 2, p);
        sqlite3_bind_double(*cost, 3, eer / (p == 0.05 ? 20 : 12));
        cost.Step();
      }
      if ((i + 1) % 100000 == 0 || i + 1 == sizes.results) Exec(db, "COMMIT");
    }
  } catch (...) {
    sqlite3_close(db);
    throw;
  }
  sqlite3_close(db);
}

int Main(int argc, char** argv) {
  Sizes sizes;
  int warmup = 1;
  int repeats = 3;
  std::string dir;
  std::string json_path = "-";
  CLI::App app{"asv_bench_report: asvrun report's page of a large experiment database"};
  app.add_option("--runs", sizes.runs, "Runs")->check(CLI::Range(20, 10000000))->capture_default_str();
  app.add_option("--configs", sizes.configs, "Configs the runs are spread over")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--epochs", sizes.epochs, "Epochs per run")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--results", sizes.results, "Result rows (each with 2 costs)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--det-points", sizes.det_points, "Points of each DET file (every tenth run has one)")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  app.add_option("--settings-keys", sizes.settings_keys, "Settings per run")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--warmup", warmup, "Untimed reports first")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--repeats", repeats, "Timed reports")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--dir", dir, "Folder for the database and the page (must exist; default: a temporary folder)");
  bool reuse = false;
  app.add_flag("--reuse", reuse, "Time the database already in --dir (made by an earlier run with --dir) instead of filling one");
  app.add_option("--json", json_path, "Write the timings here (- = stdout)")->capture_default_str();
  app.footer("Example:\n  asv_bench_report --runs 10000 --results 1000000 --json report.json");
  CLI11_PARSE(app, argc, argv);

  const bool own_dir = dir.empty();
  const fs::path folder = own_dir ? fs::temp_directory_path() / fmt::format("asv_bench_report.{}", getpid()) : fs::path(dir);
  fs::create_directories(folder);
  const fs::path path = folder / "experiments.db";
  if (reuse && (own_dir || !fs::exists(path))) {
    throw asv::ConfigError(fmt::format("--reuse needs --dir with an experiments.db of an earlier run, not found: {}", path.string()));
  }
  double fill_seconds = 0;
  if (!reuse) {
    fs::remove(path);
    const auto fill_start = Clock::now();
    Fill(path, folder / "out", sizes);
    fill_seconds = Seconds(fill_start);
  }

  asv::db::DatabaseOptions read_only;
  read_only.read_only = true;
  asv::db::Database db(path, read_only);
  const fs::path page = folder / "report.html";
  std::size_t bytes = 0;
  // CPU seconds (user + system) of each timed call too: on a shared machine wall time includes waiting.
  std::vector<double> cpu;
  const auto timing = asv::bench::Measure(warmup, repeats, [&] {
    const double start = CpuSeconds();
    bytes = asv::report::WriteReport(db, {}, page);
    cpu.push_back(CpuSeconds() - start);
  });
  cpu.erase(cpu.begin(), cpu.end() - static_cast<std::ptrdiff_t>(timing.seconds.size()));
  // The parts: the data from the database (SQL, DET files, settings deltas) and the page.
  nlohmann::ordered_json data;
  double build_cpu = CpuSeconds();
  const auto build = asv::bench::Measure(0, 1, [&] { data = asv::report::BuildReportData(db, {}); });
  build_cpu = CpuSeconds() - build_cpu;
  double render_cpu = CpuSeconds();
  const auto render = asv::bench::Measure(0, 1, [&] { bytes = asv::report::RenderReportHtml(data, "bench").size(); });
  render_cpu = CpuSeconds() - render_cpu;
  std::sort(cpu.begin(), cpu.end());

  asv::bench::Json report{
      {"case", "report"},
      {"runs", sizes.runs},
      {"configs", sizes.configs},
      {"epochs_per_run", sizes.epochs},
      {"results", sizes.results},
      {"det_files", sizes.runs / 10},
      {"fill_seconds", fill_seconds},
      {"database_bytes", fs::file_size(path)},
      {"page_bytes", bytes},
      {"grid_rows", data["grid"]["rows"].size()},
      {"running", data["running"].size()},
      {"write_report", timing.ToJson()},
      {"write_report_cpu_seconds_median", cpu.empty() ? 0.0 : cpu[cpu.size() / 2]},
      {"build_data", build.ToJson()},
      {"build_data_cpu_seconds", build_cpu},
      {"render_page", render.ToJson()},
      {"render_page_cpu_seconds", render_cpu}};
  if (own_dir) fs::remove_all(folder);
  asv::bench::WriteJson(report, json_path);
  return asv::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return asv::bench::RunMain(Main, argc, argv);
}
