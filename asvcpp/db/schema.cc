#include "asvcpp/db/schema.h"

namespace asv::db {
namespace {

constexpr std::string_view kV1Tables = R"sql(
CREATE TABLE runs (
  id              INTEGER PRIMARY KEY,
  recipe          TEXT    NOT NULL,
  config          TEXT    NOT NULL,
  parent_chain    TEXT    NOT NULL DEFAULT '[]',   -- JSON array of block names
  settings_json   TEXT    NOT NULL DEFAULT '',
  settings_hash   TEXT    NOT NULL DEFAULT '',
  command_line    TEXT    NOT NULL DEFAULT '',
  host            TEXT    NOT NULL DEFAULT '',
  pid             INTEGER NOT NULL DEFAULT 0,
  process_start   INTEGER NOT NULL DEFAULT 0,      -- clock ticks since boot, /proc/<pid>/stat
  boot_id         TEXT    NOT NULL DEFAULT '',
  pid_namespace   TEXT    NOT NULL DEFAULT '',
  gpu_ids         TEXT    NOT NULL DEFAULT '[]',   -- JSON array of ints
  world_size      INTEGER NOT NULL DEFAULT 1,
  code_version    TEXT    NOT NULL DEFAULT '',
  output_folder   TEXT    NOT NULL DEFAULT '',
  status          TEXT    NOT NULL DEFAULT 'running'
                  CHECK (status IN ('running', 'finished', 'failed', 'crashed')),
  start_time      TEXT    NOT NULL,
  end_time        TEXT,
  heartbeat_time  TEXT    NOT NULL,
  error_text      TEXT
);

CREATE TABLE stages (
  id          INTEGER PRIMARY KEY,
  run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  stage       INTEGER NOT NULL,
  name        TEXT    NOT NULL,
  status      TEXT    NOT NULL DEFAULT 'running'
              CHECK (status IN ('running', 'finished', 'failed', 'crashed')),
  start_time  TEXT    NOT NULL,
  end_time    TEXT,
  error_text  TEXT
);

CREATE TABLE epochs (
  id                 INTEGER PRIMARY KEY,
  run_id             INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch              INTEGER NOT NULL,
  loss               REAL,               -- NULL stands for NaN
  accuracy           REAL,               -- percent
  learning_rate      REAL,
  seconds            REAL,
  frames_per_second  REAL,
  val_loss           REAL,
  val_accuracy       REAL,               -- percent
  recorded_time      TEXT    NOT NULL,
  UNIQUE (run_id, epoch)
);

CREATE TABLE results (
  id             INTEGER PRIMARY KEY,
  run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch          INTEGER,
  trial_list     TEXT    NOT NULL,
  eer            REAL,                   -- percent; NULL stands for NaN
  min_dcf        REAL,
  p_target       REAL,
  c_miss         REAL,
  c_fa           REAL,
  n_target       INTEGER NOT NULL,
  n_nontarget    INTEGER NOT NULL,
  recorded_time  TEXT    NOT NULL
);

CREATE TABLE artifacts (
  id             INTEGER PRIMARY KEY,
  run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  stage_id       INTEGER REFERENCES stages(id) ON DELETE SET NULL,
  path           TEXT    NOT NULL,
  kind           TEXT    NOT NULL,
  checksum       TEXT    NOT NULL DEFAULT '',
  bytes          INTEGER NOT NULL DEFAULT 0,
  recorded_time  TEXT    NOT NULL
);
)sql";

// Indexes for the listing queries (asvrun runs/results) and the foreign keys of child tables.
constexpr std::string_view kV2Indexes = R"sql(
CREATE INDEX runs_recipe_config ON runs(recipe, config);
CREATE INDEX runs_status_host ON runs(status, host);
CREATE INDEX stages_run ON stages(run_id);
CREATE INDEX results_run ON results(run_id);
CREATE INDEX results_trial_list ON results(trial_list, eer);
CREATE INDEX artifacts_run ON artifacts(run_id);
CREATE INDEX artifacts_stage ON artifacts(stage_id);
)sql";

// The recipe stage that produced a result (voxceleb/xvector: 5 = evaluation during training on
// the small PLDA set, 9 = final scoring), so that the two can be told apart.
constexpr std::string_view kV3ResultStage = R"sql(
ALTER TABLE results ADD COLUMN stage INTEGER;
)sql";

// "Best EER per config" (Database::Results with best_per_config): the first entry of a
// (run_id, trial_list) prefix with a non-NULL EER is the lowest EER and, among equal EERs, the
// latest result (id DESC), so each (run, trial list) costs one seek instead of reading all its
// results. stage makes it covering for the `--stage` filter. It starts with run_id, so
// results_run (run_id) is redundant (also for ON DELETE CASCADE) and goes: still one index to
// update per insert.
constexpr std::string_view kV4BestEerIndex = R"sql(
CREATE INDEX results_run_trial_list_eer ON results(run_id, trial_list, eer, id DESC, stage);
DROP INDEX results_run;
)sql";

