// The c10d TCPStore side of process groups (store.h): StoreServer, the Coordinator's store-based
// waits and collective runner, and the Watchdog. Behaviour beyond process_group.h:
//  - Liveness: every watchdog also bumps heartbeat/<rank> each poll and watches rank + 1's; one
//    that stands still for 60 polls (30 s by default) is reported as failed on its behalf, so a
//    rank killed while the others wait in the store ends the job too.
//  - The peer-failure handler gets rank -1 when a store hosted outside the workers vanished.
#include "asvcpp/distributed/store.h"

#include <cstdlib>
#include <exception>
#include <stdexcept>

#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <unistd.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"

namespace asv::distributed {
namespace {

// A rank whose watchdog heartbeat stood still this many polls (at least 1 s) is reported dead.
constexpr int kHeartbeatPolls = 60;

// A port that was free a moment ago (for LibTorch versions whose TCPStore cannot report an
// OS-chosen port; the caller retries when it was taken meanwhile).
int ProbeFreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("cannot open a socket to find a free port");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  if (port == 0) throw std::runtime_error("cannot find a free TCP port");
  return port;
}

}  // namespace

std::string Address(const std::string& host, int port) {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

TcpStorePtr OpenTcpStore(const std::string& host, int port, bool is_server, Milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(port);
  o.isServer = is_server;
  o.waitWorkers = false;
  o.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>(host, o);
}

// ---- Coordinator --------------------------------------------------------------------------------

Coordinator::~Coordinator() {
  Close();
}

void Coordinator::Close() {
  if (backend) {
    try {
      compat::ShutdownBackend(*backend);
    } catch (const std::exception& e) {
      ASV_LOG(Warning, "process group shutdown: {}", e.what());
    }
    backend.reset();
  }
  store.reset();
  tcp.reset();
}

compat::CollectiveBackend& Coordinator::Backend() {
  if (!backend) throw std::logic_error("the gradient reducer was used after its process group ended");
  return *backend;
}

c10d::Store& Coordinator::Store() {
  if (!store) throw std::logic_error("the gradient reducer was used after its process group ended");
  return *store;
}

std::string Coordinator::LostStoreMessage() const {
  return fmt::format("lost contact with the rendezvous store at {} (rank 0 or the launcher ended)", address);
}

std::optional<std::pair<int, std::string>> Coordinator::FindPeerError(c10d::Store& s) const {
  if (s.add("errors", 0) == 0) return std::nullopt;
  for (int r = 0; r < world_size; ++r) {
    const std::string key = fmt::format("error/{}", r);
    if (r != rank && s.check({key})) return std::make_pair(r, Text(s.get(key)));
  }
  return std::nullopt;
}

void Coordinator::PollUntil(const std::function<bool()>& done) {
  Backoff backoff(options.poll);
  for (;;) {
    std::optional<std::pair<int, std::string>> failed;
    auto& s = Store();
    try {
      if (done()) return;
      failed = FindPeerError(s);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("{} ({})", LostStoreMessage(), e.what()));
    }
    if (failed) throw std::runtime_error(fmt::format("rank {} failed: {}", failed->first, failed->second));
    backoff.Sleep();
  }
}

void Coordinator::Set(const std::string& key, const std::string& value) {
  Store().set(key, Bytes(value));
}

std::string Coordinator::WaitKey(const std::string& key) {
  PollUntil([&] { return Store().check({key}); });
  return Text(Store().get(key));
}

void Coordinator::Barrier(const std::string& key) {
  Store().add(key, 1);
  PollUntil([&] { return Store().add(key, 0) >= world_size; });
}

void Coordinator::Run(const char* what, const std::function<WorkPtr()>& launch) {
  try {
    launch()->wait();
  } catch (const std::logic_error&) {
    throw;  // used after Close()
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{} failed on rank {} of {}: {}", what, rank, world_size, e.what()));
  }
}

// ---- Watchdog -----------------------------------------------------------------------------------

Watchdog::~Watchdog() {
  Stop();
}

void Watchdog::Start(std::shared_ptr<Coordinator> c, const std::string& prefix) {
  c_ = std::move(c);
  watch_tcp_ = OpenTcpStore(c_->options.world.master_addr, c_->options.world.master_port, false,
                            std::chrono::duration_cast<Milliseconds>(c_->options.connect_timeout));
  watch_ = c10::make_intrusive<c10d::PrefixStore>(prefix, watch_tcp_);
  thread_ = std::thread([this] { Loop(); });
}

