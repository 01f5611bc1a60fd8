// asvrun's commands. cli.cc only parses the command line (CLI11) and calls these; each returns
// the process exit status and throws asv::Error subclasses for failures. RunConfigs and Info need
// LibTorch (run_commands.cc, in asvrun-torch only); the others are in commands.cc.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/base/fs.h"
#include "asvcpp/db/database.h"
#include "asvcpp/recipe/config_loader.h"
#include "tools/asvrun/job.h"

namespace asv::tools {

/// Where a recipe's config files come from (--init-config, --run-configs, --config-root).
struct ConfigSource {
  std::string recipe;
  std::string init_config;
  std::string run_configs;
  std::string config_root;
};

/// The recipe's config files: recipe::LocateRecipeFiles with --init-config, --run-configs and
/// --config-root applied. Throws ConfigError when a file is missing.
recipe::RecipeFiles Locate(const ConfigSource& source);

/// "score_net < score < emb_net < emb < net": the config and its ancestors, last applied first.
std::string Lineage(const recipe::LoadedConfig& config);

/// paths.output_folder of `settings`, absolute and normalised.
std::filesystem::path OutputFolder(const recipe::RecipeSettings& settings);

/// The experiment database a run of `settings` records into: `db_option` (--db) when given, else
/// paths.experiment_db, else <output folder>/experiments.db. A PostgreSQL URI is kept as it is, a
/// file path made absolute against the current folder.
std::filesystem::path ExperimentDb(const std::string& db_option, const recipe::RecipeSettings& settings);

struct RunOptions {
  ConfigSource source;
  std::vector<std::string> configs;
  std::vector<std::string> overrides;  ///< --set group.field=value
  bool dry_run = false;
  std::string db;                    ///< --db FILE; default <paths.output_folder>/experiments.db
  std::string command_line;          ///< The whole asvrun invocation, recorded with each run.
  DistOptions dist;                  ///< processes, nodes, GPU queueing (job.h)
  bool slurm = false;                        ///< --slurm: submit one SLURM batch job per config
  std::vector<std::string> slurm_options;    ///< --slurm-option: sbatch options, e.g. --partition=gpu
  std::string slurm_template;                ///< --slurm-template FILE: the batch script's template
};
/// `asvrun RECIPE CONFIG [CONFIG...]`: resolves every config first (exit 2 on any problem),
/// then runs each one's stages in turn, recording the run in the experiment database. Each
/// config runs in this process, through the launcher, or as a worker of a data-parallel job
/// (job.h).
int RunConfigs(const RunOptions& options);

/// `asvrun RECIPE CONFIG... --slurm`: resolves every config first and checks its job (GPUs,
/// tasks, global batches, the --slurm-template's variables); any problem is a ConfigError listing
/// them all, and nothing is submitted. Then submits one batch job per config with sbatch
/// (slurm.h: the script, its template variables), keeps a copy of each script as
/// <output folder>/slurm/<config>.<job id>.sh, records each job as submitted in the config's
/// experiment database (db::Database::RecordSlurmJob: `asvrun runs` shows it pending until its
/// run starts) and prints the job ids. With --dry-run: prints the scripts, submits nothing.
/// Throws Error (exit 5) when sbatch fails; jobs submitted before stay submitted (printed).
int SubmitSlurmJobs(const RunOptions& options);

struct ShowOptions {
  ConfigSource source;
  std::string config;
  std::vector<std::string> overrides;
  bool all = false;
  bool explain = false;
  bool json = false;
};
/// `asvrun show RECIPE CONFIG`: the resolved settings (non-default ones, or --all), with
/// --explain where each value came from, or --json one flat object of every setting.
int Show(const ShowOptions& options);

/// `asvrun list [RECIPE]`: the recipes, or a recipe's configs with parents and first comment.
int List(const ConfigSource& source);

/// `asvrun help-settings [RECIPE]`: every setting with type, default, constraints and help.
int HelpSettings(const ConfigSource& source);

/// Which experiment database the listing commands read: --db, else the output folder of the
/// recipe's init config. They open it read-only (db::DatabaseOptions::read_only): they read a
/// database of another user or in a read-only folder, never create, migrate or change one, and
/// report runs whose process is gone as crashed without storing it. Errors (exit status 4): no
/// such file, not an asvcpp experiment database, a schema older or newer than this build's.
struct DbSelection {
  ConfigSource source;  ///< recipe may be empty: voxceleb/xvector
  std::string db;
  bool recipe_given = false;
};

struct RunsOptions {
  DbSelection selection;
  std::string config;
  std::string status;
  int limit = 50;
  bool json = false;
  /// Only running runs, with their progress: stage, what, done/total, rate, ETA, update age.
  bool running = false;
};
/// `asvrun runs`: the recorded runs, newest first; runs whose process died show as crashed.
/// With `running`: the running runs and the progress each rank last recorded.
int Runs(const RunsOptions& options);

struct ResultsOptions {
  DbSelection selection;
  std::string config;
  std::string trial_list;
  int stage = -1;  ///< Only results of this stage; -1: all
  bool best = false;
  std::string format = "table";  ///< table, csv or json
};
/// `asvrun results`: the EER/minDCF table.
int Results(const ResultsOptions& options);

struct EpochsOptions {
  DbSelection selection;
  std::int64_t run = 0;
  std::string format = "table";  ///< table, csv or json
};
/// `asvrun epochs RUN`: the per-epoch figures of one run (loss, accuracy, learning rate,
/// seconds, frames/s, validation loss and accuracy, percent of the time the training step waited
/// for data), in epoch order. Throws DbError when there is no database or no such run.
int Epochs(const EpochsOptions& options);

/// `asvrun diff RUN_A RUN_B`: settings and results of two runs side by side.
int Diff(const DbSelection& selection, std::int64_t run_a, std::int64_t run_b);

/// The experiment database a reading command reads (--db, a file or a PostgreSQL URI, else the
/// output folder of the recipe's init config); an empty path when that default database does not
/// exist yet. Throws DbError (exit 4) for a --db file that does not exist, ConfigError for bad
/// config files. A URI is returned as given (opening it says whether the server has it).
std::filesystem::path SelectDatabase(const DbSelection& selection);

/// How messages name a database: its path, or its URI without the password.
std::string DbName(const std::filesystem::path& path);

/// The files of the experiment database at `path` (the database, its write-ahead log, shared
/// memory and rollback journal), each named "--db", for fs::CheckOutputIsNotInput.
std::vector<fs::NamedPath> DatabaseFiles(const std::filesystem::path& path);

struct ReportOptions {
  DbSelection selection;
  std::string out = "report.html";
  std::string config;
  std::string trial_list;
  int stage = -1;  ///< Results grid: only results of this stage; -1: all
  std::string title;
};
/// `asvrun report`: one self-contained HTML page of the experiment database (report_command.cc;
/// asvcpp/report/report_data.h says what it shows), written atomically to options.out. The
/// database is opened read-only. Throws DbError when there is no database.
int Report(const ReportOptions& options);

struct DbCopyOptions {
  std::string from;      ///< Source: an SQLite file or a PostgreSQL URI.
  std::string to;        ///< Target: an SQLite file (created if missing) or a PostgreSQL URI.
  bool replace = false;  ///< Delete the target's rows first instead of refusing a non-empty target.
};
/// `asvrun db copy FROM TO`: every table of one experiment database into another, between SQLite
/// and PostgreSQL either way (db::Database::CopyFrom), and prints the rows copied per table. The
/// source is opened read-only and must exist; the target is created or migrated. Throws DbError
/// (exit 4) for a missing source, a non-empty target without `replace`, the same database as source
/// and target, or a failure of either store (nothing is copied then).
int DbCopy(const DbCopyOptions& options);

/// The experiment database of `selection` (as the listing commands choose it), opened
/// read-only. Throws DbError when there is none yet or it cannot be read.
db::Database OpenDatabaseForReading(const DbSelection& selection);

struct PlotOptions {
  DbSelection selection;
  std::vector<std::int64_t> runs;  ///< Run ids, one or more.
  std::string list;                ///< Only this trial list (det; curves with --metric eer).
  std::string metric;              ///< curves: plot::ParseMetric name.
  std::string out;                 ///< .png or .svg
  std::string title;
  double width = 640;   ///< Pixels (PNG) or points (SVG).
  double height = 480;
};
/// `asvrun plot det RUN... --out FILE`: the DET curves of the runs' scored trial lists
/// (plot::RunDetCurves, plot::DetFigure). Throws DbError for an unknown run, DataError for a run
/// or list without DET points, ConfigError for an --out that is neither .png nor .svg.
int PlotDet(const PlotOptions& options);
/// `asvrun plot curves RUN... --metric M --out FILE`: one training figure per epoch
/// (plot::MetricSeries, plot::CurvesFigure); errors as PlotDet.
int PlotCurves(const PlotOptions& options);

/// `asvrun info`: LibTorch version, CUDA/NCCL/Gloo support, visible GPUs.
int Info();

/// The model of `asvrun export`, `embed` and `verify` (--model M): a run id of the experiment
/// database (`selection`: --db, else the output folder of --recipe's init config; the run's
/// model is the one its stage 8 uses), a system folder of a recorded run (found in --db, else
/// in <folder>/../experiments.db), or a WeSpeaker model directory (avg_model.pt + config.yaml)
/// or a WeSpeaker .pt file with a config.yaml beside it or one folder up (model_commands.cc).
/// Runs must be of voxceleb/margin (stage 8's model), voxceleb/xvector or sitw/xvector (stage 7's
/// network: recipe.selected_epoch, else the newest checkpoint).
struct ModelOptions {
  std::string model;
  DbSelection selection;
  std::string device = "cpu";  ///< cpu, cuda (the first visible GPU) or cuda:N
};

struct ExportOptions {
  ModelOptions model;
  std::string format = "wespeaker";  ///< "wespeaker", "onnx" or "asvtorch"
  std::string out;                   ///< The model directory (wespeaker) or file (onnx, asvtorch) to write.
  bool with_frontend = false;        ///< onnx: the graph takes audio and computes the model's features
};
/// `asvrun export --model M --format wespeaker --out DIR`: DIR/avg_model.pt and DIR/config.yaml
/// (asvcpp/models/wespeaker_model.h). `--format onnx --out FILE [--with-frontend]`: the embedding
/// network as an ONNX graph (asvcpp/deploy/onnx_export.h) with the model's front end inside when
/// asked: fbank and CMN, or for an x-vector run its MFCCs, VAD and sliding CMN
/// (recipes/shared/xvector/onnx_front_end.h). `--format asvtorch --out FILE`: an x-vector run's
/// network as the state dict of ASVtorch's class (asvcpp/models/asvtorch_model.h), BaseNet's
/// training_loss and consecutive_lr_updates from the checkpoint. Throws ConfigError for a model
/// the format cannot express (WeSpeaker: recipe.channels set, an x-vector network; ONNX: see
/// deploy::ExportOnnx and XvectorOnnxFrontEnd; ASVtorch: anything but an x-vector network),
/// DataError for a model that cannot be read, DbError for a run id the database does not hold.
int ExportModel(const ExportOptions& options);

struct EmbedOptions {
  ModelOptions model;
  std::string wav_scp;              ///< `id wav.scp-value` lines, or empty with `audio`.
  std::vector<std::string> audio;   ///< Audio files; ids are their file names without extension.
  std::string out;                  ///< Output folder.
  int threads = 2;                  ///< Audio decoding threads.
  /// x-vector runs: MFCCs without Kaldi's dither and without the compression of stored features
  /// (what the ONNX graph with the front end computes) instead of exactly stage 1's. No effect on
  /// fbank models, whose front end has neither.
  bool clean_features = false;
};
/// `asvrun embed --model M (--wav-scp FILE | AUDIO...) --out DIR`: the model's embeddings of the
/// audio with exactly the front end the model was trained with (sample rate, fbank, utterance
/// mean subtraction: the run's settings or config.yaml) and stage 8's batching; for an x-vector
/// run its stage-1 MFCCs and VAD (Kaldi's dither seeded by the id, compressed as stored) read as
/// its stage 7 reads them (loaded_model.h EmbedAudio), so that an utterance given with its id in
/// the run's lists gets stage 7's embedding. Writes
/// DIR/embeddings.ark, .scp (Kaldi binary vectors) and .utt2dur (speech seconds the network saw),
/// DIR/embeddings.npy (float32 [utterances, dim], rows in the order of DIR/utt_ids.txt) and
/// DIR/skipped.txt (`id reason` of each input left out: audio that cannot be decoded, or shorter
/// than the network's shortest input). Throws ConfigError for a bad command line, DataError when
/// no input gives an embedding, and what ExportModel throws for the model.
int Embed(const EmbedOptions& options);

/// What joins several enrollment inputs of one side in `asvrun verify --trials` lines.
inline constexpr char kEnrollmentSeparator = ',';

struct VerifyOptions {
  ModelOptions model;
  std::vector<std::string> enrollment;  ///< Audio files or utterance ids, averaged into one side.
  std::vector<std::string> tests;       ///< --test: each scored against `enrollment`.
  std::string trials;                   ///< --trials FILE: `enrollment test` lines instead.
  bool json = false;
  int threads = 2;                      ///< Audio decoding threads.
};
/// `asvrun verify --model M ENROLL... --test TEST [--test TEST...]` or `--trials FILE`: each trial
/// scored exactly as the run of M scored its trial lists in stage 9, with the decisions at the
/// thresholds stage 9 stored (recipes/shared/verification.h: BuildSystemBackend from the system's
/// stored embeddings and the run's backend.* settings, ReadThresholds, VerifyTrials; several
/// enrollment inputs averaged as the back end averages them). An input is an audio file, embedded
/// as `asvrun embed` embeds it (loaded_model.h EmbedAudio), else an utterance id of the system's
/// stored embeddings (<system>/embeddings/trial, then plda), whose stored embedding is used. A
/// --trials line is `enrollment test [ignored columns...]`, the enrollment side one input or
/// several joined by kEnrollmentSeparator; blank lines and lines starting with '#' are skipped.
/// For an x-vector run, audio inputs are refused (DataError) when the system's stored embeddings
/// are of another epoch than the network loaded (embeddings/info.json): their scores would mix two
/// networks. A WeSpeaker model has no back end: the score is the cosine of the (averaged) raw
/// embeddings, with no decision. Prints a table (decisions as accept/reject per threshold), or with `json` one
/// object: model, system, back_end, calibrated, thresholds, trials (enrollment, test, score,
/// decisions) and inputs (from "audio" or "stored embedding"). Throws ConfigError for a bad
/// command line, DataError for an input that is neither a file nor a stored id, audio that gives
/// no embedding, a malformed trial file, a system without stored embeddings or thresholds
/// (stage 9 not run), and what LoadModel throws.
int Verify(const VerifyOptions& options);

struct EvalOptions {
  std::string scores;  ///< One score per line in trial order, or `left right score` lines.
  std::string trials;  ///< Trial list: `left right label` per line.
  std::vector<double> p_targets = {0.05, 0.01};  ///< Operating points of minDCF and actDCF.
  std::string det;     ///< When not empty: DET points written there (eval::WriteDetPoints).
  std::size_t det_points = 2000;
  bool json = false;
};
/// `asvrun eval --scores FILE --trials FILE`: EER and minDCF at each p_target exactly as ASVtorch
/// computes them (asvcpp/eval/metrics.h), Cllr, minCllr and actDCF of the scores read as LLRs
/// (asvcpp/eval/llr_metrics.h), the trial counts, and optionally the DET points.
int Eval(const EvalOptions& options);

}  // namespace asv::tools
