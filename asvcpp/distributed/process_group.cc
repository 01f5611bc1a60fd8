// The process group (process_group.h): rendezvous at the store, the Gloo or NCCL backend, the
// watchdog (store.h) and the gradient reducer (bucketed_reducer.h). Behaviour beyond
// process_group.h:
//  - ~ProcessGroup: rank 0, when it hosts the store, waits (up to connect_timeout) until every
//    rank left or one failed; the others wait for that store to close, so that a next group on
//    the same port never reaches the old one. Later groups of a process use key prefixes
//    asvcpp.2, ...
//  - ProcessGroup::Create sets SIGPIPE to ignored unless the program installed a handler.
#include "asvcpp/distributed/process_group.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <signal.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/types.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/compat/torch_compat.h"
#include "asvcpp/distributed/bucketed_reducer.h"
#include "asvcpp/distributed/store.h"

// The c10d headers compile to nothing without LibTorch's own USE_C10D_* definitions.
#if defined(ASV_WITH_GLOO) && defined(USE_C10D_GLOO)
#define ASV_HAVE_GLOO_PG 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if defined(ASV_WITH_NCCL) && defined(USE_C10D_NCCL)
#define ASV_HAVE_NCCL_PG 1
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace asv::distributed {
namespace {

#ifdef ASV_HAVE_GLOO_PG
bool IsLoopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}
#endif

enum class BackendKind { kGloo, kNccl };

}  // namespace

struct ProcessGroup::Impl {
  std::shared_ptr<Coordinator> c;
  std::string prefix = kKeyPrefix;
  std::shared_ptr<train::GradientReducer> reducer;
  Watchdog watchdog;
  std::atomic<bool> reported{false};  // ReportError ran
};

ProcessGroup::ProcessGroup() : impl_(std::make_unique<Impl>()) {}

ProcessGroup::~ProcessGroup() {
  auto& m = *impl_;
  if (!m.watchdog.Running()) return;
  auto& c = *m.c;
  if (std::uncaught_exceptions() > 0 && !m.reported) {
    // Destroyed while an exception propagates: the others must not wait for this rank.
    ReportError("the process group ended because of an exception");
  }
  // Ranks mark that they left. Rank 0, when it hosts the store, keeps it (and its watchdog) up
  // until every rank left or one failed, so that nobody's watchdog sees the store vanish at the
  // end of a successful job. The other ranks then wait for that store to close, so that a next
  // ProcessGroup on the same port never reaches the old store.
  if (!c.hosts_store) m.watchdog.Stop();
  const auto deadline = Clock::now() + c.options.connect_timeout;
  Backoff backoff(c.options.poll);
  try {
    c.Set(fmt::format("left/{}", c.rank), "1");
    c.store->add("left", 1);
    if (c.hosts_store) {
      while (c.store->add("left", 0) < c.world_size && c.store->add("errors", 0) == 0 && Clock::now() < deadline) {
        backoff.Sleep();
      }
    } else if (!c.options.world.store_hosted_externally) {
      while (c.store->add("errors", 0) == 0 && Clock::now() < deadline) backoff.Sleep();
    }
  } catch (const std::exception& e) {
    ASV_LOG(Debug, "left the process group: {}", e.what());  // rank 0 closed the store: expected
  }
  m.watchdog.Stop();
  c.Close();
}

namespace {

// The backend of computing.dist_backend for a process on the CPU or a GPU. Throws ConfigError
// for NCCL without a GPU and for a backend this LibTorch build lacks.
BackendKind ChooseBackend(DistBackend backend, bool cuda) {
  if (backend == DistBackend::kNccl && !cuda) {
    throw ConfigError(
        "computing.dist_backend = 'nccl' needs GPUs, but this process trains on the CPU (use 'gloo' or 'auto')");
  }
  const bool nccl = backend == DistBackend::kNccl || (backend == DistBackend::kAuto && cuda);
#ifndef ASV_HAVE_NCCL_PG
  if (nccl) throw ConfigError("data-parallel training with NCCL needs a LibTorch with NCCL, which this build lacks");
#endif
#ifndef ASV_HAVE_GLOO_PG
  if (!nccl) {
    throw ConfigError(fmt::format("data-parallel training with Gloo{} needs a LibTorch with Gloo, which this build "
                                  "lacks",
                                  cuda ? " (computing.dist_backend = 'gloo')" : " on the CPU"));
  }
#endif
  return nccl ? BackendKind::kNccl : BackendKind::kGloo;
}

}  // namespace

