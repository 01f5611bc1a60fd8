// asvrun and SLURM: the batch scripts `asvrun RECIPE CONFIG... --slurm` submits (one job per
// config), their template variables, and what SLURM says of a job (scontrol), for the run's
// failure reason and crash detection. No LibTorch in this file; docs/cluster.md describes it all.
//
// The generated script (BatchScript):
//   #!/bin/bash
//   #SBATCH --job-name=<ASV_JOB_NAME>
//   #SBATCH --output=<ASV_OUTPUT>           # <output folder>/slurm/<config>.%j.out
//   #SBATCH --chdir=<ASV_WORKDIR>           # where asvrun was started: relative paths resolve alike
//   #SBATCH --nodes=1
//   #SBATCH --ntasks=<ASV_NTASKS>           # one task per rank
//   #SBATCH --ntasks-per-node=<ASV_NTASKS>
//   #SBATCH --gres=gpu:<ASV_GPUS>           # only when the config uses GPUs
//   #SBATCH <each --slurm-option>            # after the generated lines: they override them
//   <ASV_LAUNCH>                             # srun --kill-on-bad-exit=1 <ASV_COMMAND>, or
//                                            # <ASV_COMMAND> alone for one task on the CPU
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/db/database.h"

namespace asv::tools::slurm {

/// One batch job: the values of the template variables.
struct JobSpec {
  std::string job_name;     ///< ASV_JOB_NAME, e.g. "asv-voxceleb-xvector-net"
  std::string output;       ///< ASV_OUTPUT: the job's stdout and stderr (sbatch --output; %j = job id)
  std::string workdir;      ///< ASV_WORKDIR: the job's working folder (absolute)
  int ntasks = 1;           ///< ASV_NTASKS: processes (ranks), all on one node
  int gpus = 0;             ///< ASV_GPUS: GPUs of the node (--gres=gpu:N); 0 on the CPU
  std::vector<std::string> command;       ///< ASV_COMMAND: one asvrun invocation (argv)
  std::vector<std::string> sbatch_options;  ///< --slurm-option values, e.g. "--partition=gpu"
  std::string recipe;        ///< ASV_RECIPE
  std::string config;        ///< ASV_CONFIG
  std::string output_folder;  ///< ASV_OUTPUT_FOLDER: paths.output_folder of the config (absolute)

  /// True when the ranks are started by srun: several tasks, or GPUs (each rank then picks its
  /// GPU from SLURM's CUDA_VISIBLE_DEVICES, asvcpp/distributed/world.h).
  bool uses_srun() const { return ntasks > 1 || gpus > 0; }
};

/// `argv` as one shell command line, quoting what the shell would change.
std::string ShellJoin(const std::vector<std::string>& argv);

/// The template variables of `job`, name -> value: ASV_JOB_NAME, ASV_OUTPUT, ASV_WORKDIR,
/// ASV_NTASKS, ASV_GPUS, ASV_COMMAND (shell-quoted), ASV_LAUNCH (the line that starts the ranks),
/// ASV_SBATCH_OPTIONS (the --slurm-option values as #SBATCH lines, "" when none), ASV_RECIPE,
/// ASV_CONFIG, ASV_OUTPUT_FOLDER.
std::map<std::string, std::string> TemplateVariables(const JobSpec& job);

/// The generated batch script of `job` (see the top of this file).
std::string BatchScript(const JobSpec& job);

/// Substitutes `${NAME}` for every NAME of `variables` in `text` (a template read from
/// `template_file`, named in errors). `${ASV_...}` with any other name is an error; every other
/// `$`, `${...}` and `$NAME` is left to the shell. Throws ConfigError naming the file, line and
/// variable, e.g. "slurm.tmpl:4: unknown template variable ${ASV_GPU} (known: ASV_COMMAND, ...)",
/// or an unclosed "${ASV_".
std::string Substitute(const std::string& text, const std::map<std::string, std::string>& variables,
                       const std::string& template_file);

/// Output of a program run by RunProgram.
struct ProgramResult {
  int status = -1;    ///< exit status; 127 when it could not be started; 124 when timed out
  std::string out;    ///< stdout
  std::string err;    ///< stderr
};

/// Runs `argv` (argv[0] looked up on the PATH) without a shell, with `input` on stdin, and
/// returns its exit status and output; kills it (SIGKILL) after `timeout_seconds`. Never throws.
ProgramResult RunProgram(const std::vector<std::string>& argv, const std::string& input = "",
                         int timeout_seconds = 30);

/// Submits `script` with `sbatch --parsable` (the script on stdin) and returns the job id.
/// Throws Error (exit status 5) with sbatch's output when it fails or prints no job id.
std::int64_t Submit(const std::string& script);

/// `scontrol show job -o JOB` as key -> value (JobState, Reason, RunTime, TimeLimit, ...);
/// nullopt when scontrol is missing, fails (an unknown or purged job) or takes over 10 s.
std::optional<std::map<std::string, std::string>> ShowJob(std::int64_t job_id);

/// ShowJob waiting at most `timeout_seconds`; when it gives nullopt, `*error` (if not null) says
/// why (scontrol's message, e.g. "slurm_load_jobs error: Invalid job id specified").
std::optional<std::map<std::string, std::string>> ShowJobWithin(std::int64_t job_id, int timeout_seconds,
                                                                std::string* error);

/// How SLURM says job `job_id` ended, for DatabaseOptions::slurm_job_end: kFailed with e.g.
/// "cancelled by SLURM (job 12: JobState=CANCELLED Reason=None)" for CANCELLED, TIMEOUT ("time
/// limit reached"), OUT_OF_MEMORY, NODE_FAIL, PREEMPTED, DEADLINE and BOOT_FAIL; kCrashed for a
/// job that COMPLETED or FAILED (asvrun died without recording it); nullopt while the job is
/// pending or running, or when scontrol cannot say (not installed, job purged). Never throws.
std::optional<db::SlurmJobEnd> JobEnd(std::int64_t job_id);

/// Why SLURM sent SIGTERM to this job, asked when asvrun receives it inside a job: "time limit
/// reached" (Reason=TimeLimit), "preempted", "cancelled by SLURM" (scancel; SLURM gives no reason
/// then), each with the job id and scontrol's JobState, Reason, RunTime and TimeLimit; without
/// scontrol, "terminated by SLURM (job N: SIGTERM: cancelled, time limit or preemption)". Never
/// throws; waits at most 5 s for scontrol.
std::string DescribeTermination(std::int64_t job_id);

/// SLURM_JOB_ID of this process's environment, nullopt outside a SLURM job.
std::optional<std::int64_t> CurrentJobId();

/// `squeue`'s state of a job (e.g. "PENDING" with its reason "(Resources)"), "" when squeue does
/// not list it or cannot run. Never throws.
std::string QueueState(std::int64_t job_id);

}  // namespace asv::tools::slurm
