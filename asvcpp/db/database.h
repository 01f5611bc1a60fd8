// The experiment database: one SQLite file per output folder, or one database on a PostgreSQL
// server shared by many jobs on many nodes, recording runs, stages, training epochs, evaluation
// results and artifacts.
//
//   asv::db::Database db(asv::db::Database::DefaultPath(output_folder));
//   asv::db::RunInfo info{...};
//   const std::int64_t run = db.BeginRun(info);            // status 'running'
//   asv::db::RunHeartbeat heartbeat(db.path(), run);        // keeps heartbeat_time fresh
//   asv::db::EpochRecord epoch;  epoch.epoch = 1;  epoch.loss = 3.2;  ...
//   db.RecordEpoch(run, epoch);                             // again for the same epoch: replaced
//   asv::db::ResultRecord result;  result.trial_list = "voxceleb1_o";  result.eer = 2.31;  ...
//   db.RecordResult(run, result);
//   db.FinishRun(run, asv::db::RunStatus::kFinished);
//
// Reading only: DatabaseOptions::read_only opens an existing file with SQLITE_OPEN_READONLY (a
// file of another user, a read-only folder or mount) and never creates, migrates, stamps or
// switches it to WAL; asvrun's listing commands (runs, results, epochs, diff) open it so.
//
// Ownership: a database this library creates carries PRAGMA application_id = kApplicationId. A
// file that has tables but neither that id nor asvcpp's tables (another application's SQLite
// file that happens to be called experiments.db) is refused with DbError and left untouched; an
// asvcpp database created before the id existed is recognised by its tables and stamped.
//
// Concurrency: many processes may open the same file at once (also while it is being created and
// migrated). The file is in WAL mode, so readers never block the single writer; every write is
// one short BEGIN IMMEDIATE transaction. SQLITE_BUSY/SQLITE_LOCKED are first waited out by
// SQLite's busy handler (DatabaseOptions::busy_timeout per attempt), then the whole transaction is
// retried with exponential backoff and jitter until DatabaseOptions::retry_limit has passed, after
// which DbBusyError (a DbError) is thrown. WAL needs shared memory, so the file must be on a local
// file system (not NFS).
//
// A Database object is one connection (SQLite or libpq): use it from one thread at a time, and
// never across fork() (open a new one in the child). Errors: every public member throws
// asv::DbError whose message names the database (path, or URI without password), the operation and
// the store's error text.
//
// Schema and columns: see schema.h; all times are UTC ISO-8601 text (timestamp.h).
//
// PostgreSQL: a location that is a libpq connection URI (postgresql://user@host:port/dbname,
// IsPostgresUri) instead of a file path opens that database on a PostgreSQL server, with the same
// tables, migrations and members (one implementation of every query over connection.h; the SQL
// that differs is in dialect.h). There every write transaction takes one advisory lock, so writers
// take turns as on SQLite and TryBeginRun stays atomic; reads run in REPEATABLE READ snapshots and
// never wait for writers. The schema version and the asvcpp mark live in table asvcpp_schema
// instead of PRAGMA user_version and application_id; a database with tables but neither that
// table nor asvcpp's is refused. busy_timeout is the session's lock_timeout (how long a writer
// waits for that lock before Retry's backoff); the options that concern SQLite files
// (max_page_count, the network file system check) do nothing there; read_only opens a session
// with default_transaction_read_only. Messages name the URI without its password.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "asvcpp/db/dialect.h"
#include "asvcpp/db/location.h"
#include "asvcpp/db/run_info.h"

struct sqlite3;