// The share of each epoch's training time that the training step waited for the data loader
// (percent, 0-100; NULL for epochs recorded before version 5): a data-loading bottleneck shows in
// the database, not only in the trainer's log.
constexpr std::string_view kV5EpochDataWait = R"sql(
ALTER TABLE epochs ADD COLUMN data_wait_percent REAL;
)sql";

// Every metric of a result (schema version 6): Cllr and minCllr of the scores read as LLRs (bits),
// and minDCF and actDCF at every operating point the back end evaluated, not only at the
// p_target in results.min_dcf.
constexpr std::string_view kV6ResultMetrics = R"sql(
ALTER TABLE results ADD COLUMN cllr REAL;
ALTER TABLE results ADD COLUMN min_cllr REAL;
CREATE TABLE result_costs (
  id         INTEGER PRIMARY KEY,
  result_id  INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
  p_target   REAL    NOT NULL,
  c_miss     REAL    NOT NULL,
  c_fa       REAL    NOT NULL,
  min_dcf    REAL,
  act_dcf    REAL,
  UNIQUE (result_id, p_target, c_miss, c_fa)
);
)sql";

// The progress of running runs (schema version 7): one row per (run, rank), replaced every few
// seconds by the run's progress reporter (asvcpp/db/progress_reporter.h) with what base::Progress
// last published, so that `asvrun runs --running` shows stage, done/total, rate and ETA from
// another shell. Rows stay after the run ends (the last progress of a crashed run).
constexpr std::string_view kV7Progress = R"sql(
CREATE TABLE progress (
  run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank          INTEGER NOT NULL,
  stage         TEXT    NOT NULL DEFAULT '',
  what          TEXT    NOT NULL DEFAULT '',
  done          INTEGER NOT NULL DEFAULT 0,
  total         INTEGER,                         -- NULL: unknown
  unit          TEXT    NOT NULL DEFAULT '',
  rate          REAL,                            -- items per second; NULL: unknown
  eta_seconds   REAL,                            -- NULL: unknown
  updated_time  TEXT    NOT NULL,
  PRIMARY KEY (run_id, rank)
);
)sql";

// SLURM (schema version 8): the batch job a run executed in (SLURM_JOB_ID and, for job arrays,
// SLURM_ARRAY_TASK_ID; NULL outside SLURM), and the jobs `asvrun --slurm` submitted, so that a job
// that has not started yet shows as pending and a run whose process is gone can be explained by
// what SLURM did to its job. A submitted job is taken over by the run that records its job id.
constexpr std::string_view kV8Slurm = R"sql(
ALTER TABLE runs ADD COLUMN slurm_job_id INTEGER;
ALTER TABLE runs ADD COLUMN slurm_array_task_id INTEGER;
CREATE INDEX runs_slurm_job ON runs(slurm_job_id) WHERE slurm_job_id IS NOT NULL;
CREATE TABLE slurm_jobs (
  job_id         INTEGER PRIMARY KEY,
  recipe         TEXT    NOT NULL,
  config         TEXT    NOT NULL,
  output_folder  TEXT    NOT NULL DEFAULT '',
  output_file    TEXT    NOT NULL DEFAULT '',   -- the job's stdout and stderr (sbatch --output)
  command_line   TEXT    NOT NULL DEFAULT '',   -- the asvrun command the job runs, shell-quoted
  submit_time    TEXT    NOT NULL
);
)sql";

}  // namespace

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> migrations = {
      {1, "tables runs, stages, epochs, results, artifacts", kV1Tables},
      {2, "indexes for listing and foreign keys", kV2Indexes},
      {3, "results.stage: the stage that produced a result", kV3ResultStage},
      {4, "index results(run_id, trial_list, eer, id DESC, stage) for best EER per config", kV4BestEerIndex},
      {5, "epochs.data_wait_percent: share of the epoch the training step waited for data", kV5EpochDataWait},
      {6, "results.cllr, results.min_cllr and table result_costs (minDCF and actDCF per p_target)",
       kV6ResultMetrics},
      {7, "table progress: the current progress of each rank of a running run", kV7Progress},
      {8, "runs.slurm_job_id, runs.slurm_array_task_id and table slurm_jobs (submitted SLURM jobs)", kV8Slurm},
  };
  return migrations;
}

int LatestSchemaVersion() { return Migrations().back().version; }

}  // namespace asv::db