std::shared_ptr<ProcessGroup> ProcessGroup::Create(const ProcessGroupOptions& options) {
  const WorldInfo& w = options.world;
  if (w.world_size < 1 || w.rank < 0 || w.rank >= w.world_size) {
    throw ConfigError(fmt::format("invalid process group: rank {} of {}", w.rank, w.world_size));
  }
  if (w.master_port < 1 || w.master_port > 65535) {
    throw ConfigError(fmt::format("invalid rendezvous port {} (MASTER_PORT)", w.master_port));
  }
  torch::Device device(torch::kCPU);
  if (options.device.rfind("cuda", 0) == 0) {
    try {
      device = torch::Device(options.device);
    } catch (const std::exception&) {
      throw ConfigError(fmt::format("invalid device '{}' for data-parallel training (cpu or cuda:N)", options.device));
    }
    if (!device.has_index()) device = torch::Device(torch::kCUDA, 0);
  } else if (options.device != "cpu") {
    throw ConfigError(fmt::format("invalid device '{}' for data-parallel training (cpu or cuda:N)", options.device));
  }
  const BackendKind kind = ChooseBackend(options.backend, device.is_cuda());
#ifdef ASV_HAVE_NCCL_PG
  if (device.is_cuda()) c10::cuda::set_device(device.index());
#endif

  // Several groups in one process (one after the other) on one external store get their own
  // key spaces; every rank creates them in the same order.
  static std::atomic<int> groups_created{0};
  const int generation = ++groups_created;

  // A peer that dies while we write to its socket must give an error (EPIPE), not kill this
  // process silently with SIGPIPE (Python, the usual host of c10d, ignores SIGPIPE too). A
  // handler installed by the program stays.
  struct sigaction pipe_action {};
  if (::sigaction(SIGPIPE, nullptr, &pipe_action) == 0 && pipe_action.sa_handler == SIG_DFL) {
    ::signal(SIGPIPE, SIG_IGN);
  }

  std::shared_ptr<ProcessGroup> group(new ProcessGroup());
  auto& m = *group->impl_;
  m.c = std::make_shared<Coordinator>();
  auto& c = *m.c;
  c.options = options;
  c.rank = w.rank;
  c.world_size = w.world_size;
  c.device = device;
  c.hosts_store = w.rank == 0 && !w.store_hosted_externally;
  c.address = Address(w.master_addr, w.master_port);
  m.prefix = generation == 1 ? std::string(kKeyPrefix) : fmt::format("{}.{}", kKeyPrefix, generation);
  const auto connect_timeout = std::chrono::duration_cast<Milliseconds>(options.connect_timeout);

  // Before the wait, so that a rank that cannot reach its store says where it waits.
  ASV_LOG(Info, "rank {} of {}: {} the rendezvous store at {} (waiting up to {} s for the other ranks)", w.rank,
          w.world_size, c.hosts_store ? "starting" : "joining", c.address, options.connect_timeout.count());
  try {
    c.tcp = OpenTcpStore(w.master_addr, w.master_port, c.hosts_store, connect_timeout);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("rank {}: cannot {} the rendezvous store at {} within {} s: {}", w.rank,
                                         c.hosts_store ? "start" : "reach", c.address, options.connect_timeout.count(),
                                         e.what()));
  }
  c.store = c10::make_intrusive<c10d::PrefixStore>(m.prefix, c.tcp);

  // Rendezvous: everybody registers its world size, then waits for the others.
  const auto deadline = Clock::now() + options.connect_timeout;
  std::int64_t joined = 0;
  try {
    c.Set(fmt::format("world_size/{}", w.rank), std::to_string(w.world_size));
    c.store->add("joined", 1);
    Backoff backoff(options.poll);
    while ((joined = c.store->add("joined", 0)) < w.world_size) {
      if (Clock::now() > deadline) {
        throw std::runtime_error(fmt::format("rendezvous at the store {} timed out after {} s: {} of {} ranks joined",
                                             c.address, options.connect_timeout.count(), joined, w.world_size));
      }
      backoff.Sleep();
    }
    for (int r = 0; r < w.world_size; ++r) {
      const std::string key = fmt::format("world_size/{}", r);
      const std::string theirs = c.store->check({key}) ? Text(c.store->get(key)) : "?";
      if (theirs != std::to_string(w.world_size)) {
        throw std::runtime_error(
            fmt::format("ranks disagree on the world size (store {}): rank {} has {}, rank {} has {}", c.address,
                        w.rank, w.world_size, r, theirs));
      }
    }
  } catch (const c10::Error& e) {
    throw std::runtime_error(
        fmt::format("rendezvous at the store {} failed: {}", c.address, e.what_without_backtrace()));
  }

  const auto collective_timeout = std::chrono::duration_cast<Milliseconds>(options.collective_timeout);
  try {
    if (kind == BackendKind::kGloo) {
#ifdef ASV_HAVE_GLOO_PG
      auto o = c10d::ProcessGroupGloo::Options::create(collective_timeout);
      const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
      if (ifname != nullptr && *ifname != '\0') {
        std::string list = ifname;
        for (std::size_t start = 0; start <= list.size();) {
          const auto end = std::min(list.find(',', start), list.size());
          const auto name = list.substr(start, end - start);
          if (!name.empty()) o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
          start = end + 1;
        }
      } else if (IsLoopback(w.master_addr)) {
        o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      } else {
        o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      }
      o->threads = 2;
      c.backend = c10::make_intrusive<c10d::ProcessGroupGloo>(c.store, w.rank, w.world_size, o);
#endif
    } else {
#ifdef ASV_HAVE_NCCL_PG
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = collective_timeout;
      auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(c.store, w.rank, w.world_size, o);
      compat::BindDevice(*nccl, device);
      c.backend = nccl;
#endif
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("rank {} of {}: cannot build the {} process group (store {}): {}", w.rank,
                                         w.world_size, kind == BackendKind::kGloo ? "Gloo" : "NCCL", c.address,
                                         e.what()));
  }

  try {
    m.watchdog.Start(m.c, m.prefix);
  } catch (const std::exception& e) {
    throw std::runtime_error(
        fmt::format("rank {}: cannot open the watchdog's connection to the store {}: {}", w.rank, c.address, e.what()));
  }
  log::SetRank(w.rank, w.world_size);
  ASV_LOG0(Info, "process group: {} ranks, {} on {}, rendezvous store {}{}", w.world_size,
           kind == BackendKind::kGloo ? "Gloo" : "NCCL", options.device, c.address,
           c.hosts_store ? " (hosted by rank 0)" : "");
  return group;
}