namespace asv::db {

class Connection;

/// How SLURM says a job ended (DatabaseOptions::slurm_job_end).
struct SlurmJobEnd {
  /// kFailed: SLURM ended the job (cancelled, timed out, out of memory, node failure,
  /// preempted); kCrashed: it ended otherwise without asvrun recording the run's end.
  RunStatus status = RunStatus::kFailed;
  std::string reason;  ///< e.g. "cancelled by SLURM (job 12: JobState=CANCELLED Reason=None)"
};

/// Tuning of one connection. Defaults suit many asvrun processes sharing one output folder.
/// Whether the environment variable ASV_DB_ALLOW_NETWORK_FS is "1" (DatabaseOptions).
bool AllowNetworkFileSystemByDefault();

struct DatabaseOptions {
  /// How long SQLite itself waits for a lock before a statement returns SQLITE_BUSY.
  std::chrono::milliseconds busy_timeout{5000};
  /// Total time one operation keeps retrying a busy/locked transaction before DbError.
  std::chrono::milliseconds retry_limit{60000};
  /// A 'running' run of a process this host cannot check (another host, container or boot) is
  /// reported as crashed when its heartbeat_time is older than this.
  std::chrono::seconds stale_heartbeat{600};
  /// For tests of migrations only: when > 0, stop migrating at this schema version.
  int max_schema_version = 0;
  /// Open an existing database for reading only (SQLITE_OPEN_READONLY): nothing is created,
  /// migrated, stamped or switched to WAL, MarkCrashedRuns() persists nothing (runs whose local
  /// process is gone are reported crashed with status_inferred), and every writing member
  /// throws DbError ("attempt to write a readonly database"). A WAL database whose -shm file
  /// cannot be created (a read-only folder or mount without one) is opened with SQLite's
  /// `immutable=1` instead, which reads the main file only: nobody can be writing it there, since a
  /// writer needs that -shm file too. The schema must be at LatestSchemaVersion(), since an older
  /// one cannot be upgraded read-only (opening it once for writing does that).
  bool read_only = false;
  /// When > 0, PRAGMA max_page_count for this connection: the file cannot grow beyond this many
  /// pages and writes that need more fail as on a full disk (SQLITE_FULL). For tests.
  std::int64_t max_page_count = 0;
  /// A writable open of a database on a network file system (file_system.h: NFS, SMB/CIFS,
  /// Lustre, GPFS, BeeGFS, CephFS, 9p, network FUSE mounts), where SQLite's locks are unreliable
  /// and WAL does not work, is refused (DbError naming the file system) unless this is true; then
  /// the database is used with a rollback journal (journal_mode=DELETE) instead of WAL, at the
  /// user's risk. Default: true when the environment variable ASV_DB_ALLOW_NETWORK_FS is "1".
  /// Read-only opens are never refused.
  bool allow_network_file_system = AllowNetworkFileSystemByDefault();
  /// The network file system a path is on (nullopt: local). Empty: db::NetworkFileSystem. For
  /// tests, which cannot mount one.
  std::function<std::optional<std::string>(const std::filesystem::path&)> file_system_probe;
  /// When set, asked about a 'running' run recorded inside a SLURM job (RunInfo::slurm_job_id)
  /// whose process is gone or cannot be checked from this host: how SLURM says the job ended.
  /// A kFailed answer (SLURM cancelled it, its time limit passed, it ran out of memory, its node
  /// failed) makes the run failed with the answer's reason instead of crashed: persisted by
  /// MarkCrashedRuns, inferred (RunRow::status_inferred) by ListRuns and GetRun for runs of other
  /// hosts and on read-only opens. nullopt: the job is still pending or running, or SLURM cannot
  /// be asked; then crash detection works as without SLURM. The database layer runs no SLURM
  /// command itself (asvrun passes tools/asvrun/slurm.h's JobEnd). Must not throw.
  std::function<std::optional<SlurmJobEnd>(std::int64_t job_id)> slurm_job_end;
};

/// PRAGMA application_id of an asvcpp experiment database ("ASVC").
inline constexpr std::int32_t kApplicationId = 0x41535643;

/// One training epoch. Accuracies are percentages (0-100). NaN values are stored as NULL and read
/// back as NaN (val_* as nullopt).
struct EpochRecord {
  int epoch = 0;                  ///< 1-based epoch number.
  double loss = 0;                ///< Mean training loss over the epoch.
  double accuracy = 0;            ///< Training classification accuracy, percent.
  double learning_rate = 0;       ///< Learning rate used in the epoch.
  double seconds = 0;             ///< Wall-clock duration of the epoch, seconds.
  double frames_per_second = 0;   ///< Training throughput in feature frames per second.
  std::optional<double> val_loss;      ///< Validation loss, when computed.
  std::optional<double> val_accuracy;  ///< Validation accuracy, percent, when computed.
  /// Percent (0-100) of the epoch's training time that the training step waited for the data
  /// loader (rank 0); nullopt when not measured (rows recorded before schema version 5).
  std::optional<double> data_wait_percent;
};

/// The detection costs of a result at one operating point (normalised as min_dcf below).
struct CostRecord {
  double p_target = 0.05;
  double c_miss = 1;
  double c_fa = 1;
  double min_dcf = 0;              ///< Normalised minimum detection cost.
  std::optional<double> act_dcf;   ///< Normalised actual cost of the scores read as LLRs.
};

/// One evaluation of a system on a trial list. minDCF follows the NIST SRE definition
/// (normalised by min(c_miss * p_target, c_fa * (1 - p_target))).
struct ResultRecord {
  std::optional<int> epoch;  ///< Network epoch the embeddings came from; nullopt for final/none.
  std::string trial_list;    ///< Name of the trial list, e.g. "voxceleb1_o".
  double eer = 0;            ///< Equal error rate, percent (0-100).
  double min_dcf = 0;        ///< Normalised minimum detection cost.
  double p_target = 0.01;    ///< Prior of a target trial used for min_dcf.
  double c_miss = 1;         ///< Cost of a miss used for min_dcf.
  double c_fa = 1;           ///< Cost of a false alarm used for min_dcf.
  std::int64_t n_target = 0;     ///< Number of target trials scored.
  std::int64_t n_nontarget = 0;  ///< Number of non-target trials scored.
  std::optional<int> stage;      ///< Recipe stage that produced it (e.g. 5 training, 9 scoring).
  std::optional<double> cllr;      ///< Cllr of the scores read as LLRs, bits (asvcpp/eval/llr_metrics.h).
  std::optional<double> min_cllr;  ///< minCllr, bits.
  /// minDCF (and actDCF) at every operating point evaluated, in the order recorded; usually the
  /// first is (p_target, c_miss, c_fa) above. Operating points must be distinct.
  std::vector<CostRecord> costs;
};

/// A file produced by a run.
struct ArtifactRecord {
  std::optional<std::int64_t> stage_id;  ///< Stage row (BeginStage) that produced it, if known.
  std::string path;                      ///< Path as written (absolute or relative to output).
  std::string kind;                      ///< e.g. "checkpoint", "embeddings", "scores".
  std::string checksum;                  ///< e.g. "sha256:<hex>"; "" when not computed.
  std::int64_t bytes = 0;                ///< File size in bytes.
};

/// What one process (rank) of a running run last reported of its progress (table `progress`,
/// schema version 7; asvcpp/db/progress_reporter.h writes it every few seconds).
struct ProgressRecord {
  std::string stage;                   ///< Stage being run, e.g. "5 train"; "" when not known.
  std::string what;                    ///< What is counted, e.g. "epoch 3/20" or "voxceleb1".
  std::int64_t done = 0;               ///< Items done.
  std::optional<std::int64_t> total;   ///< Items in all; nullopt when unknown.
  std::string unit;                    ///< Name of an item: "utt", "batches", "lists".
  std::optional<double> rate;          ///< Smoothed rate, items per second; nullopt when unknown.
  std::optional<double> eta_seconds;   ///< Seconds left at that rate; nullopt when unknown.
};

/// A row of `progress`: one per (run, rank), replaced by every update.
struct ProgressRow {
  std::int64_t run_id = 0;
  int rank = 0;
  ProgressRecord record;
  std::string updated_time;  ///< UTC ISO-8601 of the last update.
};

/// A row of `runs`.
struct RunRow {
  std::int64_t id = 0;
  RunInfo info;
  /// Status as reported: the stored status, except that a 'running' run whose process this host
  /// cannot check and whose heartbeat is stale is reported as kCrashed (see status_inferred).
  RunStatus status = RunStatus::kRunning;
  /// True when `status` is kCrashed only because of a stale heartbeat (or a gone local process on
  /// a read-only open), or kFailed only because SLURM says it ended the run's job
  /// (DatabaseOptions::slurm_job_end); the stored status is still 'running' (the run may come
  /// back, e.g. after a network partition).
  bool status_inferred = false;
  std::string start_time;                 ///< UTC ISO-8601.
  /// UTC ISO-8601; nullopt while running. For a crashed run (stored or inferred) the time of its
  /// last sign of life, heartbeat_time: the run died between that and the next heartbeat.
  std::optional<std::string> end_time;
  /// UTC ISO-8601 of the last sign of life: the run's last heartbeat (RunHeartbeat, every 10 s in
  /// asvrun) or its last write (stage, epoch, result, artifact), whichever is later.
  std::string heartbeat_time;
  std::optional<std::string> error_text;  ///< Failure or crash description.
};

/// A batch job submitted by `asvrun --slurm` (table slurm_jobs, schema version 8). The run that
/// executes it records the same job id (RunInfo::slurm_job_id) and so takes it over.
struct SlurmJobRecord {
  std::int64_t job_id = 0;     ///< SLURM's job id (sbatch --parsable).
  std::string recipe;
  std::string config;
  std::string output_folder;   ///< paths.output_folder of the config.
  std::string output_file;     ///< The job's stdout and stderr (sbatch --output, %j expanded).
  std::string command_line;    ///< The asvrun command the job runs, shell-quoted.
  std::string submit_time;     ///< UTC ISO-8601; set by RecordSlurmJob.
};

/// A row of `stages`.
struct StageRow {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  int stage = 0;             ///< Stage number within the recipe.
  std::string name;          ///< Stage name, e.g. "features".
  RunStatus status = RunStatus::kRunning;
  std::string start_time;
  std::optional<std::string> end_time;
  std::optional<std::string> error_text;
};

/// A row of `epochs`.
struct EpochRow {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  EpochRecord record;
  std::string recorded_time;
};

/// A row of `results` joined with the recipe and config of its run.
struct ResultRow {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  std::string recipe;
  std::string config;
  ResultRecord record;
  std::string recorded_time;
};

/// A row of `artifacts`.
struct ArtifactRow {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  ArtifactRecord record;
  std::string recorded_time;
};

/// Selection for Database::ListRuns; unset fields match everything.
struct RunFilter {
  std::optional<std::string> recipe;
  std::optional<std::string> config;
  std::optional<RunStatus> status;  ///< Compared with the reported (possibly inferred) status.
  int limit = 0;                    ///< At most this many rows (newest first); 0 = no limit.
};

/// Selection for Database::Results; unset fields match everything.
struct ResultFilter {
  std::optional<std::string> recipe;
  std::optional<std::string> config;
  std::optional<std::string> trial_list;
  std::optional<std::int64_t> run_id;
  std::optional<int> stage;  ///< Only results recorded by this stage.
  /// Keep only the lowest-EER result of each (recipe, config, trial_list) among the rows matching
  /// the other filters ("best EER per config", `asvrun results --best`); among equal EERs the
  /// latest recorded (largest id) wins, and a NaN EER only when the group has nothing else.
  /// Results of runs of every status count, failed, crashed and still running ones included: a
  /// result is recorded once its evaluation finished, so its EER measures a checkpoint that
  /// exists whatever happened to the run later. Cost: about two B-tree seeks per (matching run,
  /// trial list name in the database), not a read of every result; a `stage` filter also reads,
  /// per pair, the index entries of other stages with a lower EER.
  bool best_per_config = false;
  int limit = 0;  ///< At most this many rows; 0 = no limit.
};

/// The lowest minDCF at one operating point among the results of a (recipe, config, trial list).
struct BestCost {
  double p_target = 0;
  double c_miss = 1;
  double c_fa = 1;
  double min_dcf = 0;          ///< Lowest normalised minDCF at this point.
  std::int64_t run_id = 0;     ///< A run whose result has it.
};

/// Aggregate of the results of one (recipe, config, trial list) (Database::ResultSummary).
struct ResultSummaryRow {
  std::string recipe;
  std::string config;
  std::string trial_list;
  /// Lowest EER, percent (the row `asvrun results --best` shows); nullopt when every EER is NaN.
  std::optional<double> best_eer;
  std::int64_t best_eer_run_id = 0;     ///< Run of that result.
  std::int64_t best_eer_result_id = 0;  ///< The result's id.
  /// Lowest minDCF at every operating point any of the results was evaluated at, ordered by
  /// p_target descending, then c_miss, c_fa.
  std::vector<BestCost> best_costs;
};

/// Lowest EER of one run on one trial list at one training epoch (Database::EpochEers).
struct EpochEer {
  std::int64_t run_id = 0;
  std::string trial_list;
  int epoch = 0;
  double eer = 0;  ///< Percent; NaN when recorded as NaN.
};

/// One connection to an experiment database file. Movable, not copyable.
class Database {
 public:
  /// `output_folder`/experiments.db: the default database of an output folder.
  static std::filesystem::path DefaultPath(const std::filesystem::path& output_folder);

