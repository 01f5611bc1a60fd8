// GPU holders in the experiment database, and BeginRunOnGpus warning about or waiting for them.
#include "asvcpp/db/gpu_queue.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/asvcpp/db/db_test_util.h"
#include "tests/asvcpp/db/store_test.h"

namespace asv::db {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using Ids = std::vector<std::int64_t>;

Ids IdsOf(const std::vector<RunRow>& rows) {
  Ids ids;
  for (const RunRow& row : rows) ids.push_back(row.id);
  return ids;
}

// A run of this (live) process on `gpus`.
RunInfo OnGpus(std::vector<int> gpus, const std::string& config = "net") {
  RunInfo info = testing::SampleRunInfo("voxceleb/xvector", config);
  info.gpu_ids = std::move(gpus);
  return info;
}

class DbGpuQueueTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    path_ = location();
  }

  std::size_t RunCount() {
    testing::RawDb raw(path_);
    return static_cast<std::size_t>(std::stoul(raw.Scalar("SELECT count(*) FROM runs")));
  }

  std::filesystem::path path_;
};
ASV_INSTANTIATE_STORES(DbGpuQueueTest);

TEST_P(DbGpuQueueTest, HoldersAreLiveRunningRunsOfThisHostSharingAGpu) {
  // A process that has exited: its run is crashed and holds nothing.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);

  Database db(path_);
  const std::string host = HostName();
  const std::int64_t alive = db.BeginRun(OnGpus({1}));
  RunInfo dead_info = OnGpus({1}, "dead");
  dead_info.pid = child;
  dead_info.process_start = 0;  // Unknown: only existence is checked.
  const std::int64_t dead = db.BeginRun(dead_info);
  const std::int64_t pair = db.BeginRun(OnGpus({2, 3}));
  db.BeginRun(OnGpus({}, "cpu"));
  const std::int64_t finished = db.BeginRun(OnGpus({1}, "done"));
  db.FinishRun(finished, RunStatus::kFinished);
  RunInfo remote = OnGpus({1}, "remote");
  remote.host = "some-other-host.example";
  remote.pid = 1;  // Alive here, but a pid of another host says nothing.
  const std::int64_t remote_run = db.BeginRun(remote);

  EXPECT_EQ(IdsOf(db.RunsHoldingGpus(host, {1})), (Ids{alive}));
  EXPECT_EQ(db.GetRun(dead)->status, RunStatus::kCrashed);  // Marked on the way.
  EXPECT_EQ(IdsOf(db.RunsHoldingGpus(host, {3})), (Ids{pair}));
  EXPECT_EQ(IdsOf(db.RunsHoldingGpus(host, {0, 1, 2})), (Ids{alive, pair}));
  EXPECT_TRUE(db.RunsHoldingGpus(host, {0, 4}).empty());
  EXPECT_TRUE(db.RunsHoldingGpus(host, {}).empty());  // A CPU run conflicts with nothing.

  // Asked about the other host, its run counts while its heartbeat is fresh.
  EXPECT_EQ(IdsOf(db.RunsHoldingGpus(remote.host, {1})), (Ids{remote_run}));
  {
    testing::RawDb raw(path_);
    raw.Exec("UPDATE runs SET heartbeat_time = '2000-01-01T00:00:00.000Z' WHERE id = " + std::to_string(remote_run));
  }
  EXPECT_TRUE(db.RunsHoldingGpus(remote.host, {1}).empty());
}

TEST_P(DbGpuQueueTest, TryBeginRunInsertsOnlyWhenTheGpusAreFree) {
  Database db(path_);
  const std::int64_t holder = db.BeginRun(OnGpus({1}));
  std::vector<RunRow> holders;
  EXPECT_EQ(db.TryBeginRun(OnGpus({0, 1}), &holders), std::nullopt);
  EXPECT_EQ(IdsOf(holders), (Ids{holder}));
  EXPECT_EQ(holders[0].info.gpu_ids, std::vector<int>{1});
  EXPECT_EQ(RunCount(), 1u);

  const auto other = db.TryBeginRun(OnGpus({0, 2}), &holders);
  ASSERT_TRUE(other.has_value());
  EXPECT_TRUE(holders.empty());
  EXPECT_EQ(db.GetRun(*other)->info.gpu_ids, (std::vector<int>{0, 2}));
  EXPECT_EQ(db.GetRun(*other)->status, RunStatus::kRunning);
  EXPECT_TRUE(db.TryBeginRun(OnGpus({}), nullptr).has_value());  // CPU run.

  db.FinishRun(holder, RunStatus::kFailed, "out of memory");
  EXPECT_TRUE(db.TryBeginRun(OnGpus({1}), &holders).has_value());
  EXPECT_EQ(RunCount(), 4u);
}

