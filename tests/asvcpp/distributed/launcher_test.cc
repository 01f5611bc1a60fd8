#include "asvcpp/distributed/launcher.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <thread>

namespace asv::distributed {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// Workers are /bin/sh scripts. Long-running ones `exec sleep` so that the worker pid is the
// sleeping process itself and a killed worker leaves no orphaned `sleep` behind.
WorkerSpec Sh(int rank, const std::string& script) {
  WorkerSpec spec;
  spec.rank = rank;
  spec.argv = {"/bin/sh", "-c", script};
  return spec;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool ProcessGone(pid_t pid) { return kill(pid, 0) == -1 && errno == ESRCH; }

// True when this test process has no child left, reaped or not.
bool NoChildrenLeft() { return waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD; }

// True when `pid` no longer runs: gone, or a zombie waiting for a parent that is not us.
bool ProcessDead(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;
  const std::size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

TEST(LauncherTest, AllWorkersSucceed) {
  Launcher launcher(std::chrono::seconds(2));
  // Given out of rank order; results come back in rank order.
  launcher.Start({Sh(2, "exit 0"), Sh(0, "exit 0"), Sh(1, "exit 0")});
  const std::vector<pid_t> pids = launcher.pids();
  ASSERT_EQ(pids.size(), 3u);
  const LaunchResult result = launcher.Wait();
  EXPECT_TRUE(result.ok());
  EXPECT_EQ(result.ExitCode(), 0);
  ASSERT_EQ(result.exits.size(), 3u);
  for (int rank = 0; rank < 3; ++rank) {
    const WorkerExit& exit = result.exits[static_cast<std::size_t>(rank)];
    EXPECT_EQ(exit.rank, rank);
    EXPECT_EQ(exit.pid, pids[static_cast<std::size_t>(rank)]);
    EXPECT_EQ(exit.exit_code, 0);
    EXPECT_EQ(exit.signal, 0);
    EXPECT_FALSE(exit.stopped_by_launcher);
  }
  EXPECT_TRUE(launcher.pids().empty());
  EXPECT_TRUE(NoChildrenLeft());
}

TEST(LauncherTest, ExitCodesAreRecordedWhenTheJobSucceedsOrNot) {
  Launcher launcher(std::chrono::seconds(2));
  launcher.Start({Sh(0, "exit 0"), Sh(1, "sleep 0.2; kill -9 $$")});
  const LaunchResult result = launcher.Wait();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.exits[0].exit_code, 0);
  EXPECT_EQ(result.exits[1].signal, SIGKILL);
  EXPECT_EQ(result.first_failure->rank, 1);
  EXPECT_EQ(result.ExitCode(), 128 + SIGKILL);
}

TEST(LauncherTest, FailureStopsTheOtherWorkers) {
  Launcher launcher(std::chrono::seconds(2));
  const auto start = Clock::now();
  launcher.Start({Sh(0, "exec sleep 60"), Sh(1, "sleep 0.2; exit 3"), Sh(2, "exec sleep 60")});
  const std::vector<pid_t> pids = launcher.pids();
  const LaunchResult result = launcher.Wait();
  EXPECT_LT(SecondsSince(start), 2.0);  // SIGTERM ends the sleepers; no need to wait for the grace period

  ASSERT_TRUE(result.first_failure.has_value());
  EXPECT_EQ(result.first_failure->rank, 1);
  EXPECT_EQ(result.first_failure->exit_code, 3);
  EXPECT_FALSE(result.first_failure->stopped_by_launcher);
  EXPECT_EQ(result.ExitCode(), 3);
  EXPECT_THAT(result.first_failure->Describe(), HasSubstr("rank 1 (pid "));
  EXPECT_THAT(result.first_failure->Describe(), HasSubstr("exited with status 3"));
  for (int rank : {0, 2}) {
    const WorkerExit& exit = result.exits[static_cast<std::size_t>(rank)];
    EXPECT_TRUE(exit.stopped_by_launcher) << exit.Describe();
    EXPECT_EQ(exit.signal, SIGTERM) << exit.Describe();
  }
  for (pid_t pid : pids) EXPECT_TRUE(ProcessGone(pid)) << pid;
  EXPECT_TRUE(NoChildrenLeft());
}

// A hung rank: its watchdog peer (rank 0) reports "error/1" on its behalf and exits with status
// 5; the launcher then stops rank 1, which hangs. The job's failure names rank 1, not rank 0.
TEST(LauncherTest, AHungRankFoundByItsPeerIsNamedAsTheCause) {
  Launcher launcher(std::chrono::seconds(2));
  launcher.Start({Sh(0, "sleep 0.2; exit 5"), Sh(1, "exec sleep 60")});
  const LaunchResult result = launcher.Wait();
  ASSERT_TRUE(result.first_failure.has_value());
  ASSERT_EQ(result.first_failure->rank, 0);  // the launcher only sees rank 0 end first
  const std::string hung = "no sign of life for 31 s (the process died or hangs; reported by rank 0)";
  const auto reported = [&](int rank) -> std::optional<std::string> {
    if (rank == 1) return hung;
    return std::nullopt;
  };
  const JobFailure failure = DescribeJobFailure(result, reported);
  EXPECT_EQ(failure.rank, 1);
  EXPECT_EQ(failure.message.rfind("rank 1 failed: " + hung, 0), 0u) << failure.message;
  EXPECT_THAT(failure.message, HasSubstr("rank 1 (pid "));
  EXPECT_THAT(failure.message, HasSubstr("after the launcher stopped it"));
  EXPECT_THAT(failure.message, HasSubstr("rank 0 (pid "));
  EXPECT_THAT(failure.message, HasSubstr("exited with status 5"));
  EXPECT_EQ(failure.exit_code, 5);

  // A rank that reports its own error is the cause, as is a rank when nobody reported anything.
  const auto own = DescribeJobFailure(result, [](int rank) -> std::optional<std::string> {
    if (rank == 0) return std::string("stage 5 (train) failed: loss is NaN");
    return std::string("rank 0 failed");
  });
  EXPECT_EQ(own.rank, 0);
  EXPECT_THAT(own.message, HasSubstr("exited with status 5: stage 5 (train) failed: loss is NaN"));
  const auto silent = DescribeJobFailure(result, [](int) { return std::optional<std::string>(); });
  EXPECT_EQ(silent.rank, 0);
  EXPECT_EQ(silent.message, result.first_failure->Describe());
}

// A rank killed by a signal nobody in the job sent (the OOM killer) is the cause, even when a
// peer failing in a collective ended first.
TEST(LauncherTest, ARankKilledBySignalIsTheCauseOfTheOthersFailing) {
  LaunchResult result;
  WorkerExit collective;
  collective.rank = 0;
  collective.exit_code = 5;
  WorkerExit killed;
  killed.rank = 1;
  killed.signal = SIGKILL;
  result.exits = {collective, killed};
  result.first_failure = collective;
  const auto failure = DescribeJobFailure(result, [](int) { return std::optional<std::string>(); });
  EXPECT_EQ(failure.rank, 1);
  EXPECT_EQ(failure.exit_code, 128 + SIGKILL);
  EXPECT_THAT(failure.message, HasSubstr("rank 1 (pid 0) was killed by signal 9"));
}

TEST(LauncherTest, WorkerIgnoringSigtermIsKilledAfterGrace) {
  Launcher launcher(std::chrono::seconds(1));
  const auto start = Clock::now();
  launcher.Start({Sh(0, "trap '' TERM; exec sleep 60"), Sh(1, "sleep 0.3; exit 1")});
  const pid_t ignores_term = launcher.pids()[0];
  const LaunchResult result = launcher.Wait();
  const double seconds = SecondsSince(start);
  EXPECT_GE(seconds, 1.3);
  EXPECT_LT(seconds, 4.0);
  EXPECT_EQ(result.first_failure->rank, 1);
  EXPECT_EQ(result.exits[0].signal, SIGKILL);
  EXPECT_TRUE(result.exits[0].stopped_by_launcher);
  EXPECT_TRUE(ProcessGone(ignores_term));
  EXPECT_TRUE(NoChildrenLeft());
}

TEST(LauncherTest, TerminateFromAnotherThreadStopsAll) {
  // A shell that started this test in the background may have left SIGINT ignored, and workers
  // would inherit that; the launcher's Terminate() is what is under test here.
  std::signal(SIGINT, SIG_DFL);
  Launcher launcher(std::chrono::seconds(2));
  const auto start = Clock::now();
  launcher.Start({Sh(0, "exec sleep 60"), Sh(1, "exec sleep 60"), Sh(2, "exec sleep 60")});
  const std::vector<pid_t> pids = launcher.pids();
  std::thread watcher([&launcher] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    launcher.Terminate(SIGINT);
  });
  const LaunchResult result = launcher.Wait();
  watcher.join();
  EXPECT_LT(SecondsSince(start), 2.0);
  ASSERT_EQ(result.exits.size(), 3u);
  for (const WorkerExit& exit : result.exits) {
    EXPECT_TRUE(exit.stopped_by_launcher) << exit.Describe();
    EXPECT_EQ(exit.signal, SIGINT) << exit.Describe();
  }
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.ExitCode(), 128 + SIGINT);
  for (pid_t pid : pids) EXPECT_TRUE(ProcessGone(pid)) << pid;
  EXPECT_TRUE(NoChildrenLeft());
}