  /// Opens `path`, creating it and its parent folders if missing, switches it to WAL mode, sets
  /// foreign_keys=ON, synchronous=NORMAL and the busy timeout, applies missing migrations and
  /// stamps application_id. With options.read_only: opens the existing file for reading only and
  /// changes nothing (see DatabaseOptions::read_only). Throws DbError (naming `path`) if the file
  /// cannot be created or opened (read_only: does not exist), is not an SQLite database, is not
  /// an asvcpp experiment database (another application_id, or tables but not asvcpp's: the file
  /// is left untouched), has a schema version newer than LatestSchemaVersion() (read_only: or
  /// older), or cannot be migrated.
  ///
  /// A libpq connection URI as `path` (IsPostgresUri) connects to that PostgreSQL database
  /// instead, creates the tables or applies missing migrations and marks it as asvcpp's (table
  /// asvcpp_schema). Throws DbError naming the URI without its password if the server cannot be
  /// reached or refuses the login, the database has tables but is not asvcpp's, its schema is
  /// newer than this build's (read_only: or older or missing), or it cannot be migrated.
  explicit Database(const std::filesystem::path& path, DatabaseOptions options = {});
  ~Database();
  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  /// The file path or connection URI the database was opened with.
  const std::filesystem::path& path() const { return path_; }
  /// The path, or the URI without its password: how messages name the database.
  const std::string& location() const { return location_; }
  /// Which store the database is in (Engine::kSqlite or Engine::kPostgres).
  Engine engine() const;
  const DatabaseOptions& options() const { return options_; }
  /// Changes how long one operation keeps retrying while another process holds the database
  /// lock (DatabaseOptions::retry_limit) before it throws DbBusyError.
  void set_retry_limit(std::chrono::milliseconds limit) { options_.retry_limit = limit; }

