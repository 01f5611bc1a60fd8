// The reads of the experiment database: runs (with their effective status), the runs holding
// GPUs, results (plain and best per config), epochs, stages and artifacts. Each query runs in one
// deferred transaction (Database::Read), so its statements see one snapshot; the queries of runs
// first mark dead local runs crashed (MarkCrashedRuns). Rows become structs through the row
// mappers of row_mappers.h.
#include "asvcpp/db/database.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "asvcpp/db/row_mappers.h"
#include "asvcpp/db/connection.h"
#include "asvcpp/db/statement.h"
#include "asvcpp/db/timestamp.h"

namespace asv::db {
namespace {

// LIMIT for "no limit" in both stores (PostgreSQL refuses SQLite's -1).
constexpr std::int64_t kNoLimit = std::numeric_limits<std::int64_t>::max();

}  // namespace

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
  Statement stmt(*conn_, fmt::format("SELECT {} FROM runs WHERE status = 'running' AND host = :host ORDER BY id",
                                     kRunColumns));
  stmt.Bind(":host", host);
  const Liveness liveness = MakeLiveness(self_, options_.stale_heartbeat);
  while (stmt.Step()) {
    RunRow row = ReadRunRow(stmt, liveness);
    if (row.status != RunStatus::kRunning) continue;
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

std::vector<RunRow> Database::QueryRuns(const RunFilter& filter,
                                        std::optional<std::int64_t> run_id) {
  MarkCrashedRuns();
  std::vector<RunRow> rows;
  Read("ListRuns", [&] {
    rows.clear();
    // The effective status is judged while reading the rows (ReadRunRow): with a status filter the
    // limit applies after it.
    Statement stmt(*conn_, fmt::format(R"sql(
      SELECT {} FROM runs
      WHERE (CAST(:recipe AS TEXT) IS NULL OR recipe = :recipe)
        AND (CAST(:config AS TEXT) IS NULL OR config = :config)
        AND (CAST(:id AS BIGINT) IS NULL OR id = :id)
      ORDER BY id DESC
      LIMIT :limit)sql",
                                    kRunColumns));
    stmt.Bind(":recipe", filter.recipe)
        .Bind(":config", filter.config)
        .Bind(":id", run_id)
        .Bind(":limit", filter.limit > 0 && !filter.status ? filter.limit : kNoLimit);
    const Liveness liveness = MakeLiveness(self_, options_.stale_heartbeat);
    while (stmt.Step()) rows.push_back(ReadRunRow(stmt, liveness));
  });
  ApplySlurmJobEnds(&rows);
  if (filter.status) {
    rows.erase(std::remove_if(rows.begin(), rows.end(), [&](const RunRow& r) { return r.status != *filter.status; }),
               rows.end());
    const auto limit = static_cast<std::size_t>(filter.limit);
    if (filter.limit > 0 && rows.size() > limit) rows.resize(limit);
  }
  return rows;
}

void Database::ApplySlurmJobEnds(std::vector<RunRow>* rows) {
  if (!options_.slurm_job_end) return;
  for (RunRow& row : *rows) {
    // Still 'running' in the file: reported running, or crashed by inference.
    const bool stored_running =
        row.status == RunStatus::kRunning || (row.status_inferred && row.status == RunStatus::kCrashed);
    if (!stored_running || !row.info.slurm_job_id) continue;
    const bool local = row.info.host == self_.host && row.info.boot_id == self_.boot_id &&
                       row.info.pid_namespace == self_.pid_namespace;
    if (local && IsProcessAlive(row.info.pid, row.info.process_start)) continue;
    const auto end = options_.slurm_job_end(*row.info.slurm_job_id);
    if (!end) continue;
    row.status = end->status;
    row.status_inferred = true;
    if (!row.end_time) row.end_time = row.heartbeat_time;
    if (!row.error_text) row.error_text = end->reason;
  }
}

void Database::RecordSlurmJob(const SlurmJobRecord& job) {
  Write("RecordSlurmJob", [&] {
    Statement(*conn_, R"sql(
      INSERT INTO slurm_jobs (job_id, recipe, config, output_folder, output_file, command_line, submit_time)
      VALUES (:job_id, :recipe, :config, :output_folder, :output_file, :command_line, :now)
      ON CONFLICT (job_id) DO UPDATE SET
        recipe = excluded.recipe, config = excluded.config, output_folder = excluded.output_folder,
        output_file = excluded.output_file, command_line = excluded.command_line,
        submit_time = excluded.submit_time)sql")
        .Bind(":job_id", job.job_id)
        .Bind(":recipe", job.recipe)
        .Bind(":config", job.config)
        .Bind(":output_folder", job.output_folder)
        .Bind(":output_file", job.output_file)
        .Bind(":command_line", job.command_line)
        .Bind(":now", NowUtc())
        .Run();
  });
}

std::vector<SlurmJobRecord> Database::UnclaimedSlurmJobs() {
  std::vector<SlurmJobRecord> jobs;
  Read("UnclaimedSlurmJobs", [&] {
    jobs.clear();
    Statement stmt(*conn_, R"sql(
      SELECT job_id, recipe, config, output_folder, output_file, command_line, submit_time
      FROM slurm_jobs AS j
      WHERE NOT EXISTS (SELECT 1 FROM runs WHERE runs.slurm_job_id = j.job_id)
      ORDER BY submit_time DESC, job_id DESC)sql");
    while (stmt.Step()) {
      SlurmJobRecord job;
      job.job_id = stmt.Int(0);
      job.recipe = stmt.Text(1);
      job.config = stmt.Text(2);
      job.output_folder = stmt.Text(3);
      job.output_file = stmt.Text(4);
      job.command_line = stmt.Text(5);
      job.submit_time = stmt.Text(6);
      jobs.push_back(std::move(job));
    }
  });
  return jobs;
}

std::vector<RunRow> Database::ListRuns(const RunFilter& filter) {
  return QueryRuns(filter, std::nullopt);
}

std::optional<RunRow> Database::GetRun(std::int64_t run_id) {
  auto rows = QueryRuns({}, run_id);
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());
}