TEST(LauncherTest, BlockedSignalsOfTheLaunchingThreadDoNotReachWorkers) {
  // A launcher that handles signals with sigwait() has them blocked; workers must not inherit that.
  sigset_t block;
  sigset_t old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, &old), 0);
  Launcher launcher(std::chrono::seconds(3));
  launcher.Start({Sh(0, "exec sleep 60")});
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  const auto start = Clock::now();
  launcher.Terminate(SIGTERM);
  const LaunchResult result = launcher.Wait();
  EXPECT_LT(SecondsSince(start), 2.0);
  EXPECT_EQ(result.exits[0].signal, SIGTERM);
}

TEST(LauncherTest, EnvironmentOverridesAndUnsetsReachTheWorker) {
  const std::string out = ::testing::TempDir() + "asv_launcher_env_" + std::to_string(getpid()) + ".txt";
  ASSERT_EQ(setenv("ASV_LAUNCH_TEST_KEEP", "kept", 1), 0);
  ASSERT_EQ(setenv("ASV_LAUNCH_TEST_OVERRIDE", "old", 1), 0);
  ASSERT_EQ(setenv("ASV_LAUNCH_TEST_DROP", "dropped", 1), 0);
  WorkerSpec spec = Sh(0, "env > \"$ASV_LAUNCH_TEST_OUT\"");
  spec.env = {
      {"ASV_LAUNCH_TEST_OVERRIDE", "new value"}, {"ASV_LAUNCH_TEST_ADDED", "a=b"}, {"ASV_LAUNCH_TEST_OUT", out}};
  spec.unset_env = {"ASV_LAUNCH_TEST_DROP"};
  Launcher launcher;
  launcher.Start({spec});
  const LaunchResult result = launcher.Wait();
  unsetenv("ASV_LAUNCH_TEST_KEEP");
  unsetenv("ASV_LAUNCH_TEST_OVERRIDE");
  unsetenv("ASV_LAUNCH_TEST_DROP");
  ASSERT_TRUE(result.ok()) << result.first_failure->Describe();

  std::ifstream file(out);
  std::set<std::string> lines;
  for (std::string line; std::getline(file, line);) {
    if (line.rfind("ASV_LAUNCH_TEST_", 0) == 0) lines.insert(line);
  }
  std::remove(out.c_str());
  EXPECT_EQ(lines, (std::set<std::string>{"ASV_LAUNCH_TEST_KEEP=kept", "ASV_LAUNCH_TEST_OVERRIDE=new value",
                                          "ASV_LAUNCH_TEST_ADDED=a=b", "ASV_LAUNCH_TEST_OUT=" + out}));
}

