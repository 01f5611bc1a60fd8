#include "asvcpp/distributed/process_group.h"

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <torch/torch.h>
#include <unistd.h>

#include "asvcpp/base/error.h"
#include "tests/asvcpp/distributed/dist_process.h"
#include "tests/build_paths.h"

namespace asv::distributed {
namespace {

namespace stdfs = std::filesystem;
using std::chrono::seconds;
using testing::ChildProcess;

// Multi-process tests start the worker (dist_worker.cc) over Gloo on 127.0.0.1.
#ifdef ASV_WITH_GLOO
#define ASV_REQUIRE_GLOO() (void)0
#else
#define ASV_REQUIRE_GLOO() GTEST_SKIP() << "this LibTorch build has no Gloo"
#endif

class TempFolder {
 public:
  explicit TempFolder(const std::string& name)
      : path_(stdfs::temp_directory_path() / ("asv_dist_test_" + name + "_" + std::to_string(::getpid()))) {
    stdfs::remove_all(path_);
    stdfs::create_directories(path_);
  }
  ~TempFolder() {
    if (!::testing::Test::HasFailure()) stdfs::remove_all(path_);
  }
  const stdfs::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  stdfs::path path_;
};

// A port that was free a moment ago, for jobs whose rank 0 hosts the store.
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

struct Job {
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  ChildProcess& operator[](std::size_t r) { return *ranks[r]; }
};

// Starts `world` workers: `mode`, ranks 0..world-1, the store at `port` (hosted by the test
// when `external`, else by rank 0), logs as folder/name.rankR.{out,err}.
Job StartJob(const std::string& mode, int world, int port, bool external, const TempFolder& folder,
             const std::string& name, const std::vector<std::string>& extra = {}) {
  Job job;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> argv{ASV_DIST_WORKER,
                                  mode,
                                  "rank=" + std::to_string(r),
                                  "world=" + std::to_string(world),
                                  "port=" + std::to_string(port),
                                  std::string("external=") + (external ? "1" : "0")};
    argv.insert(argv.end(), extra.begin(), extra.end());
    job.ranks.push_back(std::make_unique<ChildProcess>(argv, folder.path() / (name + ".rank" + std::to_string(r))));
  }
  return job;
}

// A single process (no group).
std::unique_ptr<ChildProcess> StartSingle(const TempFolder& folder, const std::string& name,
                                          const std::vector<std::string>& extra) {
  std::vector<std::string> argv{ASV_DIST_WORKER, "train", "rank=0", "world=1", "port=0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<ChildProcess>(argv, folder.path() / name);
}

void ExpectSuccess(ChildProcess& p, const std::string& what) {
  EXPECT_EQ(p.ExitCode(), 0) << what << "\n" << p.Logs();
}

std::vector<torch::Tensor> LoadParameters(const std::string& path) {
  std::vector<torch::Tensor> params;
  torch::load(params, path);
  return params;
}

void ExpectIdentical(const std::string& a, const std::string& b) {
  const auto pa = LoadParameters(a);
  const auto pb = LoadParameters(b);
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << a << " vs " << b << ": " << i;
}

// Same training up to float summation order (all-reduce vs. autograd accumulation).
void ExpectClose(const std::string& a, const std::string& b) {
  const auto pa = LoadParameters(a);
  const auto pb = LoadParameters(b);
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    const double diff = (pa[i] - pb[i]).abs().max().item<double>();
    EXPECT_TRUE(torch::allclose(pa[i], pb[i], 1e-5, 1e-5))
        << a << " vs " << b << ": parameter " << i << ", max abs difference " << diff;
  }
}

TEST(StoreServerTest, PortZeroPicksDistinctFreePorts) {
  StoreServer a(0);
  StoreServer b(0);
  EXPECT_GT(a.port(), 0);
  EXPECT_GT(b.port(), 0);
  EXPECT_NE(a.port(), b.port());
  EXPECT_FALSE(a.Get("errors").has_value());
  try {
    StoreServer taken(a.port());
    FAIL() << "a second server on port " << a.port() << " started";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(a.port())), std::string::npos) << e.what();
  }
}