namespace {

// Every result matching the filters, newest first (columns as ReadResultRow reads them).
constexpr std::string_view kResultsSql = R"sql(
  SELECT r.id, r.run_id, runs.recipe, runs.config, r.epoch, r.trial_list, r.eer, r.min_dcf,
         r.p_target, r.c_miss, r.c_fa, r.n_target, r.n_nontarget, r.recorded_time, r.stage,
         r.cllr, r.min_cllr
  FROM results AS r JOIN runs ON runs.id = r.run_id
  WHERE (CAST(:recipe AS TEXT) IS NULL OR runs.recipe = :recipe)
    AND (CAST(:config AS TEXT) IS NULL OR runs.config = :config)
    AND (CAST(:trial_list AS TEXT) IS NULL OR r.trial_list = :trial_list)
    AND (CAST(:run_id AS BIGINT) IS NULL OR r.run_id = :run_id)
    AND (CAST(:stage AS BIGINT) IS NULL OR r.stage = :stage)
  ORDER BY r.id DESC
  LIMIT :limit)sql";

// The best result of each (recipe, config, trial list) without reading every result: one seek in
// index results(run_id, trial_list, eer, id DESC, stage) (schema version 4) per (run, trial list).
//   names  the distinct trial lists, skipping from one to the next in results(trial_list, eer)
//          (a loose index scan; SQLite's GROUP BY/DISTINCT would read every entry)
//   best   per matching run and name: the first non-NULL EER in (eer, id DESC) order, that is the
//          lowest EER and among ties the latest; only when there is none, the latest NaN (NULL)
//          EER. Pairs without results give NULL. MATERIALIZED: inlined, SQLite would evaluate the
//          subqueries again for every reference to their value. {indexed}: INDEXED BY on SQLite
//          (Dialect::IndexedBy), since with sqlite_stat1 the planner may prefer
//          results(trial_list, eer), a scan over every run's results.
//   ranked the best of the runs of each config, with the same ordering rule
constexpr std::string_view kBestPerConfigSql = R"sql(
  WITH RECURSIVE
    names(trial_list) AS (
      SELECT COALESCE(:trial_list, (SELECT MIN(trial_list) FROM results))
      UNION ALL
      SELECT (SELECT MIN(trial_list) FROM results WHERE results.trial_list > names.trial_list)
      FROM names WHERE CAST(:trial_list AS TEXT) IS NULL AND names.trial_list IS NOT NULL),
    best AS MATERIALIZED (
      SELECT COALESCE(
               (SELECT id FROM results {indexed}
                WHERE run_id = runs.id AND trial_list = names.trial_list AND eer IS NOT NULL
                  AND (CAST(:stage AS BIGINT) IS NULL OR stage = :stage)
                ORDER BY eer, id DESC LIMIT 1),
               (SELECT MAX(id) FROM results {indexed}
                WHERE run_id = runs.id AND trial_list = names.trial_list AND eer IS NULL
                  AND (CAST(:stage AS BIGINT) IS NULL OR stage = :stage))) AS id
      FROM runs CROSS JOIN names
      WHERE names.trial_list IS NOT NULL
        AND (CAST(:recipe AS TEXT) IS NULL OR runs.recipe = :recipe)
        AND (CAST(:config AS TEXT) IS NULL OR runs.config = :config)
        AND (CAST(:run_id AS BIGINT) IS NULL OR runs.id = :run_id)),
    ranked AS (
      SELECT r.id, r.run_id, runs.recipe, runs.config, r.epoch, r.trial_list, r.eer, r.min_dcf,
             r.p_target, r.c_miss, r.c_fa, r.n_target, r.n_nontarget, r.recorded_time, r.stage,
             r.cllr, r.min_cllr,
             ROW_NUMBER() OVER (PARTITION BY runs.recipe, runs.config, r.trial_list
                                ORDER BY r.eer IS NULL, r.eer ASC, r.id DESC) AS rank
      FROM best JOIN results AS r ON r.id = best.id JOIN runs ON runs.id = r.run_id)
  SELECT id, run_id, recipe, config, epoch, trial_list, eer, min_dcf, p_target, c_miss, c_fa,
         n_target, n_nontarget, recorded_time, stage, cllr, min_cllr
  FROM ranked
  WHERE rank = 1
  ORDER BY recipe, config, trial_list
  LIMIT :limit)sql";

}  // namespace