TEST_P(DbGpuQueueTest, WithoutWaitABusyGpuWarnsOnceAndBeginsAnyway) {
  Database db(path_);
  const std::int64_t holder = db.BeginRun(OnGpus({1}));
  int calls = 0;
  GpuQueueOptions options;
  options.on_busy = [&](const std::vector<RunRow>& holders) {
    ++calls;
    EXPECT_EQ(IdsOf(holders), (Ids{holder}));
  };
  const auto run = BeginRunOnGpus(db, OnGpus({1}), options);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(db.GetRun(*run)->status, RunStatus::kRunning);
  EXPECT_EQ(db.GetRun(holder)->status, RunStatus::kRunning);

  calls = 0;
  EXPECT_TRUE(BeginRunOnGpus(db, OnGpus({}), options).has_value());   // CPU: no conflict.
  EXPECT_TRUE(BeginRunOnGpus(db, OnGpus({4}), options).has_value());  // Free GPU.
  EXPECT_EQ(calls, 0);
}

TEST_P(DbGpuQueueTest, FormatsHoldersAndWaiting) {
  RunRow a;
  a.id = 12;
  a.info.recipe = "voxceleb/xvector";
  a.info.config = "net";
  a.info.pid = 4242;
  a.info.gpu_ids = {1, 5};
  a.start_time = "2024-05-01T10:00:00.000Z";
  RunRow b = a;
  b.id = 13;
  b.info.config = "big";
  b.info.pid = 4343;
  b.info.gpu_ids = {3, 2, 0};
  EXPECT_EQ(FormatGpuHolders({1}, {a}),
            "GPU 1 is in use by run 12 (voxceleb/xvector net, pid 4242, since "
            "2024-05-01T10:00:00.000Z)");
  EXPECT_EQ(FormatGpuHolders({0, 1, 2, 3}, {a, b}),
            "GPU 1 is in use by run 12 (voxceleb/xvector net, pid 4242, since "
            "2024-05-01T10:00:00.000Z)\n"
            "GPUs 0, 2 and 3 are in use by run 13 (voxceleb/xvector big, pid 4343, since "
            "2024-05-01T10:00:00.000Z)");
  EXPECT_EQ(FormatGpuHolders({1}, {}), "");
  EXPECT_EQ(BusyGpus({0, 1, 2, 7}, {a, b}), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(FormatGpuWaiting({1}, {a}), "waiting for GPU 1 (--wait-for-gpu)");
  EXPECT_EQ(FormatGpuWaiting({2, 3}, {b}), "waiting for GPUs 2 and 3 (--wait-for-gpu)");
}

// Signals one waiter thread from another (e.g. "on_busy was called").
class Flag {
 public:
  void Set() {
    std::lock_guard<std::mutex> lock(mutex_);
    set_ = true;
    cv_.notify_all();
  }
  bool WaitFor(milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return set_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool set_ = false;
};

TEST_P(DbGpuQueueTest, WaitStartsWhenTheHolderFinishes) {
  Database db(path_);
  const std::int64_t holder = db.BeginRun(OnGpus({1}));
  Flag busy;
  // Another connection, as another asvrun process would have, finishes the holder ~300 ms after
  // the waiter found the GPU busy.
  std::thread finisher([&] {
    if (!busy.WaitFor(milliseconds(5000))) return;
    std::this_thread::sleep_for(milliseconds(300));
    Database other(path_);
    other.FinishRun(holder, RunStatus::kFinished);
  });
  int calls = 0;
  GpuQueueOptions options;
  options.wait = true;
  options.poll = milliseconds(50);
  options.max_wait = milliseconds(5000);
  options.on_busy = [&](const std::vector<RunRow>& holders) {
    ++calls;
    EXPECT_EQ(IdsOf(holders), (Ids{holder}));
    busy.Set();
  };
  const auto start = Clock::now();
  const auto run = BeginRunOnGpus(db, OnGpus({1}), options);
  const auto waited = Clock::now() - start;
  finisher.join();
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(calls, 1);
  EXPECT_GE(waited, milliseconds(300));
  EXPECT_EQ(db.GetRun(holder)->status, RunStatus::kFinished);
  EXPECT_EQ(IdsOf(db.RunsHoldingGpus(HostName(), {1})), (Ids{*run}));
}

TEST_P(DbGpuQueueTest, WaitGivesUpAfterMaxWaitWithoutBeginning) {
  Database db(path_);
  db.BeginRun(OnGpus({1}));
  GpuQueueOptions options;
  options.wait = true;
  options.poll = milliseconds(20);
  options.max_wait = milliseconds(150);
  const auto start = Clock::now();
  EXPECT_EQ(BeginRunOnGpus(db, OnGpus({0, 1}), options), std::nullopt);
  EXPECT_GE(Clock::now() - start, milliseconds(150));
  EXPECT_EQ(RunCount(), 1u);
}

TEST_P(DbGpuQueueTest, HolderProcessThatDiesFreesTheGpu) {
  // The child begins a run on GPU 1 and exits without finishing it once the parent has found the
  // GPU busy. No connection is open across fork().
  int ids[2];
  int go[2];
  ASSERT_EQ(::pipe(ids), 0);
  ASSERT_EQ(::pipe(go), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ids[0]);
    ::close(go[1]);
    int code = 0;
    try {
      Database db(path_);
      RunInfo info;
      info.recipe = "voxceleb/xvector";
      info.config = "holder";
      info.gpu_ids = {1};
      const std::int64_t id = db.BeginRun(info);
      code = ::write(ids[1], &id, sizeof(id)) == sizeof(id) ? 0 : 2;
      char byte;
      if (::read(go[0], &byte, 1) != 1) code = 3;
      std::this_thread::sleep_for(milliseconds(200));
    } catch (...) {
      code = 1;
    }
    ::_exit(code);  // Dies holding the GPU.
  }
  ::close(ids[1]);
  ::close(go[0]);
  std::int64_t holder = 0;
  ASSERT_EQ(::read(ids[0], &holder, sizeof(holder)), static_cast<ssize_t>(sizeof(holder)));
  ::close(ids[0]);

  Database db(path_);
  GpuQueueOptions options;
  options.wait = true;
  options.poll = milliseconds(50);
  options.max_wait = milliseconds(5000);
  Ids seen;
  options.on_busy = [&](const std::vector<RunRow>& holders) {
    seen = IdsOf(holders);
    EXPECT_EQ(::write(go[1], "x", 1), 1);
  };
  const auto run = BeginRunOnGpus(db, OnGpus({1}), options);
  ::close(go[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(seen, (Ids{holder}));
  const auto crashed = db.GetRun(holder);
  EXPECT_EQ(crashed->status, RunStatus::kCrashed);
  EXPECT_EQ(crashed->info.pid, static_cast<std::int64_t>(child));
}

TEST_P(DbGpuQueueTest, OfTwoWaitersForOneGpuExactlyOneStartsAtATime) {
  std::int64_t holder = 0;
  {
    Database db(path_);
    holder = db.BeginRun(OnGpus({1}));
  }
  std::mutex mutex;
  std::condition_variable changed;
  Ids started;      // Run ids in the order the waiters got them.
  int waiting = 0;  // Waiters that have found the GPU busy.
  std::atomic<int> failures{0};
  auto waiter = [&](int index) {
    try {
      DatabaseOptions fast;
      fast.busy_timeout = milliseconds(index == 0 ? 1 : 5000);  // One relies on Retry's backoff.
      Database db(path_, fast);
      GpuQueueOptions options;
      options.wait = true;
      options.poll = milliseconds(20);
      options.max_wait = milliseconds(5000);
      options.on_busy = [&](const std::vector<RunRow>&) {
        std::lock_guard<std::mutex> lock(mutex);
        ++waiting;
        changed.notify_all();
      };
      const auto run = BeginRunOnGpus(db, OnGpus({1}, "waiter" + std::to_string(index)), options);
      if (!run) throw std::runtime_error("gave up waiting");
      std::lock_guard<std::mutex> lock(mutex);
      started.push_back(*run);
      changed.notify_all();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "waiter " << index << ": " << e.what();
      ++failures;
      std::lock_guard<std::mutex> lock(mutex);
      started.push_back(0);
      changed.notify_all();
    }
  };
  std::thread first(waiter, 0);
  std::thread second(waiter, 1);
  const auto count = [&](auto predicate) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, milliseconds(5000), predicate);
  };

  Database db(path_);
  EXPECT_TRUE(count([&] { return waiting == 2; }));
  db.FinishRun(holder, RunStatus::kFinished);
  EXPECT_TRUE(count([&] { return started.size() >= 1; }));
  std::this_thread::sleep_for(milliseconds(200));  // Ten polls of the other waiter.
  std::int64_t winner = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_EQ(started.size(), 1u);
    winner = started.empty() ? 0 : started.front();
  }
  EXPECT_EQ(IdsOf(db.RunsHoldingGpus(HostName(), {1})), (Ids{winner}));
  if (winner > 0) db.FinishRun(winner, RunStatus::kFinished);
  EXPECT_TRUE(count([&] { return started.size() == 2; }));
  first.join();
  second.join();
  ASSERT_EQ(failures.load(), 0);
  ASSERT_EQ(started.size(), 2u);
  EXPECT_NE(started[0], started[1]);
  EXPECT_EQ(IdsOf(db.RunsHoldingGpus(HostName(), {1})), (Ids{started[1]}));
  EXPECT_EQ(RunCount(), 3u);
}

}  // namespace
}  // namespace asv::db
