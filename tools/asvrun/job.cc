#include "tools/asvrun/job.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <thread>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/db/database.h"
#include "asvcpp/db/gpu_queue.h"
#include "asvcpp/distributed/gpu_selection.h"
#include "asvcpp/distributed/launcher.h"
#include "asvcpp/distributed/process_group.h"
#include "asvcpp/distributed/world.h"
#include "asvcpp/recipe/config_loader.h"
#include "asvcpp/recipe/recorded_run.h"
#include "asvcpp/recipe/run_context.h"
#include "asvcpp/recipe/stage_driver.h"
#include "asvcpp/recipe/system_folder_lock.h"
#include "asvcpp/settings/dump.h"
#include "asvcpp/train/trainer.h"
#include "recipes/registry.h"
#include "tools/asvrun/commands.h"
#include "tools/asvrun/signal_guard.h"
#include "tools/asvrun/version.h"

namespace asv::tools {
namespace stdfs = std::filesystem;

namespace {

std::optional<std::string> GetEnv(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::optional<std::string>(value) : std::nullopt;
}

stdfs::path DatabasePath(const RunOptions& options, const recipe::RecipeSettings& settings) {
  return ExperimentDb(options.db, settings);
}

// The folder a run writes its networks, embeddings and scores into (one writer at a time).
stdfs::path SystemFolder(const recipe::RecipeSettings& settings) {
  return OutputFolder(settings) / settings.common().paths.system_folder;
}

db::RunInfo MakeRunInfo(const recipe::Recipe& recipe, const recipe::LoadedConfig& config, const RunOptions& options,
                        int world_size, const std::vector<int>& gpus) {
  const auto& s = *config.settings;
  db::RunInfo info;
  info.recipe = recipe.name();
  info.config = config.name;
  info.parent_chain = config.parents;
  info.settings_json = settings::ToJson(s.tree()).dump();
  info.settings_hash = settings::SettingsHash(s.tree());
  info.command_line = options.command_line;
  info.gpu_ids = gpus;
  info.world_size = world_size;
  info.code_version = kAsvcppVersion;
  info.output_folder = OutputFolder(s).string();
  return info;
}

// How a run waits for (or warns about) running jobs that hold one of its GPUs.
db::GpuQueueOptions GpuQueue(const std::vector<int>& gpu_ids, const DistOptions& dist) {
  db::GpuQueueOptions queue;
  queue.wait = dist.wait_for_gpu;
  queue.poll = std::chrono::seconds(std::max(1, dist.gpu_poll_seconds));
  queue.on_busy = [gpu_ids, wait = dist.wait_for_gpu, poll = std::max(1, dist.gpu_poll_seconds)](
                      const std::vector<db::RunRow>& holders) {
    ASV_LOG(Warning, "{}", db::FormatGpuHolders(gpu_ids, holders));
    if (wait) {
      ASV_LOG(Info, "{}; checking every {} s", db::FormatGpuWaiting(gpu_ids, holders), poll);
    } else {
      ASV_LOG(Warning, "starting anyway; --wait-for-gpu queues a run until its GPUs are free");
    }
  };
  return queue;
}

// The command line of one worker: this config only, with the same config files and overrides.
std::vector<std::string> WorkerArgv(const RunOptions& options, const std::string& config) {
  std::vector<std::string> argv{asv::fs::SelfExecutable().string(), options.source.recipe, config};
  for (const auto& o : options.overrides) {
    argv.push_back("--set");
    argv.push_back(o);
  }
  auto add = [&](const char* flag, const std::string& value) {
    if (value.empty()) return;
    argv.push_back(flag);
    argv.push_back(value);
  };
  add("--init-config", options.source.init_config);
  add("--run-configs", options.source.run_configs);
  add("--config-root", options.source.config_root);
  return argv;
}

// Stage-driver rendezvous over the process group's store; keys are per config so that several
// configs of one torchrun/srun invocation never see each other's keys.
class GroupCoordinator final : public recipe::RankCoordinator {
 public:
  GroupCoordinator(distributed::ProcessGroup& group, std::string prefix) : group_(group), prefix_(std::move(prefix)) {}
  void Signal(const std::string& key) override { group_.Signal(prefix_ + key); }
  void WaitFor(const std::string& key) override { group_.WaitFor(prefix_ + key); }