const WorldInfo& ProcessGroup::world() const {
  return impl_->c->options.world;
}

int ProcessGroup::rank() const {
  return impl_->c->rank;
}

int ProcessGroup::world_size() const {
  return impl_->c->world_size;
}

std::shared_ptr<train::GradientReducer> ProcessGroup::reducer() {
  if (!impl_->reducer) impl_->reducer = MakeBucketedReducer(impl_->c);
  return impl_->reducer;
}

void ProcessGroup::Signal(const std::string& key, const std::string& value) {
  impl_->c->Set("signal/" + key, value);
}

std::string ProcessGroup::WaitFor(const std::string& key) {
  return impl_->c->WaitKey("signal/" + key);
}

void ProcessGroup::StoreBarrier(const std::string& name) {
  impl_->c->Barrier("barrier/" + name);
}

void ProcessGroup::ReportError(const std::string& message) {
  auto& c = *impl_->c;
  if (impl_->reported.exchange(true)) return;  // the first report (the cause) stays
  try {
    c.Set(fmt::format("error/{}", c.rank), message);
    c.store->add("errors", 1);
  } catch (const std::exception& e) {
    ASV_LOG(Warning, "cannot report the error to the other ranks ({}): {}", c.address, e.what());
  }
}

void ProcessGroup::SetPeerFailureHandler(std::function<void(int rank, const std::string& message)> handler) {
  impl_->watchdog.SetHandler(std::move(handler));
}

}  // namespace asv::distributed
