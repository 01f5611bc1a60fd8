// Where this process stands in a data-parallel job, read from the environment. Three launch
// protocols are understood:
//
//   asvrun's own launcher   RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,
//                           MASTER_PORT (as torchrun) plus ASV_LAUNCHER=1: the launcher hosts the
//                           rendezvous store, every worker is a client.
//   torchrun                RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,
//                           MASTER_PORT; with TORCHELASTIC_USE_AGENT_STORE=True torchrun's agent
//                           hosts the store, otherwise global rank 0 does.
//   SLURM (srun)            SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID, SLURM_NNODES,
//                           SLURM_TASKS_PER_NODE / SLURM_STEP_TASKS_PER_NODE, SLURM_STEP_NODELIST or
//                           SLURM_JOB_NODELIST (first host = MASTER_ADDR unless MASTER_ADDR is set),
//                           SLURM_JOB_ID (+ SLURM_STEP_ID) derive MASTER_PORT unless it is set.
//                           Recognised only inside a job step (SLURM_STEP_ID set), so an asvrun
//                           started directly in a batch script is a single process.
//   ASV_DIST_PROTOCOL=none|asvrun|torchrun|slurm forces one (none: ignore all of the above).
// Detection order without ASV_DIST_PROTOCOL: ASV_LAUNCHER=1, then RANK and WORLD_SIZE both set
// (torchrun), then SLURM_PROCID, SLURM_NTASKS and SLURM_STEP_ID all set. Without any of them the
// process is alone (world size 1). A variable set to the empty string counts as unset.
//
// asvrun / torchrun: LOCAL_RANK defaults to RANK, LOCAL_WORLD_SIZE to WORLD_SIZE, the node rank
// (GROUP_RANK, else NODE_RANK) to RANK / LOCAL_WORLD_SIZE (0 on one node); nnodes is
// ceil(WORLD_SIZE / LOCAL_WORLD_SIZE). MASTER_ADDR defaults to 127.0.0.1 on a single node and is
// required on several; MASTER_PORT is required when WORLD_SIZE > 1. The store is hosted
// externally under asvrun, and under torchrun when TORCHELASTIC_USE_AGENT_STORE=True (torchrun's
// exact spelling).
//
// SLURM: nnodes is the first of SLURM_STEP_NUM_NODES, SLURM_NNODES, SLURM_JOB_NUM_NODES (else the
// length of the tasks-per-node list); local_world_size is this node's entry of the step's (else the
// job's) tasks-per-node list. Without MASTER_PORT the port is
//   15000 + (SLURM_JOB_ID * 16 + SLURM_STEP_ID) % 40000,
// derived so that every task of a step agrees on it without talking, while concurrent jobs (and
// successive steps of one job) sharing a node get different ports.
// No LibTorch in this file.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace asv::distributed {

enum class LaunchProtocol { kNone, kAsvrun, kTorchrun, kSlurm };

/// "none", "asvrun", "torchrun", "slurm".
const char* ToString(LaunchProtocol protocol);

struct WorldInfo {
  LaunchProtocol protocol = LaunchProtocol::kNone;
  int rank = 0;              ///< global rank, 0 <= rank < world_size
  int world_size = 1;
  int local_rank = 0;        ///< rank on this node
  int local_world_size = 1;  ///< processes on this node
  int node_rank = 0;
  int nnodes = 1;
  std::string master_addr = "127.0.0.1";  ///< host of the rendezvous store
  int master_port = 0;                    ///< port of the rendezvous store (0 only when world_size == 1)
  /// True when a process outside the workers (asvrun's launcher, torchrun's agent) hosts the
  /// store; otherwise global rank 0 hosts it.
  bool store_hosted_externally = false;

  bool distributed() const { return world_size > 1; }
  /// One line, e.g. "rank 1 of 4 (local 1 of 2, node 0 of 2), torchrun, store 10.0.0.1:29500";
  /// an external store adds " (hosted by the launcher)" or " (hosted by torchrun's agent)", and
  /// a process without a protocol reads "single process (no launch protocol)".
  std::string Describe() const;
};

using Environment = std::map<std::string, std::string>;

/// The process environment as a map.
Environment CurrentEnvironment();

/// The variables asvrun's launcher gives the worker of rank `world.rank` (ASV_LAUNCHER=1 and
/// torchrun's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK (= node_rank),
/// MASTER_ADDR, MASTER_PORT), from which WorldFromEnvironment reads `world` back with protocol
/// kAsvrun and the store hosted by the launcher. Variables a launcher must remove from the
/// inherited environment: kWorkerUnsetEnvironment.
Environment AsvrunWorkerEnvironment(const WorldInfo& world);

/// Inherited variables that would change how a worker reads AsvrunWorkerEnvironment
/// (ASV_DIST_PROTOCOL, TORCHELASTIC_USE_AGENT_STORE).
extern const std::vector<std::string> kWorkerUnsetEnvironment;

/// Reads the protocol variables above. Throws ConfigError naming the protocol, the variable and
/// its value when one is missing, not an integer, or inconsistent, e.g. "torchrun environment:
/// RANK=3 but WORLD_SIZE=2: RANK must be smaller". Logs a warning when only one of RANK and
/// WORLD_SIZE is set (then the process is alone).
WorldInfo WorldFromEnvironment(const Environment& env);

/// Expands a SLURM host list: "node[01-03,07],gpu5" -> node01 node02 node03 node07 gpu5.
/// Zero padding of ranges is kept (numbers get the width of the range's lower bound); several
/// bracket groups in one name give every combination, the last group varying fastest
/// ("rack[1-2]-n[1-2]" -> rack1-n1 rack1-n2 rack2-n1 rack2-n2). Throws ConfigError for malformed
/// lists ("node[1-", "node[3-1]", empty names) and for more than 2^20 hosts.
std::vector<std::string> ExpandHostList(std::string_view list);

/// Expands SLURM_TASKS_PER_NODE: "2(x3),1" -> 2 2 2 1. Throws ConfigError when malformed or when
/// a count or repetition is 0.
std::vector<int> ExpandTasksPerNode(std::string_view spec);

}  // namespace asv::distributed