  /// Inserts a run with status 'running' and start_time = heartbeat_time = now. When info.pid is
  /// 0, host/pid/process_start/boot_id/pid_namespace are taken from the calling process
  /// (FillCurrentProcess). Returns the new run id (> 0). Throws DbError.
  std::int64_t BeginRun(const RunInfo& info);

  /// Like BeginRun, but only when no other run holds one of info.gpu_ids on the same host: in one
  /// BEGIN IMMEDIATE transaction it looks up the holders (as RunsHoldingGpus(info.host,
  /// info.gpu_ids), with host taken from this process when info.pid is 0) and inserts the run
  /// only if there are none, so that of several processes waiting for the same GPU exactly one
  /// gets it. Returns the new run id, or nullopt when the GPUs are busy; `holders` (if not null)
  /// receives the holding runs (empty on success). An empty gpu_ids (a CPU run) never conflicts.
  /// Throws DbError.
  std::optional<std::int64_t> TryBeginRun(const RunInfo& info, std::vector<RunRow>* holders);

  /// Runs that hold one of `gpu_ids` on `host`: stored status 'running', reported status not
  /// crashed (dead local processes are marked first, as by MarkCrashedRuns; runs this host cannot
  /// check count until their heartbeat is stale), and a runs.gpu_ids that intersects `gpu_ids`.
  /// runs.gpu_ids holds the physical GPUs a run uses (empty for CPU runs), so runs on other hosts
  /// never conflict. Oldest first; empty for an empty `gpu_ids`. Throws DbError.
  std::vector<RunRow> RunsHoldingGpus(const std::string& host, const std::vector<int>& gpu_ids);

