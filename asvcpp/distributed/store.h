// Internal to asvcpp/distributed: the c10d TCPStore side of a process group, shared by store.cc,
// process_group.cc and bucketed_reducer.cc. Not a public header (it includes LibTorch).
//   Coordinator  one rank's store connection and collective backend, with the store-based waits
//                (WaitKey, Barrier) that never time out but throw as soon as a peer reported an
//                error or the store vanished.
//   Watchdog     a thread with its own store connection: bumps heartbeat/<rank> each poll,
//                watches rank + 1's and the error counter, and calls the peer-failure handler.
//
// Every key of a job lives under the prefix kKeyPrefix (StoreServer::Get reads the same
// namespace; later groups of a process use kKeyPrefix.2, .3, ...). Keys:
//   world_size/<rank>, joined            rendezvous
//   error/<rank>, errors                 ReportError (the counter is what the watchdogs poll)
//   heartbeat/<rank>                     watchdog liveness counter, watched by rank - 1
//   left/<rank>, left                    a rank ended its ProcessGroup normally
//   signal/<key>                         Signal / WaitFor
//   barrier/<name>                       StoreBarrier
//   reducer/flag/<n>, reducer/barrier/<n>  the reducer's BroadcastFlag and Barrier
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/types.h>

#include "asvcpp/compat/torch_compat.h"
#include "asvcpp/distributed/process_group.h"

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace asv::distributed {

using Clock = std::chrono::steady_clock;
using Milliseconds = std::chrono::milliseconds;
using StorePtr = c10::intrusive_ptr<c10d::Store>;
using TcpStorePtr = c10::intrusive_ptr<c10d::TCPStore>;
using BackendPtr = c10::intrusive_ptr<compat::CollectiveBackend>;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;
using PeerFailureHandler = std::function<void(int rank, const std::string& message)>;

constexpr const char* kKeyPrefix = "asvcpp";

inline std::vector<std::uint8_t> Bytes(const std::string& s) {
  return {s.begin(), s.end()};
}

inline std::string Text(const std::vector<std::uint8_t>& b) {
  return {b.begin(), b.end()};
}

/// "host:port", or "[host]:port" for an IPv6 address.
std::string Address(const std::string& host, int port);

/// Connects to (is_server: starts) the TCPStore at host:port; `timeout` bounds connecting and
/// every store operation. Throws what c10d throws (c10::Error, std::runtime_error).
TcpStorePtr OpenTcpStore(const std::string& host, int port, bool is_server, Milliseconds timeout);

/// Sleeps 1, 2, 4, ... ms up to `cap` between polls: short waits stay fast, long ones cheap.
class Backoff {
 public:
  explicit Backoff(Milliseconds cap) : cap_(std::max(cap, Milliseconds(1))) {}
  void Sleep() {
    std::this_thread::sleep_for(next_);
    next_ = std::min(cap_, next_ * 2);
  }

 private:
  Milliseconds cap_;
  Milliseconds next_{1};
};

/// What the ProcessGroup and its reducer share: the store connection, the backend and the
/// store-based coordination. Lives as long as either of them.
class Coordinator {
 public:
  ProcessGroupOptions options;
  int rank = 0;
  int world_size = 1;
  std::string address;  // host:port of the store
  bool hosts_store = false;
  torch::Device device{torch::kCPU};  // where collectives run (CPU for Gloo, the GPU for NCCL)
  TcpStorePtr tcp;                    // the server too when hosts_store
  StorePtr store;                     // tcp under the job prefix
  BackendPtr backend;

  ~Coordinator();

  /// Ends the backend and this rank's store connections (the store server too when hosting).
  /// ~ProcessGroup calls it, so that the end of a group is the end of the job's store even when
  /// its reducer lives on; using that reducer afterwards throws std::logic_error.
  void Close();

  /// The backend / the prefixed store; std::logic_error after Close().
  compat::CollectiveBackend& Backend();
  c10d::Store& Store();

  /// "lost contact with the rendezvous store at host:port (...)".
  std::string LostStoreMessage() const;

  /// The first rank other than this one that reported an error, if any, with its message.
  std::optional<std::pair<int, std::string>> FindPeerError(c10d::Store& s) const;

  /// Polls `done` (store operations allowed) until it returns true, sleeping up to options.poll
  /// in between. No timeout; throws std::runtime_error when a peer failed ("rank N failed: ...")
  /// or the store is gone (LostStoreMessage).
  void PollUntil(const std::function<bool()>& done);

  /// Sets `key` (under the job prefix) to `value`.
  void Set(const std::string& key, const std::string& value);
  /// Waits (PollUntil) until `key` is set; returns its value.
  std::string WaitKey(const std::string& key);
  /// Counts this rank in at `key` and waits (PollUntil) until all world_size ranks did.
  void Barrier(const std::string& key);

  /// Runs a collective and waits for it; failures throw std::runtime_error naming `what` and
  /// this rank (std::logic_error after Close() passes through).
  void Run(const char* what, const std::function<WorkPtr()>& launch);
};

/// One rank's watchdog thread (see the top of this file). Its own store connection, so that it
/// never queues behind the main thread.
class Watchdog {
 public:
  Watchdog() = default;
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// Opens the watchdog's connection to the store of `c` (keys under `prefix`) and starts the
  /// thread. Throws what OpenTcpStore throws.
  void Start(std::shared_ptr<Coordinator> c, const std::string& prefix);
  /// Stops and joins the thread (at most one poll); no-op when not running.
  void Stop();
  /// True from Start() until the thread was joined.
  bool Running() const { return thread_.joinable(); }
  /// Replaces the default reaction to a peer failure (log "rank N failed: ..." and exit with
  /// kExitStageError); called at most once, on the watchdog thread.
  void SetHandler(PeerFailureHandler handler);

 private:
  bool Pause();  // waits one poll; false when asked to stop
  bool Stopping();
  void Fail(int rank, const std::string& message);
  void Loop();

  std::shared_ptr<Coordinator> c_;
  TcpStorePtr watch_tcp_;
  StorePtr watch_;
  std::thread thread_;
  std::mutex mutex_;  // stop flag and handler
  std::condition_variable wake_;
  bool stop_ = false;
  PeerFailureHandler handler_;
  std::atomic<bool> failed_{false};  // the peer-failure handler ran
};

}  // namespace asv::distributed