void Watchdog::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::SetHandler(PeerFailureHandler handler) {
  std::lock_guard<std::mutex> lock(mutex_);
  handler_ = std::move(handler);
}

bool Watchdog::Pause() {
  std::unique_lock<std::mutex> lock(mutex_);
  return !wake_.wait_for(lock, c_->options.poll, [this] { return stop_; });
}

bool Watchdog::Stopping() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stop_;
}

void Watchdog::Fail(int rank, const std::string& message) {
  if (failed_.exchange(true)) return;
  PeerFailureHandler h;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    h = handler_;
  }
  if (h) {
    h(rank, message);
    return;
  }
  if (rank >= 0) {
    ASV_LOG(Error, "rank {} failed: {}", rank, message);
  } else {
    ASV_LOG(Error, "{}", message);
  }
  std::_Exit(kExitStageError);
}

void Watchdog::Loop() {
  const int self = c_->rank;
  const int successor = (self + 1) % c_->world_size;
  const auto stale_limit = std::max<Clock::duration>(std::chrono::seconds(1), c_->options.poll * kHeartbeatPolls);
  const std::string own_beat = fmt::format("heartbeat/{}", self);
  const std::string peer_beat = fmt::format("heartbeat/{}", successor);
  std::int64_t seen_errors = 0;
  std::int64_t last_beat = -1;
  auto last_change = Clock::now();
  do {
    try {
      watch_->add(own_beat, 1);
      const auto errors = watch_->add("errors", 0);
      if (errors > seen_errors) {
        seen_errors = errors;
        if (auto e = c_->FindPeerError(*watch_)) return Fail(e->first, e->second);
      }
      if (successor == self) continue;
      const auto beat = watch_->add(peer_beat, 0);
      if (beat != last_beat) {
        last_beat = beat;
        last_change = Clock::now();
      } else if (Clock::now() - last_change > stale_limit && !watch_->check({fmt::format("left/{}", successor)})) {
        const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - last_change).count();
        const std::string message =
            fmt::format("no sign of life for {} s (the process died or hangs; reported by rank {})", seconds, self);
        const std::string key = fmt::format("error/{}", successor);
        if (!watch_->check({key})) {
          watch_->set(key, Bytes(message));
          watch_->add("errors", 1);
        }
        return Fail(successor, Text(watch_->get(key)));
      }
    } catch (const std::exception& e) {
      if (Stopping()) return;
      ASV_LOG(Debug, "watchdog: store error: {}", e.what());
      return Fail(c_->options.world.store_hosted_externally ? -1 : 0, c_->LostStoreMessage());
    }
  } while (Pause());
}

// ---- StoreServer --------------------------------------------------------------------------------

struct StoreServer::Impl {
  TcpStorePtr tcp;
  StorePtr store;
  int port = 0;
};

StoreServer::StoreServer(int port, std::chrono::seconds timeout) : impl_(std::make_unique<Impl>()) {
  if (port < 0 || port > 65535) throw std::runtime_error(fmt::format("invalid store port {}", port));
  const auto start = [&](int p) {
    try {
      return OpenTcpStore("127.0.0.1", p, true, timeout);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("cannot start the rendezvous store on port {}: {}", p, e.what()));
    }
  };
  impl_->tcp = start(port);
  impl_->port = impl_->tcp->getPort();
  if (impl_->port == 0) {
    // This LibTorch does not report the port it bound: pick one ourselves (retry when another
    // process took it between the probe and the bind).
    impl_->tcp.reset();
    for (int attempt = 1;; ++attempt) {
      const int p = ProbeFreePort();
      try {
        impl_->tcp = start(p);
        impl_->port = p;
        break;
      } catch (const std::exception&) {
        if (attempt == 20) throw;
      }
    }
  }
  impl_->store = c10::make_intrusive<c10d::PrefixStore>(kKeyPrefix, impl_->tcp);
  ASV_LOG(Debug, "rendezvous store listening on port {}", impl_->port);
}

StoreServer::~StoreServer() = default;

int StoreServer::port() const {
  return impl_->port;
}

std::optional<std::string> StoreServer::Get(const std::string& key) const {
  if (!impl_->store->check({key})) return std::nullopt;
  return Text(impl_->store->get(key));
}

}  // namespace asv::distributed