TEST(LauncherTest, MissingExecutableThrowsAndStopsStartedWorkers) {
  Launcher launcher(std::chrono::seconds(2));
  WorkerSpec missing;
  missing.rank = 1;
  missing.argv = {"/nonexistent/asv-worker", "--rank", "1"};
  const auto start = Clock::now();
  try {
    launcher.Start({Sh(0, "exec sleep 60"), missing});
    FAIL() << "Start did not throw";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
    EXPECT_THAT(e.what(), HasSubstr("cannot start rank 1: /nonexistent/asv-worker"));
  }
  EXPECT_LT(SecondsSince(start), 2.0);
  EXPECT_TRUE(launcher.pids().empty());
  EXPECT_TRUE(NoChildrenLeft());  // rank 0 was stopped and reaped, the failed child too
}

TEST(LauncherTest, EmptyArgvThrowsBeforeAnythingStarts) {
  Launcher launcher;
  WorkerSpec empty;
  empty.rank = 1;
  EXPECT_THROW(launcher.Start({Sh(0, "exec sleep 60"), empty}), std::system_error);
  EXPECT_TRUE(NoChildrenLeft());
}

TEST(LauncherTest, DestructorKillsAndReapsWorkers) {
  pid_t pid = 0;
  {
    Launcher launcher;
    launcher.Start({Sh(0, "exec sleep 60")});
    pid = launcher.pids().at(0);
  }
  EXPECT_TRUE(ProcessGone(pid));
  EXPECT_TRUE(NoChildrenLeft());
}

