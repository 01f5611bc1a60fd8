// The process group of a data-parallel job (README.md, "GPUs and data-parallel training"):
// a c10d TCPStore for rendezvous and coordination, ProcessGroupNCCL on CUDA and
// ProcessGroupGloo on the CPU, and the GradientReducer the trainer calls.
//
//   StoreServer server(0);                              // launcher: any free port (no collisions)
//   ... start workers with MASTER_PORT=server.port() ...
//   auto group = ProcessGroup::Create({world, "cpu"});  // worker: connects, builds Gloo/NCCL
//   trainer = Trainer(options, data, group->reducer());
//
// Collectives (gradients, statistics) go through Gloo/NCCL with explicit timeouts. Waits that
// can last long because rank 0 works alone (feature extraction, evaluation during training) go
// through the store instead and never time out: WaitFor, StoreBarrier, and the reducer's
// BroadcastFlag and Barrier. A rank that fails calls ReportError; a watchdog thread in every other
// rank sees it (or sees the store vanish) within `poll` and calls the peer-failure handler, which
// by default logs "rank N failed: ..." and ends the process with exit status 5. Each watchdog
// also bumps a heartbeat key and watches rank+1's: a rank silent for 60 polls (30 s by default)
// that has not left is reported as failed, so a rank killed while the others wait in the store
// cannot leave them waiting for ever. A rank killed inside a Gloo collective makes the others'
// collective throw at once (connection closed); NCCL relies on its watchdog (collective_timeout)
// or on the launcher stopping the job.
//
// Keys live under the prefix "asvcpp" ("asvcpp.2", "asvcpp.3", ... for later groups in the same
// process); Signal/WaitFor keys under "signal/". ~ProcessGroup waits (bounded by connect_timeout)
// until every rank has left before rank 0 closes a store it hosts. Create() sets SIGPIPE to
// ignored unless the program installed its own handler (Gloo writes to sockets without
// MSG_NOSIGNAL). No LibTorch in this header. Implemented in store.cc (StoreServer, store waits,
// watchdog), bucketed_reducer.cc and bucket_plan.cc (the reducer) and process_group.cc.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "asvcpp/distributed/world.h"
#include "asvcpp/enums/dist_types.h"

namespace asv::train {
class GradientReducer;
}

namespace asv::distributed {

/// A TCPStore server in this process (asvrun's launcher, or node 0 of a multi-node asvrun job).
class StoreServer {
 public:
  /// `port` 0: a free port chosen by the OS (read back with port()). Throws std::runtime_error
  /// when the port cannot be bound (message names the port).
  explicit StoreServer(int port, std::chrono::seconds timeout = std::chrono::seconds(900));
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;
  /// The TCP port the server listens on (the one chosen by the OS when constructed with 0).
  int port() const;
  /// A key of the first group's namespace ("asvcpp/"), e.g. Get("error/1"): the message rank 1
  /// reported with ReportError. nullopt when the key is not set.
  std::optional<std::string> Get(const std::string& key) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct ProcessGroupOptions {
  WorldInfo world;
  std::string device = "cpu";  ///< "cpu" or "cuda:N" (N is the local device index)
  /// kAuto: Gloo on the CPU, NCCL on a GPU; kNccl only on a GPU; kGloo on either.
  DistBackend backend = DistBackend::kAuto;
  std::chrono::seconds collective_timeout{600};  ///< Gloo/NCCL collectives (NCCL watchdog)
  std::chrono::seconds connect_timeout{900};     ///< reaching the store and the other ranks
  std::chrono::milliseconds poll{500};           ///< store polling of waits and the watchdog
  std::size_t bucket_bytes = 25u << 20;          ///< gradient buckets (the first one 1 MiB)
};

class ProcessGroup {
 public:
  /// Connects to (or, as rank 0 without an external store, hosts) the store, checks that all
  /// ranks agree on the world size, builds the backend of options.backend. Throws ConfigError for
  /// NCCL on the CPU and when the backend is missing from this build (e.g. CPU without Gloo), std::runtime_error when rendezvous fails
  /// within connect_timeout (message names the store address).
  static std::shared_ptr<ProcessGroup> Create(const ProcessGroupOptions& options);
  ~ProcessGroup();

  /// The world this group was created for, and its rank and size.
  const WorldInfo& world() const;
  int rank() const;
  int world_size() const;

  /// The gradient reducer for train::Trainer (bucketed all-reduce overlapped with backward).
  std::shared_ptr<train::GradientReducer> reducer();

  /// Sets `key` in the store (namespaced per job). Any rank.
  void Signal(const std::string& key, const std::string& value = "1");
  /// Blocks without timeout until `key` is set, returns its value. Throws std::runtime_error
  /// naming the rank when another rank reported an error or the store is gone.
  std::string WaitFor(const std::string& key);
  /// All ranks wait for each other (store-based, no timeout). `name` must be unique per use.
  void StoreBarrier(const std::string& name);

  /// Tells every other rank that this one failed (their watchdog reacts).
  void ReportError(const std::string& message);
  /// Replaces the default reaction to a peer failure (called at most once, on the watchdog
  /// thread). The handler should end the process. `rank` is -1 when a store hosted outside the
  /// workers (launcher, torchrun's agent) disappeared; the message then says so.
  void SetPeerFailureHandler(std::function<void(int rank, const std::string& message)> handler);

 private:
  ProcessGroup();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace asv::distributed
