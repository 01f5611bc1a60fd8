// How asvrun runs one resolved config: in this process, as the launcher of one worker process
// per GPU (or per --nproc-per-node on the CPU), or as one worker of a data-parallel job started
// by asvrun's launcher, torchrun or srun (asvcpp/distributed/world.h; README.md, "GPUs and data-parallel
// training").
//
//   single process   CPU and world size 1: stages run here (the only path without a launcher).
//   launcher         GPUs, or several processes: records the run in the database, hosts the
//                    rendezvous store on a port the OS picks (node 0), starts the workers pinned
//                    to their GPUs (CUDA_VISIBLE_DEVICES), supervises them (launcher.h) and
//                    records the outcome. `--wait-for-gpu` queues the run while another running
//                    asvrun job holds one of its GPUs.
//   worker           every rank builds the process group; rank 0 runs the rank-0 stages and
//                    writes files and database rows while the others wait (store, no timeout);
//                    all ranks train together.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "asvcpp/distributed/runtime_info.h"
#include "asvcpp/distributed/world.h"

namespace asv::recipe {
class Recipe;
class RecipeSettings;
struct LoadedConfig;
}  // namespace asv::recipe

namespace asv::tools {

class SignalGuard;
struct RunOptions;

/// Process options of `asvrun RECIPE CONFIG...`.
struct DistOptions {
  int nproc_per_node = 0;   ///< --nproc-per-node; 0: one per GPU of computing.gpu_ids, 1 on the CPU
  int nnodes = 1;           ///< --nnodes: asvrun launchers started on this many nodes
  int node_rank = 0;        ///< --node-rank of this launcher
  std::string master_addr;  ///< --master-addr: host of node 0 (multi-node)
  int master_port = 29500;  ///< --master-port: store port on node 0 (multi-node only)
  bool wait_for_gpu = false;  ///< --wait-for-gpu
  int gpu_poll_seconds = 30;  ///< how often a queued run looks again
};

/// The processes one config runs in on this node.
struct ProcessPlan {
  bool cuda = false;                 ///< workers use one GPU each
  int nproc_per_node = 1;
  int world_size = 1;
  std::vector<int> gpu_ids;          ///< physical GPUs of the local ranks (empty on the CPU)
  std::vector<std::string> visible;  ///< CUDA_VISIBLE_DEVICES of each local rank
  bool nccl = false;                 ///< the ranks communicate over NCCL (else Gloo)
  /// A launcher is needed: several processes, or a GPU to pin a fresh process to.
  bool needs_launcher() const { return world_size > 1 || cuda; }
  /// e.g. "2 processes on the CPU (Gloo)", "GPUs 0, 1 (NCCL)".
  std::string Describe() const;
};

/// Decides the processes of a config: GPUs when computing.use_gpu and CUDA is usable (one
/// process per computing.gpu_ids entry, validated with distributed::WorkerVisibleDevices), else
/// --nproc-per-node CPU processes. `cuda_visible_devices`: the launcher's variable (nullopt:
/// unset). Throws ConfigError for a GPU that does not exist, --nproc-per-node that contradicts
/// computing.gpu_ids, a bad --nnodes/--node-rank, computing.dist_backend = 'nccl' without GPUs,
/// several processes whose backend (computing.dist_backend) this LibTorch lacks, or a
/// global batch that the world size does not divide (recipe::CheckGlobalBatches: each rank trains
/// on an equal share of every minibatch).
ProcessPlan PlanProcesses(const recipe::RecipeSettings& settings, const DistOptions& options,
                          const distributed::RuntimeInfo& runtime,
                          const std::optional<std::string>& cuda_visible_devices);

/// While it lives, the environment variable ASV_DB_ALLOW_NETWORK_FS is "1" when `settings` set
/// paths.allow_experiment_db_on_network_fs, so that every open of the config's SQLite experiment
/// database (this process's, the ranks it starts, their progress reporters:
/// db::AllowNetworkFileSystemByDefault) accepts a network file system. Restores the variable's
/// previous value (or its absence) when destroyed. Does nothing when the setting is false, so the
/// user's own ASV_DB_ALLOW_NETWORK_FS=1 still applies. Not thread-safe (setenv).
class NetworkFileSystemPermission {
 public:
  explicit NetworkFileSystemPermission(const recipe::RecipeSettings& settings);
  ~NetworkFileSystemPermission();
  NetworkFileSystemPermission(const NetworkFileSystemPermission&) = delete;
  NetworkFileSystemPermission& operator=(const NetworkFileSystemPermission&) = delete;

 private:
  bool active_ = false;
  std::optional<std::string> previous_;
};

/// Runs `config` in this process, as launcher or as worker (see above), with its
/// NetworkFileSystemPermission; returns the exit status.
/// `world`: from the environment (distributed::WorldFromEnvironment); protocol kNone = not a worker.
int RunJob(const recipe::Recipe& recipe, recipe::LoadedConfig& config, const RunOptions& options,
           const distributed::WorldInfo& world, SignalGuard& guard);

}  // namespace asv::tools
