// Many processes writing to one experiment database at once, racing to create it as well.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <set>

#include "asvcpp/db/database.h"
#include "tests/asvcpp/db/db_test_util.h"
#include "tests/asvcpp/db/store_test.h"

namespace asv::db {
namespace {

constexpr int kSqliteChildren = 8;
constexpr int kRunsPerChild = 25;
constexpr int kResultsPerRun = 10;
constexpr int kEpochsPerRun = 5;

// A value unique to (child, run, item), so that lost or duplicated rows are detected.
double Tag(int child, int run, int item) { return child * 10000.0 + run * 100.0 + item; }

// Body of one child process: its own connection, opened after fork(). Returns the exit code.
// Odd children almost disable SQLite's own busy wait, so that Database's retry loop with backoff
// does the waiting for them.
int ChildMain(const std::filesystem::path& path, int child) {
  try {
    DatabaseOptions options;
    if (child % 2 == 1) options.busy_timeout = std::chrono::milliseconds(1);
    Database db(path, options);
    for (int r = 0; r < kRunsPerChild; ++r) {
      RunInfo info;
      info.recipe = "concurrency";
      info.config = "child" + std::to_string(child);
      info.settings_json = "{\"run\":" + std::to_string(r) + "}";
      const std::int64_t run = db.BeginRun(info);
      for (int e = 0; e < kEpochsPerRun; ++e) {
        EpochRecord epoch;
        epoch.epoch = e + 1;
        epoch.loss = Tag(child, r, e);
        db.RecordEpoch(run, epoch);
      }
      for (int i = 0; i < kResultsPerRun; ++i) {
        ResultRecord result;
        result.trial_list = "list" + std::to_string(i % 2);
        result.eer = Tag(child, r, i);
        db.RecordResult(run, result);
      }
      db.FinishRun(run, RunStatus::kFinished);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child %d: %s\n", child, e.what());
    return 1;
  } catch (...) {
    return 2;
  }
}

class DbConcurrencyTest : public testing::StoreTest {};
ASV_INSTANTIATE_STORES(DbConcurrencyTest);

// SQLite: 8 processes race to create the file and write; PostgreSQL: 16 processes (jobs on many
// nodes) race to create the schema in an empty database and write.
TEST_P(DbConcurrencyTest, ForkedWritersLoseNothing) {
  // Nothing exists yet: neither the SQLite file nor its folder, nor the tables on the server.
  const std::string path = postgres() ? location() : (dir() / "out" / "experiments.db").string();
  const int writers = postgres() ? 16 : kSqliteChildren;

  // All children block on `gate` until the parent closes it, so they race to create the file.
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  std::vector<pid_t> pids;
  for (int c = 0; c < writers; ++c) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(gate[1]);
      char byte;
      while (::read(gate[0], &byte, 1) > 0) {
      }
      ::_exit(ChildMain(path, c));
    }
    pids.push_back(pid);
  }
  ::close(gate[0]);
  const auto start = std::chrono::steady_clock::now();
  ::close(gate[1]);
  for (int c = 0; c < writers; ++c) {
    int status = 0;
    ASSERT_EQ(::waitpid(pids[c], &status, 0), pids[c]);
    ASSERT_TRUE(WIFEXITED(status)) << "child " << c;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "child " << c;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int transactions = writers * kRunsPerChild * (2 + kEpochsPerRun + kResultsPerRun);
  std::printf("%d write transactions from %d processes in %.2f s (%.0f/s)\n", transactions,
              writers, seconds, transactions / seconds);

  Database db(path);
  EXPECT_EQ(db.IntegrityCheck(), "ok");
  RunFilter all;
  all.recipe = "concurrency";
  EXPECT_EQ(db.ListRuns(all).size(), static_cast<std::size_t>(writers * kRunsPerChild));
  for (int c = 0; c < writers; ++c) {
    RunFilter filter;
    filter.config = "child" + std::to_string(c);
    const auto runs = db.ListRuns(filter);
    ASSERT_EQ(runs.size(), static_cast<std::size_t>(kRunsPerChild)) << "child " << c;
    std::set<std::string> settings;
    std::set<double> losses;
    for (const auto& run : runs) {
      EXPECT_EQ(run.status, RunStatus::kFinished);
      EXPECT_EQ(run.info.pid, static_cast<std::int64_t>(pids[c]));
      settings.insert(run.info.settings_json);
      const auto epochs = db.Epochs(run.id);
      ASSERT_EQ(epochs.size(), static_cast<std::size_t>(kEpochsPerRun));
      for (const auto& epoch : epochs) losses.insert(epoch.record.loss);
    }
    EXPECT_EQ(settings.size(), static_cast<std::size_t>(kRunsPerChild));
    std::set<double> expected_losses;
    for (int r = 0; r < kRunsPerChild; ++r) {
      for (int e = 0; e < kEpochsPerRun; ++e) expected_losses.insert(Tag(c, r, e));
    }
    EXPECT_EQ(losses, expected_losses) << "child " << c;

    ResultFilter results;
    results.config = filter.config;
    const auto rows = db.Results(results);
    EXPECT_EQ(rows.size(), static_cast<std::size_t>(kRunsPerChild * kResultsPerRun));
    std::multiset<double> eers;
    for (const auto& row : rows) eers.insert(row.record.eer);
    std::multiset<double> expected_eers;
    for (int r = 0; r < kRunsPerChild; ++r) {
      for (int i = 0; i < kResultsPerRun; ++i) expected_eers.insert(Tag(c, r, i));
    }
    EXPECT_EQ(eers, expected_eers) << "child " << c;  // Exact: none lost, none duplicated.
  }
  testing::RawDb raw(path);
  EXPECT_EQ(raw.Scalar("SELECT count(*) FROM results"),
            std::to_string(writers * kRunsPerChild * kResultsPerRun));
  EXPECT_EQ(raw.Scalar("SELECT count(*) FROM epochs"),
            std::to_string(writers * kRunsPerChild * kEpochsPerRun));
  EXPECT_EQ(raw.Scalar("SELECT count(*) FROM runs WHERE status != 'finished'"), "0");
}

}  // namespace
}  // namespace asv::db