TEST(GroupTest, RejectsDevicesWithoutBackendAndInvalidWorlds) {
  ProcessGroupOptions o;
  o.world.world_size = 2;
  o.world.master_port = 1;  // never contacted: the checks come first
#ifndef ASV_WITH_GLOO
  EXPECT_THROW(ProcessGroup::Create(o), ConfigError);
#endif
#ifndef ASV_WITH_NCCL
  o.device = "cuda:0";
  EXPECT_THROW(ProcessGroup::Create(o), ConfigError);
#endif
  o.device = "tpu";
  EXPECT_THROW(ProcessGroup::Create(o), ConfigError);
  // computing.dist_backend = 'nccl' on the CPU.
  o.device = "cpu";
  o.backend = DistBackend::kNccl;
  try {
    ProcessGroup::Create(o);
    ADD_FAILURE() << "NCCL on the CPU accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "computing.dist_backend = 'nccl' needs GPUs, but this process trains on the CPU (use 'gloo' or 'auto')");
  }
  o.backend = DistBackend::kAuto;
  o.world.rank = 2;
  EXPECT_THROW(ProcessGroup::Create(o), ConfigError);
}

TEST(GroupTest, RendezvousTimeoutNamesStoreAndCount) {
  ASV_REQUIRE_GLOO();
  StoreServer server(0);
  ProcessGroupOptions o;
  o.world.world_size = 2;
  o.world.master_port = server.port();
  o.world.store_hosted_externally = true;
  o.connect_timeout = seconds(1);
  try {
    ProcessGroup::Create(o);
    FAIL() << "rendezvous with a missing rank succeeded";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("127.0.0.1:" + std::to_string(server.port())), std::string::npos) << what;
    EXPECT_NE(what.find("1 of 2 ranks joined"), std::string::npos) << what;
  }
}

// Collectives, flags, barriers, model/buffer sync and gradient averaging (worker mode
// "collectives" checks the values itself): 3 ranks on a store of the test, 2 ranks with rank 0
// hosting it, tiny buckets so that gradients span several of them.
TEST(GroupTest, CollectivesOnTwoAndThreeRanks) {
  ASV_REQUIRE_GLOO();
  TempFolder folder("collectives");
  StoreServer server(0);
  auto three = StartJob("collectives", 3, server.port(), true, folder, "three", {"bucket_bytes=64", "log=debug"});
  auto two = StartJob("collectives", 2, FreePort(), false, folder, "two");
  for (int r = 0; r < 3; ++r) ExpectSuccess(three[r], "3 ranks, rank " + std::to_string(r));
  // The bucket of `b` and `a` (complete on every rank) went out while backward still ran.
  EXPECT_NE(three[0].err().find("1 of 2 buckets were all-reduced during the first backward pass"), std::string::npos)
      << three[0].Logs();
  for (int r = 0; r < 2; ++r) ExpectSuccess(two[r], "2 ranks, rank " + std::to_string(r));
  EXPECT_EQ(server.Get("errors").value_or("0"), "0");
}

// Two jobs at once, each on its own StoreServer(0): no port collision, both finish.
TEST(GroupTest, ConcurrentJobsWithOwnStores) {
  ASV_REQUIRE_GLOO();
  TempFolder folder("concurrent");
  StoreServer s1(0);
  StoreServer s2(0);
  ASSERT_NE(s1.port(), s2.port());
  auto a = StartJob("collectives", 2, s1.port(), true, folder, "a");
  auto b = StartJob("collectives", 2, s2.port(), true, folder, "b");
  for (int r = 0; r < 2; ++r) {
    ExpectSuccess(a[r], "job a");
    ExpectSuccess(b[r], "job b");
  }
}

// Groups one after the other in the same processes (asvrun runs config after config): on the
// launcher's store, and with rank 0 hosting a new store on the same port each time.
TEST(GroupTest, SequentialGroupsOnOneStoreAddress) {
  ASV_REQUIRE_GLOO();
  TempFolder folder("sequential");
  StoreServer server(0);
  auto external = StartJob("sequential", 2, server.port(), true, folder, "external");
  auto hosted = StartJob("sequential", 2, FreePort(), false, folder, "hosted");
  for (int r = 0; r < 2; ++r) {
    ExpectSuccess(external[r], "launcher's store");
    ExpectSuccess(hosted[r], "rank 0's store");
  }
}

