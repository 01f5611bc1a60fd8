#include "tools/asvrun/cli.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "asvcpp/base/error.h"
#include "tools/asvrun/commands.h"

namespace asv::tools {
namespace {

constexpr const char* kExamples = R"EX(
Examples:
  asvrun voxceleb/xvector demo                  run config 'demo' (stages from recipe.start_stage..end_stage)
  asvrun voxceleb/xvector fe net --set computing.gpu_ids="(1,)"
                                                run two configs in turn, each resolved from scratch
  asvrun voxceleb/xvector net --dry-run         show what would run, run nothing
  asvrun voxceleb/xvector net --set computing.gpu_ids="(0, 1)"
                                                data-parallel training on GPUs 0 and 1 (NCCL)
  asvrun voxceleb/xvector net --set computing.use_gpu=False --nproc-per-node 4
                                                4 CPU processes (Gloo)
  asvrun voxceleb/xvector net --wait-for-gpu    queue until the config's GPUs are free
  asvrun voxceleb/xvector net net_large --slurm --slurm-option=--partition=gpu
                                                one SLURM batch job per config (--dry-run: print the scripts)
  asvrun show voxceleb/xvector net --explain    resolved settings and where each value came from
  asvrun show voxceleb/xvector net --json       every setting as one flat JSON object
  asvrun list voxceleb/xvector                  configs with their parents and descriptions
  asvrun runs                                   runs recorded in the experiment database
  asvrun results --stage 9 --best               final EER/minDCF, best per config
  asvrun epochs 3                               loss, accuracy, frames/s, data wait per epoch of run 3
  asvrun diff 3 4                               settings and results of runs 3 and 4
  asvrun plot det 3 4 --out det.png             DET curves of runs 3 and 4 (also .svg)
  asvrun plot curves 3 --metric loss --out loss.svg
                                                a training figure per epoch
  asvrun report --out report.html               the database as one HTML page: runs, results, curves
  asvrun eval --scores scores.txt --trials veri_test.txt
                                                EER and minDCF of a score file
  asvrun export --model 3 --format wespeaker --out exported
  asvrun export --model 3 --format onnx --with-frontend --out model.onnx
                                                run 3's model as WeSpeaker's avg_model.pt + config.yaml
  asvrun export --model 5 --format asvtorch --out epoch_state.pt
                                                an x-vector run's network as ASVtorch's state dict
  asvrun embed --model voxceleb_resnet34 --wav-scp wav.scp --out emb
                                                embeddings (Kaldi ark/scp, .npy) with the model's own front end
  asvrun verify --model 3 enroll1.wav enroll2.wav --test test.wav
                                                run 3's score and decisions (its back end and thresholds)
  asvrun verify --model out/resnet34_system --trials trials.txt --json
                                                'enrollment test' lines of audio files or stored utterance ids
  asvrun compute-mfcc-feats --config=run_configs/voxceleb/xvector/mfcc.conf scp:wav.scp ark,t:-
                                                Kaldi's compute-mfcc-feats (also: compute-vad)
Exit status: 0 ok, 2 bad configuration or command line, 3 bad data, 4 database error,
5 a stage failed.)EX";

std::string JoinCommandLine(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+./=:,@%") ==
                                           std::string::npos;
    if (!plain) {
      std::string quoted = "'";
      for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      arg = quoted + "'";
    }
    out += (i > 0 ? " " : "") + arg;
  }
  return out;
}

void AddSourceOptions(CLI::App* app, asv::tools::ConfigSource& source) {
  app->add_option("--init-config", source.init_config, "Init config file (default: run_configs/RECIPE/init_config)");
  app->add_option("--run-configs", source.run_configs, "Run-configs file (default: run_configs/RECIPE/run_configs)");
  app->add_option("--config-root", source.config_root, "Folder holding RECIPE/run_configs (default: ./run_configs)");
}

void AddDbOptions(CLI::App* app, asv::tools::DbSelection& selection) {
  app->add_option("--db", selection.db, "Experiment database: an SQLite file (default: "
                                        "<paths.output_folder>/experiments.db of the recipe's init config) or a "
                                        "PostgreSQL URI postgresql://user@host:port/dbname");
  app->add_option("--recipe", selection.source.recipe, "Recipe whose database to read and whose runs to show")
      ->each([&selection](const std::string&) { selection.recipe_given = true; });
  AddSourceOptions(app, selection.source);
}