 private:
  distributed::ProcessGroup& group_;
  std::string prefix_;
};

int RunInProcess(const recipe::Recipe& recipe, recipe::LoadedConfig& config, const RunOptions& options,
                 SignalGuard& guard) {
  auto& s = *config.settings;
  recipe::SystemFolderLock folder_lock(SystemFolder(s), {0, config.name, "", 0, ""}, options.dist.wait_for_gpu);
  recipe::RecordedRun run(DatabasePath(options, s), MakeRunInfo(recipe, config, options, 1, {}), nullptr, &guard);
  folder_lock.Update({run.id(), config.name, "", 0, ""});
  ASV_LOG(Info, "run {} of {} {} recorded in {}", run.id(), recipe.name(), config.name, DbName(run.db_path()));
  recipe::RunContext context(recipe.name(), config.name, s, OutputFolder(s), &run.db(), run.id());
  const auto& computing = s.common().computing;
  const int gpu = computing.gpu_ids.empty() ? 0 : computing.gpu_ids.front();
  context.set_device(train::SelectDevice(computing.use_gpu, gpu));
  try {
    recipe::RunStages(recipe, recipes::StageRunnerFor(recipe), context);
  } catch (const std::exception& e) {
    run.Fail(e.what());
    throw;
  }
  run.Finish();
  ASV_LOG(Info, "run {} ({}) finished", run.id(), config.name);
  return kExitOk;
}

int RunLauncher(const recipe::Recipe& recipe, recipe::LoadedConfig& config, const RunOptions& options,
                const ProcessPlan& plan, SignalGuard& guard) {
  auto& s = *config.settings;
  const auto& d = options.dist;
  const bool node0 = d.node_rank == 0;

  // Node 0 records the run (its launcher lives as long as the job: crash detection sees it).
  // It also holds the system folder for the job's workers (one writer per system folder).
  std::unique_ptr<recipe::RecordedRun> run;
  std::unique_ptr<recipe::SystemFolderLock> folder_lock;
  if (node0) {
    folder_lock = std::make_unique<recipe::SystemFolderLock>(SystemFolder(s), recipe::FolderHolder{0, config.name},
                                                             d.wait_for_gpu);
    const auto queue = GpuQueue(plan.gpu_ids, d);
    run = std::make_unique<recipe::RecordedRun>(
        DatabasePath(options, s), MakeRunInfo(recipe, config, options, plan.world_size, plan.gpu_ids), &queue, &guard);
    folder_lock->Update({run->id(), config.name});
    ASV_LOG(Info, "run {} of {} {} recorded in {}: {}", run->id(), recipe.name(), config.name,
            DbName(run->db_path()), plan.Describe());
  }

  // The store: in this process on node 0 (a free port on one node, so two jobs never collide).
  std::unique_ptr<distributed::StoreServer> store;
  std::string master_addr = "127.0.0.1";
  int master_port = d.master_port;
  if (d.nnodes > 1) master_addr = d.master_addr;
  if (node0) {
    store = std::make_unique<distributed::StoreServer>(d.nnodes > 1 ? d.master_port : 0);
    master_port = store->port();
  }

  std::vector<distributed::WorkerSpec> workers;
  for (int local = 0; local < plan.nproc_per_node; ++local) {
    distributed::WorkerSpec w;
    w.rank = d.node_rank * plan.nproc_per_node + local;
    w.argv = WorkerArgv(options, config.name);
    distributed::WorldInfo world;
    world.rank = w.rank;
    world.world_size = plan.world_size;
    world.local_rank = local;
    world.local_world_size = plan.nproc_per_node;
    world.node_rank = d.node_rank;
    world.nnodes = d.nnodes;
    world.master_addr = master_addr;
    world.master_port = master_port;
    w.env = distributed::AsvrunWorkerEnvironment(world);
    w.env["ASV_SETTINGS_HASH"] = settings::SettingsHash(s.tree());
    w.env["ASV_DEVICE"] = plan.cuda ? "cuda:0" : "cpu";
    if (run) {
      w.env["ASV_RUN_ID"] = std::to_string(run->id());
      w.env["ASV_DB"] = run->db_path().string();
    }
    if (plan.cuda) {
      w.env["CUDA_VISIBLE_DEVICES"] = plan.visible[static_cast<std::size_t>(local)];
      w.env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
    }
    w.unset_env = distributed::kWorkerUnsetEnvironment;
    workers.push_back(std::move(w));
  }

  distributed::Launcher launcher;
  int interrupted = 0;
  guard.SetInterruptHandler([&launcher, &interrupted](int sig) {
    interrupted = sig;
    launcher.Terminate(sig);
  });
  distributed::LaunchResult result;
  try {
    launcher.Start(workers);
    ASV_LOG(Info, "started {} worker processes (ranks {}-{}), rendezvous at {}:{}", workers.size(),
            workers.front().rank, workers.back().rank, master_addr, master_port);
    result = launcher.Wait();
  } catch (const std::exception& e) {
    guard.SetInterruptHandler(nullptr);
    if (run) run->Fail(e.what());
    throw;
  }
  guard.SetInterruptHandler(nullptr);

  if (result.ok() && interrupted == 0) {
    if (run) {
      run->Finish();
      ASV_LOG(Info, "run {} ({}) finished", run->id(), config.name);
    } else {
      ASV_LOG(Info, "node {} of {} ({}) finished", d.node_rank, d.nnodes, config.name);
    }
    return kExitOk;
  }
  std::string message;
  int failure_code = result.ExitCode();
  if (interrupted != 0) {
    message = InterruptionReason(interrupted);
  } else {
    // The rank to blame: e.g. a rank found hung by its peer's watchdog, not the peer that exited
    // with status 5 on finding it.
    const auto failure = distributed::DescribeJobFailure(result, [&store](int rank) -> std::optional<std::string> {
      if (!store) return std::nullopt;
      return store->Get(fmt::format("error/{}", rank));
    });
    failure_code = failure.exit_code;
    message = failure.message;
  }
  if (run) {
    run->Fail(message);
    ASV_LOG(Error, "run {} ({}) failed: {}", run->id(), config.name, message);
  } else {
    ASV_LOG(Error, "node {} of {} ({}) failed: {}", d.node_rank, d.nnodes, config.name, message);
  }
  if (interrupted != 0) return 128 + interrupted;
  return failure_code;
}

// The device of a worker. asvrun's launcher pinned it already (ASV_DEVICE); under torchrun or
// srun this process pins itself to one GPU before CUDA starts: the one CUDA_VISIBLE_DEVICES
// leaves if it names a single device, else entry LOCAL_RANK of the visible ones.
std::string WorkerDevice(const distributed::WorldInfo& world, const recipe::RecipeSettings& settings) {
  if (world.protocol == distributed::LaunchProtocol::kAsvrun) {
    if (auto device = GetEnv("ASV_DEVICE")) return *device;
  }
  if (!settings.common().computing.use_gpu) return "cpu";
  auto visible = GetEnv("CUDA_VISIBLE_DEVICES");
  if (!visible) {
    ::setenv("CUDA_VISIBLE_DEVICES", std::to_string(world.local_rank).c_str(), 1);
  } else {
    const auto entries = distributed::SplitVisibleDevices(*visible);
    if (entries.size() > 1 && static_cast<std::size_t>(world.local_rank) < entries.size()) {
      ::setenv("CUDA_VISIBLE_DEVICES", entries[static_cast<std::size_t>(world.local_rank)].c_str(), 1);
    }
  }
  const auto runtime = distributed::GetRuntimeInfo();
  if (runtime.cuda_available) return "cuda:0";
  if (runtime.cuda_build) ASV_LOG(Warning, "computing.use_gpu is True but no GPU is usable by this rank: CPU");
  return "cpu";
}

int RunWorker(const recipe::Recipe& recipe, recipe::LoadedConfig& config, const RunOptions& options,
              const distributed::WorldInfo& world, SignalGuard& guard) {
  auto& s = *config.settings;
  log::SetRank(world.rank, world.world_size);
  // torchrun and srun choose the world size: the batches are checked against it here.
  recipe::CheckGlobalBatches(s, world.world_size);
  if (auto expected = GetEnv("ASV_SETTINGS_HASH"); expected && *expected != settings::SettingsHash(s.tree())) {
    throw ConfigError(fmt::format("config '{}' resolves differently in this worker than in its launcher: were "
                                  "the config files changed after asvrun started?",
                                  config.name));
  }
  const std::string device = WorkerDevice(world, s);
  if (device == "cpu") {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    distributed::SetIntraOpThreads(std::max(1, cores / std::max(1, world.local_world_size)));
  }
  distributed::ProcessGroupOptions group_options;
  group_options.world = world;
  group_options.device = device;
  group_options.backend = s.common().computing.dist_backend;
  auto group = distributed::ProcessGroup::Create(group_options);
  ASV_LOG(Info, "{} on {}", world.Describe(), device);

  // Rank 0 writes the database: into the launcher's run, or (torchrun, srun) into its own.
  std::unique_ptr<db::Database> launcher_db;    // asvrun's launcher owns the run
  std::unique_ptr<recipe::RecordedRun> own_run;  // torchrun, srun: this rank records the run
  std::unique_ptr<recipe::SystemFolderLock> folder_lock;  // torchrun, srun: this rank holds the system folder
  db::Database* database = nullptr;
  std::int64_t run_id = 0;
  if (world.rank == 0) {
    if (world.protocol == distributed::LaunchProtocol::kAsvrun) {
      const auto env_db = GetEnv("ASV_DB");
      const auto env_run = GetEnv("ASV_RUN_ID");
      if (!env_db || !env_run) throw ConfigError("rank 0 of an asvrun job needs ASV_DB and ASV_RUN_ID");
      launcher_db = std::make_unique<db::Database>(*env_db);
      database = launcher_db.get();
      run_id = std::stoll(*env_run);
    } else {
      folder_lock = std::make_unique<recipe::SystemFolderLock>(SystemFolder(s), recipe::FolderHolder{0, config.name},
                                                               options.dist.wait_for_gpu);
      own_run = std::make_unique<recipe::RecordedRun>(
          DatabasePath(options, s), MakeRunInfo(recipe, config, options, world.world_size, {}), nullptr, &guard);
      folder_lock->Update({own_run->id(), config.name});
      database = &own_run->db();
      run_id = own_run->id();
      ASV_LOG(Info, "run {} of {} {} recorded in {}", run_id, recipe.name(), config.name,
              DbName(own_run->db_path()));
      group->SetPeerFailureHandler([db_path = own_run->db_path(), run_id](int rank, const std::string& message) {
        const std::string text =
            rank >= 0 ? fmt::format("rank {} failed: {}", rank, message) : fmt::format("{}", message);
        ASV_LOG(Error, "{}", text);
        try {
          db::Database(db_path).FinishRun(run_id, db::RunStatus::kFailed, text);
        } catch (const std::exception& e) {
          ASV_LOG(Error, "could not record the failure: {}", e.what());
        }
        std::_Exit(kExitStageError);
      });
    }
  }

  GroupCoordinator coordinator(*group, "config/" + config.name + "/");
  recipe::RunContext context(recipe.name(), config.name, s, OutputFolder(s), database, run_id);
  context.set_rank(world.rank, world.world_size);
  context.set_device(device);
  context.set_reducer(group->reducer());
  context.set_coordinator(&coordinator);
  try {
    recipe::RunStages(recipe, recipes::StageRunnerFor(recipe), context);
  } catch (const std::exception& e) {
    group->ReportError(e.what());
    if (own_run) own_run->Fail(e.what());
    throw;
  }
  // Nobody leaves before everybody is done (rank 0 may host the store the others still use).
  group->StoreBarrier("config/" + config.name + "/end");
  if (own_run) {
    own_run->Finish();
    ASV_LOG(Info, "run {} ({}) finished", run_id, config.name);
  }
  return kExitOk;
}

}  // namespace

std::string ProcessPlan::Describe() const {
  const char* backend = nccl ? "NCCL" : "Gloo";
  if (cuda) {
    return fmt::format("{} on GPU{} {} ({})", world_size == 1 ? "1 process" : fmt::format("{} processes", world_size),
                       gpu_ids.size() == 1 ? "" : "s", fmt::join(gpu_ids, ", "),
                       world_size == 1 ? "single process" : backend);
  }
  return world_size == 1 ? std::string("1 process on the CPU")
                         : fmt::format("{} processes on the CPU ({})", world_size, backend);
}

ProcessPlan PlanProcesses(const recipe::RecipeSettings& settings, const DistOptions& options,
                          const distributed::RuntimeInfo& runtime,
                          const std::optional<std::string>& cuda_visible_devices) {
  if (options.nnodes < 1) throw ConfigError(fmt::format("--nnodes must be at least 1, not {}", options.nnodes));
  if (options.node_rank < 0 || options.node_rank >= options.nnodes) {
    throw ConfigError(fmt::format("--node-rank {} is outside 0..{} (--nnodes {})", options.node_rank,
                                  options.nnodes - 1, options.nnodes));
  }
  if (options.nnodes > 1 && options.master_addr.empty()) {
    throw ConfigError("--nnodes > 1 needs --master-addr (the host of node 0) and --master-port");
  }
  if (options.nproc_per_node < 0) {
    throw ConfigError(fmt::format("--nproc-per-node must be positive, not {}", options.nproc_per_node));
  }
  const auto& computing = settings.common().computing;
  ProcessPlan plan;
  plan.cuda = computing.use_gpu && runtime.cuda_build && runtime.cuda_available;
  if (plan.cuda) {
    plan.gpu_ids.assign(computing.gpu_ids.begin(), computing.gpu_ids.end());
    plan.visible =
        distributed::WorkerVisibleDevices(plan.gpu_ids, cuda_visible_devices, static_cast<int>(runtime.gpus.size()));
    plan.nproc_per_node = static_cast<int>(plan.gpu_ids.size());
    if (options.nproc_per_node > 0 && options.nproc_per_node != plan.nproc_per_node) {
      throw ConfigError(fmt::format("--nproc-per-node {} contradicts computing.gpu_ids = ({}): one process runs "
                                    "per GPU (set computing.use_gpu = False for CPU processes)",
                                    options.nproc_per_node, fmt::join(plan.gpu_ids, ", ")));
    }
  } else {
    plan.nproc_per_node = options.nproc_per_node > 0 ? options.nproc_per_node : 1;
  }
  plan.world_size = plan.nproc_per_node * options.nnodes;
  const auto backend = computing.dist_backend;
  if (backend == distributed::DistBackend::kNccl && !plan.cuda) {
    throw ConfigError(fmt::format("computing.dist_backend = 'nccl' needs GPUs, but this config runs on the CPU ({}); "
                                  "use 'gloo' or 'auto'",
                                  !computing.use_gpu           ? "computing.use_gpu = False"
                                  : !runtime.cuda_build        ? "a LibTorch without CUDA"
                                                               : "no usable GPU"));
  }
  plan.nccl = backend == distributed::DistBackend::kNccl || (backend == distributed::DistBackend::kAuto && plan.cuda);
  if (plan.world_size > 1 && plan.nccl && !runtime.nccl_build) {
    throw ConfigError(fmt::format("{} GPU processes need NCCL, which this LibTorch ({}) lacks; use "
                                  "computing.dist_backend = 'gloo' or a LibTorch with NCCL",
                                  plan.world_size, runtime.torch_version));
  }
  if (plan.world_size > 1 && !plan.nccl && !runtime.gloo_build) {
    throw ConfigError(fmt::format("{} {} processes need Gloo, which this LibTorch ({}) lacks; use {}",
                                  plan.world_size, plan.cuda ? "GPU" : "CPU", runtime.torch_version,
                                  plan.cuda ? "computing.dist_backend = 'nccl' or 'auto'"
                                            : "a GPU build with NCCL or Debian's libtorch-dev"));
  }
  recipe::CheckGlobalBatches(settings, plan.world_size);
  return plan;
}

namespace {
constexpr const char* kAllowNetworkFs = "ASV_DB_ALLOW_NETWORK_FS";
}  // namespace

NetworkFileSystemPermission::NetworkFileSystemPermission(const recipe::RecipeSettings& settings) {
  if (!settings.common().paths.allow_experiment_db_on_network_fs) return;
  if (const char* old = std::getenv(kAllowNetworkFs)) previous_ = old;
  ::setenv(kAllowNetworkFs, "1", 1);
  active_ = true;
}

NetworkFileSystemPermission::~NetworkFileSystemPermission() {
  if (!active_) return;
  if (previous_) {
    ::setenv(kAllowNetworkFs, previous_->c_str(), 1);
  } else {
    ::unsetenv(kAllowNetworkFs);
  }
}

int RunJob(const recipe::Recipe& recipe, recipe::LoadedConfig& config, const RunOptions& options,
           const distributed::WorldInfo& world, SignalGuard& guard) {
  const NetworkFileSystemPermission network_fs(*config.settings);
  if (world.protocol != distributed::LaunchProtocol::kNone) return RunWorker(recipe, config, options, world, guard);
  const auto plan =
      PlanProcesses(*config.settings, options.dist, distributed::GetRuntimeInfo(), GetEnv("CUDA_VISIBLE_DEVICES"));
  if (!plan.needs_launcher() && options.dist.nnodes == 1) return RunInProcess(recipe, config, options, guard);
  return RunLauncher(recipe, config, options, plan, guard);
}

}  // namespace asv::tools