// Data parallelism is gradient accumulation: 2 ranks with minibatch B train like 1 process with
// minibatch B/2 and optimizer_step_interval 2 (the sampler builds the same global batch list).
TEST(GroupTest, TwoRanksTrainLikeOneProcessAccumulatingTwoMicrobatches) {
  ASV_REQUIRE_GLOO();
  TempFolder folder("equivalence");
  auto two = StartJob("train", 2, FreePort(), false, folder, "two",
                      {"minibatch=16", "interval=1", "epochs=2", "out=" + folder / "two"});
  auto one = StartSingle(folder, "one", {"minibatch=8", "interval=2", "epochs=2", "out=" + folder / "one"});
  ExpectSuccess(two[0], "rank 0");
  ExpectSuccess(two[1], "rank 1");
  ExpectSuccess(*one, "single process");
  if (HasFailure()) return;
  ExpectIdentical(folder / "two.start.0.pt", folder / "one.start.0.pt");
  ExpectIdentical(folder / "two.0.pt", folder / "two.1.pt");
  ExpectClose(folder / "two.0.pt", folder / "one.0.pt");
}

// The "epoch ..." lines of a train worker's stdout: batches, clips, frames, loss, accuracy.
struct ReportedEpoch {
  std::int64_t batches = 0, clips = 0, frames = 0;
  double loss = 0, accuracy = 0;
};
std::vector<ReportedEpoch> ReportedEpochs(const std::string& out) {
  std::vector<ReportedEpoch> epochs;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    ReportedEpoch e;
    int epoch = 0;
    if (std::sscanf(line.c_str(), "epoch %d batches %" SCNd64 " clips %" SCNd64 " frames %" SCNd64 " loss %lf accuracy %lf", &epoch,
                    &e.batches, &e.clips, &e.frames, &e.loss, &e.accuracy) == 6) {
      epochs.push_back(e);
    }
  }
  return epochs;
}

// The epoch figures are over all ranks' samples: each of 2 ranks trains on its own half of every
// global batch of 16, and both report the batches, clips, frames, mean loss and accuracy of one
// process that trains on all 16 clips as two microbatches of 8. Rank-local figures would differ
// between the ranks (different clips) and from the single process (half the counts).
TEST(GroupTest, EpochFiguresCombineTheRanksSamples) {
  ASV_REQUIRE_GLOO();
  TempFolder folder("metrics");
  auto two = StartJob("train", 2, FreePort(), false, folder, "two", {"minibatch=16", "interval=1", "epochs=2"});
  auto one = StartSingle(folder, "one", {"minibatch=8", "interval=2", "epochs=2"});
  ExpectSuccess(two[0], "rank 0");
  ExpectSuccess(two[1], "rank 1");
  ExpectSuccess(*one, "single process");
  if (HasFailure()) return;
  const auto single = ReportedEpochs(one->out());
  ASSERT_EQ(single.size(), 2u) << one->Logs();
  for (int r = 0; r < 2; ++r) {
    const auto epochs = ReportedEpochs(two[r].out());
    ASSERT_EQ(epochs.size(), 2u) << two[r].Logs();
    for (std::size_t e = 0; e < 2; ++e) {
      SCOPED_TRACE("rank " + std::to_string(r) + ", epoch " + std::to_string(e + 1));
      EXPECT_GT(single[e].clips, 0);
      EXPECT_EQ(epochs[e].batches, single[e].batches);
      EXPECT_EQ(epochs[e].clips, single[e].clips);
      EXPECT_EQ(epochs[e].frames, single[e].frames);
      EXPECT_NEAR(epochs[e].loss, single[e].loss, 1e-4 * std::abs(single[e].loss));
      EXPECT_NEAR(epochs[e].accuracy, single[e].accuracy, 1e-9);
    }
  }
}

// network.sync_batch_norm through the process group (worker mode "syncbn" checks the values
// itself): the reducer's tensor all-reduce as the batch norms' CrossRankSum, interleaved with the
// gradient buckets its hooks launch during the backward pass (tiny buckets: many of them), gives
// one process's logits, gradients and running statistics, on 2 and 3 ranks.
TEST(GroupTest, SyncBatchNormOverTheReducerMatchesOneProcess) {
  ASV_REQUIRE_GLOO();
  TempFolder folder("syncbn");
  auto two = StartJob("syncbn", 2, FreePort(), false, folder, "two", {"bucket_bytes=4096", "log=debug"});
  auto three = StartJob("syncbn", 3, FreePort(), false, folder, "three", {"bucket_bytes=4096"});
  for (int r = 0; r < 2; ++r) ExpectSuccess(two[r], "2 ranks, rank " + std::to_string(r));
  for (int r = 0; r < 3; ++r) ExpectSuccess(three[r], "3 ranks, rank " + std::to_string(r));
  EXPECT_NE(two[0].out().find("OK"), std::string::npos) << two[0].Logs();
  // Buckets went out while backward still ran, between the batch norms' all-reduces.
  EXPECT_NE(two[0].err().find("buckets were all-reduced during the first backward pass"), std::string::npos)
      << two[0].Logs();
}

