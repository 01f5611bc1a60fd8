// `asvrun RECIPE CONFIG... --slurm`: one SLURM batch job per config (commands.h, slurm.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <iostream>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/db/database.h"
#include "asvcpp/recipe/config_loader.h"
#include "asvcpp/recipe/recipe.h"
#include "recipes/catalog.h"
#include "tools/asvrun/commands.h"
#include "tools/asvrun/slurm.h"

namespace asv::tools {
namespace stdfs = std::filesystem;

namespace {

std::string Absolute(const std::string& path) {
  return path.empty() ? path : stdfs::weakly_canonical(stdfs::absolute(path)).string();
}

// The asvrun a job runs: `asvrun` beside this executable (asvrun-torch has it beside it too).
std::string AsvrunExecutable() {
  const stdfs::path self = fs::SelfExecutable();
  const stdfs::path front = self.parent_path() / "asvrun";
  return stdfs::exists(front) ? front.string() : self.string();
}

// The command of one job: this config, with the config files, overrides and database given.
std::vector<std::string> JobCommand(const RunOptions& options, const std::string& config) {
  std::vector<std::string> argv{AsvrunExecutable(), options.source.recipe, config};
  auto add = [&argv](const char* flag, const std::string& value) {
    if (value.empty()) return;
    argv.push_back(flag);
    argv.push_back(value);
  };
  add("--init-config", Absolute(options.source.init_config));
  add("--run-configs", Absolute(options.source.run_configs));
  add("--config-root", Absolute(options.source.config_root));
  for (const auto& o : options.overrides) add("--set", o);
  add("--db", db::IsPostgresUri(options.db) ? options.db : Absolute(options.db));
  return argv;
}

}  // namespace

int SubmitSlurmJobs(const RunOptions& options) {
  if (options.dist.nnodes > 1) {
    throw ConfigError("--slurm runs each config on one node; --nnodes does not apply (SLURM chooses the nodes: "
                      "--slurm-option=--nodes=N with one task per GPU is unverified, docs/cluster.md)");
  }
  const auto& recipe = recipes::FindRecipe(options.source.recipe);
  std::string warnings;
  auto loaded = recipe::LoadConfigs(recipe, Locate(options.source), options.configs, options.overrides, &warnings);
  std::cerr << warnings;
  std::string template_text;
  if (!options.slurm_template.empty()) {
    std::error_code ec;
    if (!stdfs::is_regular_file(options.slurm_template, ec)) {
      throw ConfigError(fmt::format("--slurm-template {}: no such file", options.slurm_template));
    }
    template_text = fs::ReadFile(options.slurm_template);
  }
  const stdfs::path workdir = stdfs::current_path();

  struct Job {
    slurm::JobSpec spec;
    std::string script;
    stdfs::path db_path;
    bool allow_network_fs = false;  // paths.allow_experiment_db_on_network_fs
  };
  std::vector<Job> jobs;
  std::vector<std::string> problems;
  for (auto& config : loaded) {
    const auto& s = *config.settings;
    const auto& computing = s.common().computing;
    Job job;
    auto& spec = job.spec;
    try {
      spec.recipe = recipe.name();
      spec.config = config.name;
      const stdfs::path out = OutputFolder(s);
      spec.output_folder = out.string();
      std::string name = recipe.name();
      for (char& c : name) c = c == '/' ? '-' : c;
      spec.job_name = "asv-" + name + "-" + config.name;
      spec.output = (out / "slurm" / (config.name + ".%j.out")).string();
      spec.workdir = workdir.string();
      if (computing.use_gpu) {
        spec.gpus = static_cast<int>(computing.gpu_ids.size());
        if (spec.gpus == 0) {
          throw ConfigError("computing.use_gpu is True but computing.gpu_ids is empty: no GPU to request");
        }
        if (options.dist.nproc_per_node > 0 && options.dist.nproc_per_node != spec.gpus) {
          throw ConfigError(fmt::format("--nproc-per-node {} contradicts computing.gpu_ids = ({}): one task runs per "
                                        "GPU (set computing.use_gpu = False for CPU tasks)",
                                        options.dist.nproc_per_node, fmt::join(computing.gpu_ids, ", ")));
        }
        spec.ntasks = spec.gpus;
      } else {
        spec.ntasks = options.dist.nproc_per_node > 0 ? options.dist.nproc_per_node : 1;
      }
      recipe::CheckGlobalBatches(s, spec.ntasks);
      spec.command = JobCommand(options, config.name);
      spec.sbatch_options = options.slurm_options;
      job.script = options.slurm_template.empty()
                       ? slurm::BatchScript(spec)
                       : slurm::Substitute(template_text, slurm::TemplateVariables(spec), options.slurm_template);
      job.db_path = ExperimentDb(options.db, s);
      job.allow_network_fs = s.common().paths.allow_experiment_db_on_network_fs;
    } catch (const ConfigError& e) {
      problems.push_back(fmt::format("config {}: {}", config.name, e.what()));
      continue;
    }
    jobs.push_back(std::move(job));
  }
  if (!problems.empty()) {
    throw ConfigError(fmt::format("asvrun --slurm: nothing submitted:\n{}", fmt::join(problems, "\n")));
  }

  if (options.dry_run) {
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      fmt::print("# batch script {} of {}: {} {} (--dry-run: not submitted)\n{}", i + 1, jobs.size(),
                 jobs[i].spec.recipe, jobs[i].spec.config, jobs[i].script);
      if (i + 1 < jobs.size()) fmt::print("\n");
    }
    return kExitOk;
  }

  for (const auto& job : jobs) {
    const stdfs::path folder = stdfs::path(job.spec.output_folder) / "slurm";
    stdfs::create_directories(folder);
    const std::int64_t id = slurm::Submit(job.script);
    std::string output = job.spec.output;
    if (const auto at = output.find("%j"); at != std::string::npos) output.replace(at, 2, std::to_string(id));
    fmt::print("submitted {} {} as SLURM job {} (output {})\n", job.spec.recipe, job.spec.config, id, output);
    std::fflush(stdout);
    try {
      fs::WriteFileAtomic(folder / fmt::format("{}.{}.sh", job.spec.config, id), job.script);
      db::SlurmJobRecord record;
      record.job_id = id;
      record.recipe = job.spec.recipe;
      record.config = job.spec.config;
      record.output_folder = job.spec.output_folder;
      record.output_file = output;
      record.command_line = slurm::ShellJoin(job.spec.command);
      db::DatabaseOptions db_options;
      db_options.allow_network_file_system = db_options.allow_network_file_system || job.allow_network_fs;
      db::Database(job.db_path, db_options).RecordSlurmJob(record);
    } catch (const std::exception& e) {
      // The job is submitted: its run records itself when it starts.
      fmt::print(stderr, "asvrun: warning: SLURM job {} is submitted but could not be recorded as pending: {}\n", id,
                 e.what());
    }
  }
  return kExitOk;
}

}  // namespace asv::tools