TEST(LauncherTest, WorkersDieWithTheLauncher) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t launcher_pid = fork();
  ASSERT_NE(launcher_pid, -1);
  if (launcher_pid == 0) {
    // A launcher process that is killed outright, without any chance to stop its workers.
    close(fds[0]);
    try {
      Launcher launcher;
      launcher.Start({Sh(0, "exec sleep 60")});
      const pid_t worker = launcher.pids().at(0);
      if (write(fds[1], &worker, sizeof worker) != static_cast<ssize_t>(sizeof worker)) _exit(2);
      raise(SIGKILL);  // while `launcher` is alive: its destructor would stop the worker itself
    } catch (...) {
      _exit(1);
    }
    _exit(3);
  }
  close(fds[1]);
  pid_t worker = 0;
  const ssize_t n = read(fds[0], &worker, sizeof worker);
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(launcher_pid, &status, 0), launcher_pid);
  ASSERT_EQ(n, static_cast<ssize_t>(sizeof worker));
  ASSERT_TRUE(WIFSIGNALED(status));
  const auto start = Clock::now();
  while (!ProcessDead(worker) && SecondsSince(start) < 5.0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(ProcessDead(worker)) << "worker " << worker << " outlived its launcher";
}

TEST(LauncherTest, WaitWithoutWorkers) {
  Launcher launcher;
  launcher.Start({});
  const LaunchResult result = launcher.Wait();
  EXPECT_TRUE(result.ok());
  EXPECT_TRUE(result.exits.empty());
}

TEST(LauncherTest, DescribeAndExitCode) {
  WorkerExit exit;
  exit.rank = 1;
  exit.pid = 1234;
  exit.exit_code = 3;
  EXPECT_EQ(exit.Describe(), "rank 1 (pid 1234) exited with status 3");
  exit.exit_code = 0;
  exit.signal = SIGKILL;
  EXPECT_EQ(exit.Describe(), "rank 1 (pid 1234) was killed by signal 9 (Killed)");
  exit.signal = SIGTERM;
  exit.stopped_by_launcher = true;
  EXPECT_EQ(exit.Describe(), "rank 1 (pid 1234) was killed by signal 15 (Terminated) after the launcher stopped it");

  LaunchResult result;
  EXPECT_EQ(result.ExitCode(), 0);
  result.first_failure = exit;
  EXPECT_EQ(result.ExitCode(), 128 + SIGTERM);
  result.first_failure->signal = 0;
  result.first_failure->exit_code = 3;
  EXPECT_EQ(result.ExitCode(), 3);
}

}  // namespace
}  // namespace asv::distributed
