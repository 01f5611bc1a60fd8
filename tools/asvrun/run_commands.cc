// The asvrun commands that need LibTorch (commands.h): running configs and `info`, linked into
// asvrun-torch only (cli.h).
#include <fmt/format.h>

#include <cstdlib>
#include <iostream>

#include "asvcpp/base/error.h"
#include "asvcpp/db/database.h"
#include "asvcpp/distributed/runtime_info.h"
#include "asvcpp/distributed/world.h"
#include "asvcpp/recipe/config_loader.h"
#include "asvcpp/recipe/memory_check.h"
#include "asvcpp/recipe/run_context.h"
#include "asvcpp/settings/dump.h"
#include "asvcpp/train/onednn_cache.h"
#include "recipes/catalog.h"
#include "recipes/registry.h"
#include "tools/asvrun/commands.h"
#include "tools/asvrun/signal_guard.h"
#include "tools/asvrun/version.h"

namespace asv::tools {
namespace stdfs = std::filesystem;

namespace {

// The memory one rank of `plan` may use: its GPU's (the first of computing.gpu_ids; they are
// alike on the servers asvrun plans for), or the CPU's shared by the local ranks.
recipe::DeviceMemory RankMemory(const ProcessPlan& plan, const distributed::RuntimeInfo& runtime) {
  if (plan.cuda && !plan.gpu_ids.empty()) {
    for (const auto& gpu : runtime.gpus) {
      if (gpu.index == plan.gpu_ids.front()) return recipe::GpuMemory(gpu.index, gpu.total_memory_bytes);
    }
  }
  return recipe::AvailableCpuMemory(plan.nproc_per_node);
}

}  // namespace

int RunConfigs(const RunOptions& options) {
  // GPU ids are physical ids as nvidia-smi numbers them (PCI bus order), also for CUDA.
  ::setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
  // oneDNN keeps a compiled primitive per input shape, ~2 MB each, and every clip length and
  // utterance batch is a new shape: 128 at most instead of 1,024, unless the user sets a
  // capacity (onednn_cache.h). Likewise ideep's cache of convolution descriptors, kept apart
  // from oneDNN's: 64 shapes instead of 1,024.
  train::BoundOneDnnPrimitiveCache();
  train::BoundIdeepCache();
  const auto& recipe = recipes::FindRecipe(options.source.recipe);
  std::string warnings;
  auto loaded = recipe::LoadConfigs(recipe, Locate(options.source), options.configs, options.overrides, &warnings);
  std::cerr << warnings;

  if (options.dry_run) {
    int missing = 0;
    std::vector<std::string> too_large;  // training steps that do not fit in memory
    for (auto& config : loaded) {
      auto& s = *config.settings;
      fmt::print("config {}\n", Lineage(config));
      const stdfs::path out = OutputFolder(s);
      fmt::print("  output folder: {}\n", out.string());
      fmt::print("  database:      {}\n",
                 DbName(ExperimentDb(options.db, s)));
      fmt::print("  settings hash: {}\n", settings::SettingsHash(s.tree()));
      const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
      const auto runtime = distributed::GetRuntimeInfo();
      const auto plan = PlanProcesses(s, options.dist, runtime,
                                      visible != nullptr ? std::optional<std::string>(visible) : std::nullopt);
      fmt::print("  processes:     {}{}\n", plan.Describe(),
                 options.dist.nnodes > 1 ? fmt::format(" per node, {} nodes", options.dist.nnodes) : "");
      const auto stages = recipe.SelectStages(s.start_stage(), s.end_stage());
      if (stages.empty()) fmt::print("  stages:        none (recipe.start_stage..end_stage selects no stage)\n");
      // Each stage's inputs, counting what the stages before it in this run produce.
      recipe::RunContext context(recipe.name(), config.name, s, out, nullptr, 0);
      const recipe::StageRunner& runner = recipes::StageRunnerFor(recipe);
      std::vector<int> earlier;
      for (const auto& stage : stages) {
        fmt::print("  stage {} {:<13}{}{}\n", stage.number, stage.name, stage.description,
                   stage.all_ranks ? " [all ranks]" : "");
        for (const auto& problem : runner.MissingInputs(stage, context, earlier)) {
          fmt::print("    missing input: {}\n", problem);
          ++missing;
        }
        if (const auto need = runner.TrainingMemory(stage, context)) {
          const auto verdict = recipe::CheckMemory(*need, plan.world_size, RankMemory(plan, runtime));
          fmt::print("    memory: {}\n", verdict.line);
          if (!verdict.fits) too_large.push_back(verdict.line);
        }
        earlier.push_back(stage.number);
      }
    }
    if (!too_large.empty()) {
      fmt::print(stderr, "asvrun: {} training step{} would not fit in memory:\n", too_large.size(),
                 too_large.size() == 1 ? "" : "s");
      for (const auto& line : too_large) fmt::print(stderr, "  {}\n", line);
      return kExitConfigError;
    }
    if (missing > 0) {
      fmt::print(stderr, "asvrun: {} missing input{}: the run would stop at the stage that reads {}\n", missing,
                 missing == 1 ? "" : "s", missing == 1 ? "it" : "them");
      return kExitDataError;
    }
    return kExitOk;
  }

  SignalGuard guard;
  const auto world = distributed::WorldFromEnvironment(distributed::CurrentEnvironment());
  for (auto& config : loaded) {
    const int status = RunJob(recipe, config, options, world, guard);
    if (status != kExitOk) return status;
  }
  return kExitOk;
}

int Info() {
  fmt::print("asvcpp {}\n", kAsvcppVersion);
  std::cout << distributed::Describe(distributed::GetRuntimeInfo());
  return kExitOk;
}

}  // namespace asv::tools