int Main(int argc, char** argv, const TorchCommands& torch_commands) {
  CLI::App app{"asvrun: run speaker-verification recipes and query their experiment database", "asvrun"};
  app.footer(kExamples);
  app.require_subcommand(0, 1);

  RunOptions run;
  run.command_line = JoinCommandLine(argc, argv);
  app.add_option("recipe", run.source.recipe, "Recipe, e.g. voxceleb/xvector");
  app.add_option("configs", run.configs, "Run configs to run one after another, each resolved from scratch");
  app.add_option("--set", run.overrides, "Override a setting: --set group.field=value (Python literal; "
                                         "plain text for string settings); repeatable");
  app.add_flag("--dry-run", run.dry_run, "Resolve and check everything, show what would run, run nothing");
  app.add_option("--db", run.db, "Experiment database: an SQLite file (default: <paths.output_folder>/experiments.db) "
                                 "or a PostgreSQL URI postgresql://user@host:port/dbname shared by many jobs");
  app.add_option("--nproc-per-node", run.dist.nproc_per_node,
                 "Processes per node for data-parallel training on the CPU (Gloo); on GPUs one process runs "
                 "per computing.gpu_ids entry")
      ->check(CLI::PositiveNumber);
  app.add_option("--nnodes", run.dist.nnodes, "Nodes, each running one asvrun launcher (default 1)")
      ->check(CLI::PositiveNumber);
  app.add_option("--node-rank", run.dist.node_rank, "This node's rank, 0..nnodes-1 (node 0 hosts the store)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--master-addr", run.dist.master_addr, "Host name or address of node 0 (multi-node)");
  app.add_option("--master-port", run.dist.master_port, "Rendezvous port on node 0 (multi-node; default 29500)")
      ->check(CLI::Range(1, 65535));
  app.add_flag("--wait-for-gpu", run.dist.wait_for_gpu,
               "Queue the run while another running asvrun job (experiment database) holds one of its GPUs, or "
               "another run writes its system folder (without it that is an error)");
  app.add_option("--gpu-poll", run.dist.gpu_poll_seconds, "Seconds between checks of --wait-for-gpu (default 30)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--slurm", run.slurm,
               "Submit one SLURM batch job per config (sbatch) instead of running here; with --dry-run print the "
               "batch scripts (docs/cluster.md)");
  app.add_option("--slurm-option", run.slurm_options,
                 "sbatch option added to every job's script, e.g. --slurm-option=--partition=gpu (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--slurm-template", run.slurm_template,
                 "Batch script template with ${ASV_COMMAND}, ${ASV_LAUNCH}, ${ASV_NTASKS}, ${ASV_GPUS}, ${ASV_OUTPUT}, "
                 "... (docs/cluster.md) instead of the generated script");
  AddSourceOptions(&app, run.source);

  ShowOptions show;
  auto* show_cmd = app.add_subcommand("show", "Show the resolved settings of a config");
  show_cmd->add_option("recipe", show.source.recipe, "Recipe")->required();
  show_cmd->add_option("config", show.config, "Run config")->required();
  show_cmd->add_flag("--all", show.all, "Every setting, not only those that differ from the defaults");
  show_cmd->add_flag("--explain", show.explain, "Where each value came from");
  show_cmd->add_flag("--json", show.json, "One flat JSON object of every setting");
  show_cmd->add_option("--set", show.overrides, "Override a setting (as when running)");
  AddSourceOptions(show_cmd, show.source);

  ConfigSource list;
  auto* list_cmd = app.add_subcommand("list", "List the recipes, or a recipe's configs");
  list_cmd->add_option("recipe", list.recipe, "Recipe");
  AddSourceOptions(list_cmd, list);

  ConfigSource help_settings;
  auto* help_cmd = app.add_subcommand("help-settings", "Every setting with type, default and help");
  help_cmd->add_option("recipe", help_settings.recipe, "Recipe (default: voxceleb/xvector)");

  RunsOptions runs;
  auto* runs_cmd = app.add_subcommand("runs", "Runs recorded in the experiment database, newest first");
  AddDbOptions(runs_cmd, runs.selection);
  runs_cmd->add_option("--config", runs.config, "Only runs of this config");
  runs_cmd->add_option("--status", runs.status, "Only runs with this status (pending: SLURM jobs not started yet)")
      ->check(CLI::IsMember({"pending", "running", "finished", "failed", "crashed"}));
  runs_cmd->add_option("--limit", runs.limit, "At most this many runs (0: all)")->check(CLI::NonNegativeNumber);
  runs_cmd->add_flag("--json", runs.json, "JSON output");
  runs_cmd->add_flag("--running", runs.running,
                     "Only running runs, with stage, progress, rate, ETA and the age of the last update");

  ResultsOptions results;
  auto* results_cmd = app.add_subcommand("results", "EER and minDCF results from the experiment database");
  AddDbOptions(results_cmd, results.selection);
  results_cmd->add_option("--config", results.config, "Only results of this config");
  results_cmd->add_option("--trial-list", results.trial_list, "Only results on this trial list");
  results_cmd->add_option("--stage", results.stage,
                          "Only results of this stage (voxceleb/xvector: 5 evaluations during training, 9 final)");
  results_cmd->add_flag("--best", results.best, "Only the lowest EER per recipe, config and trial list");
  results_cmd->add_option("--format", results.format, "Output format")
      ->check(CLI::IsMember({"table", "csv", "json"}));

  EpochsOptions epochs;
  auto* epochs_cmd = app.add_subcommand("epochs", "Per-epoch training figures of one run from the experiment database");
  epochs_cmd->add_option("run", epochs.run, "Run id (asvrun runs)")->required();
  AddDbOptions(epochs_cmd, epochs.selection);
  epochs_cmd->add_option("--format", epochs.format, "Output format")->check(CLI::IsMember({"table", "csv", "json"}));

  DbSelection diff_selection;
  std::int64_t run_a = 0;
  std::int64_t run_b = 0;
  auto* diff_cmd = app.add_subcommand("diff", "Settings and results of two runs side by side");
  diff_cmd->add_option("run_a", run_a, "First run id")->required();
  diff_cmd->add_option("run_b", run_b, "Second run id")->required();
  AddDbOptions(diff_cmd, diff_selection);

  PlotOptions plot_det;
  PlotOptions plot_curves;
  auto* plot_cmd = app.add_subcommand("plot", "DET curves or training curves of runs, as PNG or SVG");
  plot_cmd->require_subcommand(1);
  auto* plot_det_cmd = plot_cmd->add_subcommand("det", "DET curves (probit axes, EER marked) of the runs' scored lists");
  auto* plot_curves_cmd = plot_cmd->add_subcommand("curves", "A training figure of the runs per epoch");
  for (auto [cmd, options] : {std::pair{plot_det_cmd, &plot_det}, std::pair{plot_curves_cmd, &plot_curves}}) {
    cmd->add_option("runs", options->runs, "Run ids (asvrun runs)")->required();
    cmd->add_option("--out", options->out, "Output file: .png or .svg")->required();
    cmd->add_option("--title", options->title, "Figure title");
    cmd->add_option("--width", options->width, "Width, pixels (PNG) or points (SVG)")
        ->capture_default_str()
        ->check(CLI::Range(200.0, 10000.0));
    cmd->add_option("--height", options->height, "Height, pixels (PNG) or points (SVG)")
        ->capture_default_str()
        ->check(CLI::Range(200.0, 10000.0));
    AddDbOptions(cmd, options->selection);
  }
  plot_det_cmd->add_option("--list", plot_det.list, "Only this trial list (default: every scored list)");
  plot_curves_cmd->add_option("--metric", plot_curves.metric, "Figure to plot (columns of asvrun epochs)")
      ->required()
      ->check(CLI::IsMember({"loss", "accuracy", "accuracy_percent", "lr", "learning_rate", "eer",
                             "frames_per_second", "data_wait", "data_wait_percent"}));
  plot_curves_cmd->add_option("--list", plot_curves.list, "--metric eer: only this trial list (default: each)");
  ReportOptions report;
  auto* report_cmd = app.add_subcommand("report", "The experiment database as one self-contained HTML page "
                                                  "(runs, results grid, training and DET curves, running jobs)");
  AddDbOptions(report_cmd, report.selection);
  report_cmd->add_option("--out", report.out, "HTML file to write")->capture_default_str();
  report_cmd->add_option("--config", report.config, "Only runs of this config");
  report_cmd->add_option("--trial-list", report.trial_list, "Only results and DET curves of this trial list");
  report_cmd->add_option("--stage", report.stage, "Results grid: only results of this stage");
  report_cmd->add_option("--title", report.title, "Title of the page (default: the database's path)");

  DbCopyOptions db_copy;
  auto* db_cmd = app.add_subcommand("db", "Manage experiment databases");
  db_cmd->require_subcommand(1);
  auto* db_copy_cmd = db_cmd->add_subcommand(
      "copy", "Copy every table of an experiment database into another: SQLite file <-> PostgreSQL URI");
  db_copy_cmd->add_option("from", db_copy.from, "Source: SQLite file or postgresql://user@host:port/dbname")
      ->required();
  db_copy_cmd->add_option("to", db_copy.to, "Target: SQLite file or postgresql://user@host:port/dbname")->required();
  db_copy_cmd->add_flag("--replace", db_copy.replace, "Delete the target's rows first (default: refuse a non-empty "
                                                      "target)");

  auto* info_cmd = app.add_subcommand("info", "LibTorch version, CUDA/NCCL/Gloo support and visible GPUs");

  const auto add_model_options = [](CLI::App* cmd, ModelOptions& model) {
    cmd->add_option("--model", model.model,
                    "Run id (asvrun runs), system folder of a run, or WeSpeaker model directory "
                    "(avg_model.pt + config.yaml) or .pt file")
        ->required();
    cmd->add_option("--device", model.device, "cpu, cuda (first visible GPU) or cuda:N")->capture_default_str();
    AddDbOptions(cmd, model.selection);
  };
  ExportOptions export_options;
  auto* export_cmd = app.add_subcommand(
      "export", "Write a model in another toolkit's format (WeSpeaker's avg_model.pt + config.yaml, ONNX, "
                "ASVtorch's state dict)");
  add_model_options(export_cmd, export_options.model);
  export_cmd->add_option("--format", export_options.format,
                         "Model format: wespeaker (directory), onnx (file) or asvtorch (file: x-vector runs)")
      ->capture_default_str()
      ->check(CLI::IsMember({"wespeaker", "onnx", "asvtorch"}));
  export_cmd->add_option("--out", export_options.out, "Model directory (wespeaker) or file (onnx, asvtorch) to write")
      ->required();
  export_cmd->add_flag("--with-frontend", export_options.with_frontend,
                       "onnx: the graph takes audio in [-1, 1) and computes the model's features (fbank and CMN; "
                       "x-vector runs: MFCCs, VAD and sliding CMN)");

  EmbedOptions embed;
  auto* embed_cmd = app.add_subcommand(
      "embed", "Embeddings of audio with a model's own front end (Kaldi ark/scp, .npy, durations)");
  add_model_options(embed_cmd, embed.model);
  embed_cmd->add_option("--wav-scp", embed.wav_scp, "Kaldi wav.scp: 'id file-or-command' lines");
  embed_cmd->add_option("audio", embed.audio, "Audio files (ids: the file names without extension)");
  embed_cmd->add_option("--out", embed.out, "Output folder")->required();
  embed_cmd->add_flag("--clean-features", embed.clean_features,
                      "x-vector runs: MFCCs without dither and compression (as the ONNX graph computes them) "
                      "instead of exactly as stage 1 stored them");
  embed_cmd->add_option("--threads", embed.threads, "Audio decoding threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));

  VerifyOptions verify;
  auto* verify_cmd = app.add_subcommand(
      "verify", "Score trials with a run's system as its stage 9 did: back end, calibration, decision thresholds");
  add_model_options(verify_cmd, verify.model);
  verify_cmd->add_option("enrollment", verify.enrollment,
                         "Enrollment audio files or utterance ids of the system's stored embeddings (several: "
                         "their embeddings averaged)");
  verify_cmd->add_option("--test", verify.tests, "Test audio file or stored utterance id (repeatable)")
      ->allow_extra_args(false);
  verify_cmd->add_option("--trials", verify.trials,
                         "File of 'enrollment test' lines (enrollment inputs joined by ',') instead of the inputs");
  verify_cmd->add_flag("--json", verify.json, "JSON output");
  verify_cmd->add_option("--threads", verify.threads, "Audio decoding threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));

  EvalOptions eval;
  auto* eval_cmd = app.add_subcommand("eval", "EER, minDCF, Cllr and actDCF of a score file");
  eval_cmd->add_option("--scores", eval.scores, "Scores: one per line in trial order, or 'left right score'")
      ->required();
  eval_cmd->add_option("--trials", eval.trials,
                       "Trial list: 'left right label' per line, or VoxCeleb's 'label enrollment test' (detected)")
      ->required();
  eval_cmd->add_option("--p-target", eval.p_targets, "Target priors of minDCF and actDCF (repeatable)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  eval_cmd->add_option("--det", eval.det, "Write the DET points (miss and false-alarm rates, probit) to this file");
  eval_cmd->add_option("--det-points", eval.det_points, "About how many DET points to keep")
      ->capture_default_str()
      ->check(CLI::Range(2, 1000000));
  eval_cmd->add_flag("--json", eval.json, "JSON output");

  // Kaldi-style commands parse their own --name=value options (Kaldi's rules, kaldi_commands.h):
  // everything after the command name is passed through untouched, --help included.
  auto add_kaldi_command = [&app](const char* name, const char* description) {
    auto* cmd = app.add_subcommand(name, description);
    cmd->prefix_command();
    cmd->set_help_flag();
    return cmd;
  };
  auto* mfcc_cmd = add_kaldi_command(
      "compute-mfcc-feats", "Kaldi's compute-mfcc-feats: MFCCs of a wav.scp (asvrun compute-mfcc-feats --help)");
  auto* vad_cmd =
      add_kaldi_command("compute-vad", "Kaldi's compute-vad: energy VAD of features (asvrun compute-vad --help)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? asv::kExitOk : asv::kExitConfigError;
  }

  if (*show_cmd) return Show(show);
  if (*list_cmd) return List(list);
  if (*help_cmd) return HelpSettings(help_settings);
  if (*runs_cmd) return Runs(runs);
  if (*results_cmd) return Results(results);
  if (*epochs_cmd) return Epochs(epochs);
  if (*diff_cmd) return Diff(diff_selection, run_a, run_b);
  if (*plot_det_cmd) return PlotDet(plot_det);
  if (*plot_curves_cmd) return PlotCurves(plot_curves);
  if (*report_cmd) return Report(report);
  if (*db_copy_cmd) return DbCopy(db_copy);
  const auto unavailable = [](const char* what) {
    return asv::Error(asv::kExitFailure, fmt::format("{} is not available in this executable; run it with asvrun", what));
  };
  if (*info_cmd) {
    if (!torch_commands.info) throw unavailable("info");
    return torch_commands.info();
  }
  if (*eval_cmd) return Eval(eval);
  if (*export_cmd) {
    if (!torch_commands.export_model) throw unavailable("export");
    return torch_commands.export_model(export_options);
  }
  if (*embed_cmd) {
    if (!torch_commands.embed) throw unavailable("embed");
    return torch_commands.embed(embed);
  }
  if (*verify_cmd) {
    if (!torch_commands.verify) throw unavailable("verify");
    return torch_commands.verify(verify);
  }
  for (auto* kaldi_cmd : {mfcc_cmd, vad_cmd}) {
    if (!*kaldi_cmd) continue;
    if (!torch_commands.kaldi_tool) throw unavailable(kaldi_cmd->get_name().c_str());
    return torch_commands.kaldi_tool(kaldi_cmd->get_name(), kaldi_cmd->remaining());
  }
  if (run.source.recipe.empty()) {
    std::cerr << app.help();
    return asv::kExitConfigError;
  }
  if (run.slurm) return SubmitSlurmJobs(run);
  if (!run.slurm_options.empty() || !run.slurm_template.empty()) {
    throw asv::ConfigError("--slurm-option and --slurm-template need --slurm");
  }
  if (!torch_commands.run) throw unavailable("running configs");
  return torch_commands.run(run);
}

}  // namespace

int AsvrunMain(int argc, char** argv, const TorchCommands& torch_commands) {
  try {
    return Main(argc, argv, torch_commands);
  } catch (const asv::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return asv::kExitConfigError;
  } catch (const std::exception& e) {
    std::cerr << "asvrun: error: " << e.what() << "\n";
    return asv::ExitCodeFor(e);
  }
}

}  // namespace asv::tools