  /// Sets the run's status (normally kFinished or kFailed), end_time = heartbeat_time = now and
  /// error_text (NULL when empty); stages of the run still 'running' get the same status and
  /// end time (and the error text unless they have one). When the database is full (SQLITE_FULL:
  /// a full disk), the run's own row is updated again with the error text cut to its first
  /// kShortErrorBytes bytes plus a note that the database is full (an UPDATE that does not grow
  /// the row fits in the page it occupies; the WAL reuses frames it already has), so the status
  /// and the first cause survive; its stages then keep their status. Throws DbError if the run
  /// does not exist or the status cannot be recorded even so (the message says both attempts
  /// failed).
  void FinishRun(std::int64_t run_id, RunStatus status, const std::string& error_text = "");

  /// How many bytes of the error text FinishRun keeps when the database is full.
  static constexpr std::size_t kShortErrorBytes = 300;

  /// Sets heartbeat_time = now. Throws DbError if the run does not exist.
  void Heartbeat(std::int64_t run_id);

  /// The writes of a run below (BeginStage, FinishStage, RecordEpoch, RecordResult,
  /// RecordArtifact) also set its heartbeat_time = now while it is 'running': each is a sign of
  /// life, and a run that dies between two heartbeats then ends at its last write.

  /// Inserts a stage execution with status 'running' and start_time = now; returns its id.
  /// Throws DbError if the run does not exist.
  std::int64_t BeginStage(std::int64_t run_id, int stage, const std::string& name);

