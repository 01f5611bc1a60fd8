// Schema of the experiment database and its ordered migrations.
//
// The schema version lives in `PRAGMA user_version` (PostgreSQL: asvcpp_schema.version).
// Migration i (1-based) upgrades a database from version i-1 to version i; Database applies the
// missing ones in order, each in its own write transaction (SQLite: BEGIN IMMEDIATE) that also sets
// the version, so a crash or a concurrent opener never sees a half-migrated database. The SQL is
// SQLite's; on PostgreSQL it runs as Dialect::TranslateDdl (dialect.h) rewrites it. Never edit a
// released migration: append a new one.
//
// Tables (all times are UTC ISO-8601 text, see timestamp.h):
//   runs       one row per `asvrun RECIPE CONFIG` execution (identity, settings, status, times)
//   stages     one row per stage execution of a run
//   epochs     one row per (run, epoch) of network training; re-recording an epoch replaces it
//   results    one row per evaluation (trial list, EER in percent, minDCF and its parameters)
//   artifacts  files a run produced (path, kind, checksum, size)
//   progress   the current progress of each rank of a run (stage, done/total, rate, ETA)
//   slurm_jobs batch jobs submitted by `asvrun --slurm` (job id, recipe, config, output file)
//
// Versions: 1 tables; 2 indexes for listings and foreign keys; 3 results.stage; 4 index
// results(run_id, trial_list, eer, id DESC, stage) replacing results(run_id), which serves "best
// EER per config" with one index seek per (run, trial list) (see Database::Results); 5
// epochs.data_wait_percent, the share of an epoch the training step waited for data (NULL for
// epochs recorded before); 6 results.cllr, results.min_cllr and result_costs; 7 progress, one
// row per (run, rank) with the stage, done/total, rate and ETA last reported; 8 runs.slurm_job_id,
// runs.slurm_array_task_id (NULL outside SLURM) and slurm_jobs. Building the version-4 index on
// an existing database reads every result once (a few seconds per million rows) while holding the
// write lock; other writers wait for it (DatabaseOptions::retry_limit).
#pragma once

#include <string_view>
#include <vector>

namespace asv::db {

/// One migration: the SQL that moves the schema from `version - 1` to `version`.
struct Migration {
  int version;
  std::string_view description;
  std::string_view sql;  ///< One or more statements; executed inside the migration transaction.
};

/// All migrations in order; Migrations()[i].version == i + 1.
const std::vector<Migration>& Migrations();

/// The newest schema version this build knows (Migrations().back().version).
int LatestSchemaVersion();

}  // namespace asv::db