// Training with network.sync_batch_norm: the ranks end with the same parameters and the same
// BatchNorm running statistics, bit for bit, without averaging them (the statistics are global),
// and train otherwise than without it.
TEST(GroupTest, SyncBatchNormTrainsTwoRanksAlike) {
  ASV_REQUIRE_GLOO();
  TempFolder folder("syncbn_train");
  auto synced = StartJob("train", 2, FreePort(), false, folder, "synced",
                         {"minibatch=16", "epochs=2", "sync_bn=1", "out=" + folder / "synced"});
  auto plain =
      StartJob("train", 2, FreePort(), false, folder, "plain", {"minibatch=16", "epochs=2", "out=" + folder / "plain"});
  for (int r = 0; r < 2; ++r) {
    ExpectSuccess(synced[r], "SyncBatchNorm, rank " + std::to_string(r));
    ExpectSuccess(plain[r], "without SyncBatchNorm, rank " + std::to_string(r));
  }
  if (HasFailure()) return;
  EXPECT_NE(synced[0].err().find("SyncBatchNorm on (network.sync_batch_norm)"), std::string::npos) << synced[0].Logs();
  EXPECT_EQ(plain[0].err().find("SyncBatchNorm on"), std::string::npos) << plain[0].Logs();
  ExpectIdentical(folder / "synced.0.pt", folder / "synced.1.pt");
  ExpectIdentical(folder / "synced.buffers.0.pt", folder / "synced.buffers.1.pt");
  ExpectIdentical(folder / "synced.start.0.pt", folder / "plain.start.0.pt");
  const auto a = LoadParameters(folder / "synced.0.pt");
  const auto b = LoadParameters(folder / "plain.0.pt");
  ASSERT_EQ(a.size(), b.size());
  double largest_difference = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    largest_difference = std::max(largest_difference, (a[i] - b[i]).abs().max().item<double>());
  }
  EXPECT_GT(largest_difference, 1e-3);
}

// A rank that reports an error ends the others through their watchdogs (exit status 5, message
// naming the rank), or makes their store waits throw when they handle failures themselves.
TEST(GroupTest, ReportedErrorEndsTheOtherRanks) {
  ASV_REQUIRE_GLOO();
  TempFolder folder("report");
  StoreServer s1(0);
  StoreServer s2(0);
  auto watchdog = StartJob("fail", 2, s1.port(), true, folder, "fail");
  auto waiting = StartJob("fail-wait", 2, s2.port(), true, folder, "wait");
  EXPECT_EQ(watchdog[1].ExitCode(), 1) << watchdog[1].Logs();
  EXPECT_EQ(watchdog[0].ExitCode(seconds(20)), 5) << watchdog[0].Logs();
  EXPECT_LT(watchdog[0].seconds(), 15.0);
  EXPECT_NE(watchdog[0].err().find("rank 1 failed: synthetic failure in rank 1"), std::string::npos)
      << watchdog[0].Logs();
  EXPECT_EQ(s1.Get("error/1"), "synthetic failure in rank 1");

  EXPECT_EQ(waiting[0].ExitCode(seconds(20)), 0) << waiting[0].Logs();
  EXPECT_NE(waiting[0].out().find("WaitFor threw: rank 1 failed: synthetic failure in rank 1"), std::string::npos)
      << waiting[0].Logs();
  EXPECT_NE(waiting[0].out().find("handler: rank 1: synthetic failure in rank 1"), std::string::npos)
      << waiting[0].Logs();
}