  /// Sets the stage's status, end_time = now and error_text (NULL when empty). Throws DbError if
  /// the stage does not exist.
  void FinishStage(std::int64_t stage_id, RunStatus status, const std::string& error_text = "");

  /// Records an epoch of training, replacing an earlier record of the same (run, epoch), e.g.
  /// from before a resume. Throws DbError if the run does not exist.
  void RecordEpoch(std::int64_t run_id, const EpochRecord& epoch);

  /// Records an evaluation result with its costs (one transaction); returns its id. Throws
  /// DbError if the run does not exist or two costs share an operating point.
  std::int64_t RecordResult(std::int64_t run_id, const ResultRecord& result);

  /// Records an artifact; returns its id. Throws DbError if the run (or the given stage) does
  /// not exist.
  std::int64_t RecordArtifact(std::int64_t run_id, const ArtifactRecord& artifact);

  /// Persists status 'crashed' for every 'running' run whose process ran in this host, boot and
  /// pid namespace and no longer exists (or whose pid now belongs to a process started at another
  /// time). end_time becomes the last heartbeat_time (the last sign of life; the error text
  /// gives it and the time the crash was found); running stages of those runs become 'crashed'
  /// too. Runs from elsewhere are not touched (see RunRow::status_inferred). Returns the number
  /// of runs marked; 0 without writing anything when opened read_only. Throws DbError.
  int MarkCrashedRuns();