std::vector<ResultRow> Database::Results(const ResultFilter& filter) {
  std::vector<ResultRow> rows;
  Read("Results", [&] {
    rows.clear();
    const std::string best_sql =
        fmt::format(kBestPerConfigSql, fmt::arg("indexed", conn_->dialect().IndexedBy("results_run_trial_list_eer")));
    Statement stmt(*conn_, filter.best_per_config ? std::string_view(best_sql) : kResultsSql);
    stmt.Bind(":recipe", filter.recipe)
        .Bind(":config", filter.config)
        .Bind(":trial_list", filter.trial_list)
        .Bind(":run_id", filter.run_id)
        .Bind(":stage", filter.stage)
        .Bind(":limit", filter.limit > 0 ? filter.limit : kNoLimit);
    while (stmt.Step()) rows.push_back(ReadResultRow(stmt));
    // The costs of each row, in recording order: one seek in the (result_id, ...) index per result.
    Statement costs(*conn_, fmt::format("SELECT {} FROM result_costs WHERE result_id = :id ORDER BY id",
                                     kCostColumns));
    for (ResultRow& row : rows) {
      costs.Reset();
      costs.Bind(":id", row.id);
      while (costs.Step()) row.record.costs.push_back(ReadCostRecord(costs));
    }
  });
  return rows;
}

std::vector<EpochRow> Database::Epochs(std::int64_t run_id) {
  std::vector<EpochRow> rows;
  Read("Epochs", [&] {
    rows.clear();
    Statement stmt(*conn_, fmt::format("SELECT {} FROM epochs WHERE run_id = :run_id ORDER BY epoch",
                                    kEpochColumns));
    stmt.Bind(":run_id", run_id);
    while (stmt.Step()) rows.push_back(ReadEpochRow(stmt));
  });
  return rows;
}

std::vector<ProgressRow> Database::ProgressRows(const std::vector<std::int64_t>& run_ids) {
  std::vector<ProgressRow> rows;
  Read("ProgressRows", [&] {
    rows.clear();
    if (run_ids.empty()) {
      Statement stmt(*conn_, fmt::format("SELECT {} FROM progress ORDER BY run_id, rank", kProgressColumns));
      while (stmt.Step()) rows.push_back(ReadProgressRow(stmt));
      return;
    }
    Statement stmt(*conn_, fmt::format("SELECT {} FROM progress WHERE run_id = :run_id ORDER BY rank",
                                    kProgressColumns));
    std::vector<std::int64_t> ids = run_ids;
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    for (const std::int64_t id : ids) {
      stmt.Reset();
      stmt.Bind(":run_id", id);
      while (stmt.Step()) rows.push_back(ReadProgressRow(stmt));
    }
  });
  return rows;
}

std::vector<StageRow> Database::Stages(std::int64_t run_id) {
  std::vector<StageRow> rows;
  Read("Stages", [&] {
    rows.clear();
    Statement stmt(*conn_, fmt::format("SELECT {} FROM stages WHERE run_id = :run_id ORDER BY id",
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
    Statement stmt(*conn_, fmt::format("SELECT {} FROM artifacts WHERE run_id = :run_id ORDER BY id",
                                    kArtifactColumns));
    stmt.Bind(":run_id", run_id);
    while (stmt.Step()) rows.push_back(ReadArtifactRow(stmt));
  });
  return rows;
}

std::optional<std::string> Database::RecordedChecksum(const std::string& path) {
  std::optional<std::string> checksum;
  Read("RecordedChecksum", [&] {
    checksum.reset();
    Statement stmt(*conn_,
                   "SELECT checksum FROM artifacts WHERE path = :path AND checksum != '' ORDER BY id DESC LIMIT 1");
    stmt.Bind(":path", path);
    if (stmt.Step()) checksum = stmt.Text(0);
  });
  return checksum;
}

}  // namespace asv::db