// A rank killed with SIGKILL: the others exit with an error instead of hanging — while idle (the
// watchdog misses the victim's heartbeat), during training (Gloo sees the connection close, or
// the store vanishes when the victim hosted it).
TEST(GroupTest, KilledRankEndsTheOtherRanks) {
  ASV_REQUIRE_GLOO();
  TempFolder folder("kill");
  StoreServer server(0);
  auto idle = StartJob("hang", 2, server.port(), true, folder, "idle");
  const std::vector<std::string> long_training{"minibatch=16", "epochs=100000", "max_lr_updates=100000"};
  auto victim1 = StartJob("train", 2, FreePort(), false, folder, "victim1", long_training);
  auto victim0 = StartJob("train", 2, FreePort(), false, folder, "victim0", long_training);

  ASSERT_TRUE(idle[1].WaitForOutput("ready", seconds(60))) << idle[1].Logs();
  idle[1].Kill(SIGKILL);
  EXPECT_EQ(idle[0].ExitCode(seconds(30)), 5) << idle[0].Logs();
  EXPECT_NE(idle[0].err().find("rank 1 failed: no sign of life"), std::string::npos) << idle[0].Logs();

  ASSERT_TRUE(victim1[1].WaitForOutput("training", seconds(60))) << victim1[1].Logs();
  ASSERT_TRUE(victim0[0].WaitForOutput("training", seconds(60))) << victim0[0].Logs();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  victim1[1].Kill(SIGKILL);
  victim0[0].Kill(SIGKILL);
  const int survivor0 = victim1[0].ExitCode(seconds(60));
  EXPECT_NE(survivor0, -1) << "rank 0 still runs a minute after rank 1 was killed\n" << victim1[0].Logs();
  EXPECT_NE(survivor0, 0) << victim1[0].Logs();
  EXPECT_LT(survivor0, 128) << "ended by a signal\n" << victim1[0].Logs();
  const int survivor1 = victim0[1].ExitCode(seconds(60));
  EXPECT_NE(survivor1, -1) << "rank 1 still runs a minute after rank 0 was killed\n" << victim0[1].Logs();
  EXPECT_NE(survivor1, 0) << victim0[1].Logs();
  EXPECT_LT(survivor1, 128) << "ended by a signal\n" << victim0[1].Logs();
}

// Checkpoints carry no trace of the world size: one written by 2 ranks loads into 1 process, one
// written by 1 process resumes in 2 ranks (and trains on like 1 process accumulating 2 microbatches).
TEST(GroupTest, CheckpointsMoveBetweenWorldSizes) {
  ASV_REQUIRE_GLOO();
  TempFolder folder("checkpoint");
  const auto a = folder / "a";  // written by 2 ranks
  const auto b = folder / "b";  // written by 1 process
  const auto c = folder / "c";  // copy of b's for a second resumed run
  for (const auto& f : {a, b, c}) stdfs::create_directories(f);
  {
    auto two = StartJob("train", 2, FreePort(), false, folder, "a_write",
                        {"minibatch=16", "epochs=1", "folder=" + a, "out=" + a + "/written"});
    auto one = StartSingle(folder, "b_write", {"minibatch=16", "epochs=1", "folder=" + b, "out=" + b + "/written"});
    ExpectSuccess(two[0], "2 ranks writing");
    ExpectSuccess(two[1], "2 ranks writing, rank 1");
    ExpectSuccess(*one, "1 process writing");
    if (HasFailure()) return;
  }
  ASSERT_TRUE(stdfs::exists(a + "/networks/epoch.1.pt"));
  ASSERT_TRUE(stdfs::exists(b + "/networks/epoch.1.pt"));
  stdfs::create_directories(c + "/networks");
  stdfs::copy_file(b + "/networks/epoch.1.pt", c + "/networks/epoch.1.pt");

  auto load_a =
      StartSingle(folder, "a_load", {"minibatch=16", "epochs=1", "resume=1", "folder=" + a, "out=" + a + "/loaded"});
  auto resume_b = StartJob("train", 2, FreePort(), false, folder, "b_resume",
                           {"minibatch=16", "epochs=2", "resume=1", "folder=" + b, "out=" + b + "/resumed"});
  auto resume_c =
      StartSingle(folder, "c_resume",
                  {"minibatch=8", "interval=2", "epochs=2", "resume=1", "folder=" + c, "out=" + c + "/resumed"});
  ExpectSuccess(*load_a, "1 process loading the 2-rank checkpoint");
  ExpectSuccess(resume_b[0], "2 ranks resuming, rank 0");
  ExpectSuccess(resume_b[1], "2 ranks resuming, rank 1");
  ExpectSuccess(*resume_c, "1 process resuming");
  if (HasFailure()) return;
  ExpectIdentical(a + "/loaded.start.0.pt", a + "/written.0.pt");
  ExpectIdentical(b + "/resumed.start.0.pt", b + "/written.0.pt");
  ExpectIdentical(b + "/resumed.start.1.pt", b + "/written.0.pt");
  ExpectIdentical(b + "/resumed.0.pt", b + "/resumed.1.pt");
  ExpectClose(b + "/resumed.0.pt", c + "/resumed.0.pt");
  EXPECT_TRUE(stdfs::exists(b + "/networks/epoch.2.pt"));
}

}  // namespace
}  // namespace asv::distributed