  /// Runs matching `filter`, newest first, after MarkCrashedRuns(). Throws DbError.
  std::vector<RunRow> ListRuns(const RunFilter& filter = {});

  /// One run (after MarkCrashedRuns()), or nullopt if there is no such id. Throws DbError.
  std::optional<RunRow> GetRun(std::int64_t run_id);

  /// Results matching `filter` (all filters combine with AND), newest first (by id); with
  /// filter.best_per_config one row per (recipe, config, trial list) ordered by recipe, config
  /// and trial list (see ResultFilter::best_per_config). filter.limit applies after either. Empty
  /// when nothing matches. Throws DbError (also if index results_run_trial_list_eer was dropped
  /// by hand: best_per_config names it).
  ///
  /// The same per trial list in plain SQL, fast because the inner MIN is one index seek (a
  /// `MIN(x.eer) ... JOIN ... GROUP BY r.config` reads every result instead):
  ///   SELECT r.recipe, r.config, MIN((SELECT MIN(x.eer) FROM results x
  ///                                   WHERE x.run_id = r.id AND x.trial_list = 'voxceleb1_o'))
  ///   FROM runs r GROUP BY r.recipe, r.config
  std::vector<ResultRow> Results(const ResultFilter& filter = {});

  /// Per (recipe, config, trial list) of the results matching `filter` (recipe, config,
  /// trial_list, run_id and stage; best_per_config and limit are ignored): the lowest EER, chosen
  /// as Results() with best_per_config chooses it (one index seek per run and trial list), and
  /// the lowest minDCF at every operating point, from result_costs and, for results recorded
  /// without costs, from the result's own (p_target, c_miss, c_fa, min_dcf). The minDCF part
  /// reads every matching result and cost (about 1 s per million results). Ordered by recipe,
  /// config and trial list. Throws DbError.
  std::vector<ResultSummaryRow> ResultSummary(const ResultFilter& filter = {});

  /// The in-training EERs: for every result with an epoch matching `filter` (as for
  /// ResultSummary), the lowest EER per (run, trial list, epoch), ordered by run, trial list and
  /// epoch. Reads every matching result once. Throws DbError.
  std::vector<EpochEer> EpochEers(const ResultFilter& filter = {});

  /// Epochs of every run whose recipe and config match `filter` (its status and limit are
  /// ignored), ordered by run and epoch: one query instead of one Epochs() per run. Throws DbError.
  std::vector<EpochRow> EpochsOfRuns(const RunFilter& filter = {});

  /// Artifacts of kind `kind` of every run whose recipe and config match `filter` (status and
  /// limit ignored), ordered by run and id. Throws DbError.
  std::vector<ArtifactRow> ArtifactsOfKind(const std::string& kind, const RunFilter& filter = {});

  /// Epochs of a run in epoch order. Throws DbError.
  std::vector<EpochRow> Epochs(std::int64_t run_id);

  /// Stage executions of a run in the order they started. Throws DbError.
  std::vector<StageRow> Stages(std::int64_t run_id);

  /// Artifacts of a run in the order they were recorded. Throws DbError.
  std::vector<ArtifactRow> Artifacts(std::int64_t run_id);

  /// The checksum ("sha256:<hex>") last recorded for an artifact at `path` (compared as written,
  /// by any run), or nullopt when none was recorded with a checksum: the reference for a file
  /// whose checksum file is missing (asvcpp/base/checksum.h). Throws DbError.
  std::optional<std::string> RecordedChecksum(const std::string& path);

  /// Replaces the progress row of (run_id, rank) with `progress` and updated_time = now (one
  /// small upsert; runs.heartbeat_time is not touched). Rows stay after the run ends: the last
  /// progress of a crashed run says where it stopped. Throws DbError if the run does not exist
  /// or the database stays busy beyond DatabaseOptions::retry_limit.
  void UpdateProgress(std::int64_t run_id, int rank, const ProgressRecord& progress);

  /// Progress rows of `run_ids` (of every run when empty), ordered by run id and rank. Throws
  /// DbError.
  std::vector<ProgressRow> ProgressRows(const std::vector<std::int64_t>& run_ids = {});

  /// Records a submitted SLURM job (submit_time = now), replacing an earlier record of the same
  /// job id. Throws DbError.
  void RecordSlurmJob(const SlurmJobRecord& job);

  /// Submitted SLURM jobs that no run has taken over yet (no run with their job id): jobs that
  /// have not started, or that ended before asvrun recorded a run. Newest submission first.
  /// Throws DbError.
  std::vector<SlurmJobRecord> UnclaimedSlurmJobs();

  /// Current schema version (SQLite: `PRAGMA user_version`; PostgreSQL: asvcpp_schema.version).
  /// Throws DbError.
  int SchemaVersion();

  /// SQLite: the result of `PRAGMA integrity_check`, one line per problem; "ok" when the file is
  /// sound. PostgreSQL (which checks its pages itself): "ok" when every table of the schema can
  /// be read, else the tables that cannot. Throws DbError if the check cannot run.
  std::string IntegrityCheck();

  /// Copies every row of every table of `source` (runs, stages, epochs, results, result_costs,
  /// artifacts, progress, slurm_jobs) into this database, ids, times, statuses and artifact
  /// checksums as they are, in one write transaction: either all rows arrive or none. Both
  /// databases must be at LatestSchemaVersion() (open `source` read_only, this one for writing).
  /// Works between any two stores (SQLite to PostgreSQL, back, or alike); PostgreSQL's id
  /// sequences are moved past the copied ids, so new runs get new ids. Unless `replace`, a target
  /// that holds any row is refused (DbError naming it and how many rows its tables hold, nothing
  /// changed); with `replace` its rows are deleted first, in the same transaction. Returns the
  /// number of rows copied per table, in the order above. Throws DbError naming the database and
  /// the table when a row cannot be read or written.
  std::vector<std::pair<std::string, std::int64_t>> CopyFrom(Database& source, bool replace);

 private:
  void OpenReadWrite();
  void OpenReadOnly();
  void OpenPostgres();
  void OpenConnection(const std::string& name, int flags);
  void Configure(bool rollback_journal);
  void Migrate();
  // Runs `body` (inside `begin` ... COMMIT when `begin` is not null) and retries busy/locked
  // failures with backoff until options_.retry_limit; any other failure becomes DbError, except
  // that SQLITE_FULL only sets *full and returns when `full` is not null.
  void Retry(std::string_view operation, const char* begin, const std::function<void()>& body,
             bool* full = nullptr);
  void Write(std::string_view operation, const std::function<void()>& body, bool* full = nullptr);
  void Read(std::string_view operation, const std::function<void()>& body);
  std::vector<RunRow> QueryRuns(const RunFilter& filter, std::optional<std::int64_t> run_id);
  // Inside an open transaction: inserts a 'running' run (identity already filled); returns its id.
  std::int64_t InsertRun(const RunInfo& filled);
  // Inside an open transaction: the holders of RunsHoldingGpus, after MarkCrashedRuns().
  std::vector<RunRow> SelectGpuHolders(const std::string& host, const std::vector<int>& gpu_ids);
  void CheckOpen() const;
  // SLURM's verdict (options_.slurm_job_end) on rows still 'running' in the database whose
  // process is gone or cannot be checked from here: kFailed makes them failed (inferred).
  void ApplySlurmJobEnds(std::vector<RunRow>* rows);

  std::filesystem::path path_;
  std::string location_;
  DatabaseOptions options_;
  std::unique_ptr<Connection> conn_;
  sqlite3* db_ = nullptr;  // conn_'s handle when it is an SQLite connection, else null
  RunInfo self_;  // Identity of this process (host, boot, pid namespace) for crash detection.
};

}  // namespace asv::db
