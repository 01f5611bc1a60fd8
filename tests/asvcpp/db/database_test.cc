// Round trips, filters and crash detection of asv::db::Database.
#include "asvcpp/db/database.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cmath>
#include <limits>
#include <thread>

#include "asvcpp/base/error.h"
#include "tests/asvcpp/db/db_test_util.h"
#include "tests/asvcpp/db/store_test.h"

namespace asv::db {
namespace {

using testing::RawDb;
using testing::SampleRunInfo;

// Every test runs against both stores (store_test.h); path_ is an SQLite file or a PostgreSQL URI.
class DbDatabaseTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (IsSkipped()) return;
    path_ = location();
    db_ = std::make_unique<Database>(path_);
  }
  void TearDown() override {
    db_.reset();
    StoreTest::TearDown();
  }

  std::filesystem::path path_;
  std::unique_ptr<Database> db_;
};
ASV_INSTANTIATE_STORES(DbDatabaseTest);

// What only an SQLite file has (max_page_count: a full file).
class DbDatabaseSqliteTest : public DbDatabaseTest {};
ASV_INSTANTIATE_SQLITE_ONLY(DbDatabaseSqliteTest);

ResultRecord Result(const std::string& trial_list, double eer, std::optional<int> epoch = {}) {
  ResultRecord r;
  r.epoch = epoch;
  r.trial_list = trial_list;
  r.eer = eer;
  r.min_dcf = eer / 10;
  r.p_target = 0.01;
  r.c_miss = 1;
  r.c_fa = 1;
  r.n_target = 37611;
  r.n_nontarget = 37609;
  return r;
}

TEST_P(DbDatabaseTest, RunRoundTripsEveryField) {
  const RunInfo info = SampleRunInfo();
  const std::int64_t id = db_->BeginRun(info);
  EXPECT_GT(id, 0);
  const auto row = db_->GetRun(id);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->id, id);
  EXPECT_EQ(row->info.recipe, info.recipe);
  EXPECT_EQ(row->info.config, info.config);
  EXPECT_EQ(row->info.parent_chain, info.parent_chain);
  EXPECT_EQ(row->info.settings_json, info.settings_json);
  EXPECT_EQ(row->info.settings_hash, info.settings_hash);
  EXPECT_EQ(row->info.command_line, info.command_line);
  EXPECT_EQ(row->info.host, info.host);
  EXPECT_EQ(row->info.pid, info.pid);
  EXPECT_EQ(row->info.process_start, info.process_start);
  EXPECT_EQ(row->info.boot_id, info.boot_id);
  EXPECT_EQ(row->info.pid_namespace, info.pid_namespace);
  EXPECT_EQ(row->info.gpu_ids, info.gpu_ids);
  EXPECT_EQ(row->info.world_size, info.world_size);
  EXPECT_EQ(row->info.code_version, info.code_version);
  EXPECT_EQ(row->info.output_folder, info.output_folder);
  EXPECT_EQ(row->status, RunStatus::kRunning);  // This very process is alive.
  EXPECT_FALSE(row->status_inferred);
  EXPECT_EQ(row->start_time.size(), 24u);
  EXPECT_EQ(row->heartbeat_time, row->start_time);
  EXPECT_FALSE(row->end_time.has_value());
  EXPECT_FALSE(row->error_text.has_value());

  // The columns are plain and readable with the sqlite3 CLI.
  RawDb raw(path_);
  EXPECT_EQ(raw.Scalar("SELECT parent_chain || ' ' || gpu_ids || ' ' || status FROM runs"),
            R"(["aug","fe"] [0,2,3] running)");

  db_->FinishRun(id, RunStatus::kFailed, "stage 5 (network training) failed: out of memory");
  const auto done = db_->GetRun(id);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->status, RunStatus::kFailed);
  ASSERT_TRUE(done->end_time.has_value());
  EXPECT_GE(*done->end_time, done->start_time);
  EXPECT_EQ(done->error_text.value_or(""), "stage 5 (network training) failed: out of memory");
  EXPECT_FALSE(db_->GetRun(id + 100).has_value());
}

TEST_P(DbDatabaseTest, RecordedChecksumIsTheNewestWithAChecksum) {
  const std::int64_t first = db_->BeginRun(SampleRunInfo());
  const std::int64_t second = db_->BeginRun(SampleRunInfo());
  EXPECT_FALSE(db_->RecordedChecksum("/exp/networks/epoch.1.pt").has_value());
  ArtifactRecord artifact;
  artifact.kind = "checkpoint";
  artifact.path = "/exp/networks/epoch.1.pt";
  artifact.checksum = "sha256:" + std::string(64, 'a');
  db_->RecordArtifact(first, artifact);
  artifact.checksum = "sha256:" + std::string(64, 'b');  // rewritten by a later run
  db_->RecordArtifact(second, artifact);
  artifact.checksum = "";  // recorded without a checksum: not a reference
  db_->RecordArtifact(second, artifact);
  EXPECT_EQ(db_->RecordedChecksum("/exp/networks/epoch.1.pt"), "sha256:" + std::string(64, 'b'));
  EXPECT_FALSE(db_->RecordedChecksum("/exp/networks/epoch.2.pt").has_value());
}

TEST_P(DbDatabaseTest, BeginRunFillsProcessIdentityWhenPidIsZero) {
  RunInfo info;
  info.recipe = "r";
  info.config = "c";
  const auto row = db_->GetRun(db_->BeginRun(info));
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->info.pid, static_cast<std::int64_t>(::getpid()));
  EXPECT_EQ(row->info.host, HostName());
  EXPECT_EQ(row->info.process_start, ProcessStartTime(::getpid()));
  EXPECT_GT(row->info.process_start, 0);
  EXPECT_EQ(row->info.parent_chain, std::vector<std::string>{});
  EXPECT_EQ(row->info.gpu_ids, std::vector<int>{});
}

TEST_P(DbDatabaseTest, MissingRowsGiveDbError) {
  ASV_EXPECT_THROW_CONTAINS(db_->FinishRun(42, RunStatus::kFinished), DbError, path_.string(),
                            "FinishRun", "no run with id 42");
  ASV_EXPECT_THROW_CONTAINS(db_->Heartbeat(42), DbError, "Heartbeat", "no run with id 42");
  ASV_EXPECT_THROW_CONTAINS(db_->FinishStage(7, RunStatus::kFinished), DbError,
                            "no stage with id 7");
  EpochRecord epoch;
  epoch.epoch = 1;
  // Each store words it its own way: "FOREIGN KEY constraint failed", "violates foreign key constraint".
  const std::string fk = postgres() ? "foreign key constraint" : "FOREIGN KEY";
  ASV_EXPECT_THROW_CONTAINS(db_->RecordEpoch(42, epoch), DbError, path_.string(), "RecordEpoch", fk);
  ASV_EXPECT_THROW_CONTAINS(db_->RecordResult(42, Result("o", 1.0)), DbError, fk);
  ASV_EXPECT_THROW_CONTAINS(db_->BeginStage(42, 0, "prepare"), DbError, fk);
  const std::int64_t run = db_->BeginRun(SampleRunInfo());
  ArtifactRecord artifact;
  artifact.stage_id = 999;
  artifact.path = "x";
  artifact.kind = "k";
  ASV_EXPECT_THROW_CONTAINS(db_->RecordArtifact(run, artifact), DbError, fk);
  EXPECT_TRUE(db_->Artifacts(run).empty());
}

TEST_P(DbDatabaseTest, FailedRunEndsItsUnfinishedStages) {
  const std::int64_t run = db_->BeginRun(SampleRunInfo("voxceleb/xvector", "net"));
  const std::int64_t done = db_->BeginStage(run, 1, "features");
  db_->FinishStage(done, RunStatus::kFinished);
  const std::int64_t open = db_->BeginStage(run, 5, "train");
  db_->FinishRun(run, RunStatus::kFailed, "interrupted by Interrupt");
  const auto stages = db_->Stages(run);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0].id, done);
  EXPECT_EQ(stages[0].status, RunStatus::kFinished);
  EXPECT_FALSE(stages[0].error_text.has_value());
  EXPECT_EQ(stages[1].id, open);
  EXPECT_EQ(stages[1].status, RunStatus::kFailed);
  EXPECT_EQ(stages[1].error_text, std::optional<std::string>("interrupted by Interrupt"));
  EXPECT_TRUE(stages[1].end_time.has_value());
}

TEST_P(DbDatabaseTest, StagesRoundTrip) {
  const std::int64_t run = db_->BeginRun(SampleRunInfo());
  const std::int64_t prepare = db_->BeginStage(run, 0, "prepare");
  db_->FinishStage(prepare, RunStatus::kFinished);
  const std::int64_t train = db_->BeginStage(run, 5, "network training");
  db_->FinishStage(train, RunStatus::kFailed, "loss is NaN");
  const auto stages = db_->Stages(run);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0].id, prepare);
  EXPECT_EQ(stages[0].run_id, run);
  EXPECT_EQ(stages[0].stage, 0);
  EXPECT_EQ(stages[0].name, "prepare");
  EXPECT_EQ(stages[0].status, RunStatus::kFinished);
  EXPECT_TRUE(stages[0].end_time.has_value());
  EXPECT_FALSE(stages[0].error_text.has_value());
  EXPECT_EQ(stages[1].id, train);
  EXPECT_EQ(stages[1].stage, 5);
  EXPECT_EQ(stages[1].name, "network training");
  EXPECT_EQ(stages[1].status, RunStatus::kFailed);
  EXPECT_EQ(stages[1].error_text.value_or(""), "loss is NaN");
  EXPECT_TRUE(db_->Stages(run + 1).empty());
}

TEST_P(DbDatabaseTest, EpochsRoundTripAndUpsertReplaces) {
  const std::int64_t run = db_->BeginRun(SampleRunInfo());
  const std::int64_t other = db_->BeginRun(SampleRunInfo());
  EpochRecord e1;
  e1.epoch = 1;
  e1.loss = 7.25;
  e1.accuracy = 12.5;
  e1.learning_rate = 0.001;
  e1.seconds = 61.75;
  e1.frames_per_second = 12345.5;
  e1.data_wait_percent = 0.75;
  EpochRecord e2 = e1;
  e2.epoch = 2;
  e2.loss = std::numeric_limits<double>::quiet_NaN();
  e2.val_loss = 6.5;
  e2.val_accuracy = 20.0;
  e2.data_wait_percent.reset();
  db_->RecordEpoch(run, e2);  // Out of order on purpose: Epochs() sorts by epoch.
  db_->RecordEpoch(run, e1);
  db_->RecordEpoch(other, e1);

  auto epochs = db_->Epochs(run);
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[0].run_id, run);
  EXPECT_EQ(epochs[0].record.epoch, 1);
  EXPECT_EQ(epochs[0].record.loss, 7.25);
  EXPECT_EQ(epochs[0].record.accuracy, 12.5);
  EXPECT_EQ(epochs[0].record.learning_rate, 0.001);
  EXPECT_EQ(epochs[0].record.seconds, 61.75);
  EXPECT_EQ(epochs[0].record.frames_per_second, 12345.5);
  EXPECT_FALSE(epochs[0].record.val_loss.has_value());
  EXPECT_FALSE(epochs[0].record.val_accuracy.has_value());
  EXPECT_EQ(epochs[0].record.data_wait_percent, std::optional<double>(0.75));
  EXPECT_EQ(epochs[1].record.epoch, 2);
  EXPECT_FALSE(epochs[1].record.data_wait_percent.has_value());
  EXPECT_TRUE(std::isnan(epochs[1].record.loss));
  EXPECT_EQ(epochs[1].record.val_loss, std::optional<double>(6.5));
  EXPECT_EQ(epochs[1].record.val_accuracy, std::optional<double>(20.0));

  // A resumed run records epoch 2 again: the row is replaced, not duplicated.
  EpochRecord again = e1;
  again.epoch = 2;
  again.loss = 5.0;
  again.val_loss.reset();
  db_->RecordEpoch(run, again);
  epochs = db_->Epochs(run);
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[1].record.epoch, 2);
  EXPECT_EQ(epochs[1].record.loss, 5.0);
  EXPECT_EQ(epochs[1].record.data_wait_percent, std::optional<double>(0.75));
  EXPECT_FALSE(epochs[1].record.val_loss.has_value());
  EXPECT_EQ(db_->Epochs(other).size(), 1u);
  RawDb raw(path_);
  EXPECT_EQ(raw.Scalar("SELECT count(*) FROM epochs"), "3");
}

TEST_P(DbDatabaseTest, ResultsRoundTrip) {
  const std::int64_t run = db_->BeginRun(SampleRunInfo("voxceleb/xvector", "fe"));
  ResultRecord r = Result("voxceleb1_o", 3.1875, 12);
  r.min_dcf = 0.3125;
  r.p_target = 0.05;
  r.c_miss = 2;
  r.c_fa = 0.5;
  r.stage = 9;
  const std::int64_t id = db_->RecordResult(run, r);
  const auto rows = db_->Results();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].id, id);
  EXPECT_EQ(rows[0].run_id, run);
  EXPECT_EQ(rows[0].recipe, "voxceleb/xvector");
  EXPECT_EQ(rows[0].config, "fe");
  EXPECT_EQ(rows[0].record.epoch, std::optional<int>(12));
  EXPECT_EQ(rows[0].record.trial_list, "voxceleb1_o");
  EXPECT_EQ(rows[0].record.eer, 3.1875);
  EXPECT_EQ(rows[0].record.min_dcf, 0.3125);
  EXPECT_EQ(rows[0].record.p_target, 0.05);
  EXPECT_EQ(rows[0].record.c_miss, 2);
  EXPECT_EQ(rows[0].record.c_fa, 0.5);
  EXPECT_EQ(rows[0].record.n_target, 37611);
  EXPECT_EQ(rows[0].record.n_nontarget, 37609);
  EXPECT_EQ(rows[0].recorded_time.size(), 24u);
  EXPECT_EQ(rows[0].record.stage, std::optional<int>(9));
  ResultFilter final_only;
  final_only.stage = 9;
  db_->RecordResult(run, Result("voxceleb1_o", 2.0));
  EXPECT_EQ(db_->Results(final_only).size(), 1u);
  EXPECT_FALSE(db_->Results()[0].record.epoch.has_value());  // Newest first.
  // Without LLR metrics and costs: NULL columns, no cost rows.
  EXPECT_FALSE(rows[0].record.cllr.has_value());
  EXPECT_TRUE(rows[0].record.costs.empty());
}

TEST_P(DbDatabaseTest, EveryMetricAtEveryOperatingPointRoundTrips) {
  const std::int64_t run = db_->BeginRun(SampleRunInfo("voxceleb/xvector", "fe"));
  ResultRecord r = Result("voxceleb1_e", 1.25);
  r.cllr = 0.71875;
  r.min_cllr = 0.046875;
  r.costs = {{0.05, 1, 1, 0.125, 0.5}, {0.01, 1, 1, 0.25, std::nullopt}, {0.001, 1, 10, 0.375, 1.5}};
  const std::int64_t id = db_->RecordResult(run, r);
  db_->RecordResult(run, Result("voxceleb1_h", 2.5));
  r.trial_list = "voxceleb1_o";
  r.costs = {{0.5, 1, 1, 0.0625, 0.0625}};
  db_->RecordResult(run, r);
  for (const bool best : {false, true}) {
    SCOPED_TRACE(best);
    ResultFilter filter;
    filter.best_per_config = best;
    filter.trial_list = "voxceleb1_e";
    const auto rows = db_->Results(filter);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].id, id);
    EXPECT_EQ(rows[0].record.cllr, std::optional<double>(0.71875));
    EXPECT_EQ(rows[0].record.min_cllr, std::optional<double>(0.046875));
    const auto& c = rows[0].record.costs;
    ASSERT_EQ(c.size(), 3u);  // in the order recorded
    EXPECT_EQ(c[0].p_target, 0.05);
    EXPECT_EQ(c[0].min_dcf, 0.125);
    EXPECT_EQ(c[0].act_dcf, std::optional<double>(0.5));
    EXPECT_EQ(c[1].p_target, 0.01);
    EXPECT_FALSE(c[1].act_dcf.has_value());
    EXPECT_EQ(c[2].p_target, 0.001);
    EXPECT_EQ(c[2].c_fa, 10);
    EXPECT_EQ(c[2].act_dcf, std::optional<double>(1.5));
  }
  const auto all = db_->Results();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].record.costs.size(), 1u);  // voxceleb1_o, newest first
  EXPECT_EQ(all[1].record.costs.size(), 0u);
  // Two costs at one operating point are refused, and the result is not half recorded.
  r.trial_list = "dup";
  r.costs = {{0.05, 1, 1, 0.1, 0.2}, {0.05, 1, 1, 0.3, 0.4}};
  EXPECT_THROW(db_->RecordResult(run, r), DbError);
  ResultFilter dup;
  dup.trial_list = "dup";
  EXPECT_TRUE(db_->Results(dup).empty());
  EXPECT_EQ(db_->IntegrityCheck(), "ok");
}

TEST_P(DbDatabaseTest, ResultFiltersAndBestPerConfig) {
  const std::int64_t a = db_->BeginRun(SampleRunInfo("r", "fe"));
  const std::int64_t b = db_->BeginRun(SampleRunInfo("r", "fe"));
  const std::int64_t c = db_->BeginRun(SampleRunInfo("r", "net"));
  const std::int64_t d = db_->BeginRun(SampleRunInfo("r2", "fe"));
  const std::int64_t a1 = db_->RecordResult(a, Result("list1", 3.0));
  const std::int64_t a2 = db_->RecordResult(a, Result("list2", 5.0));
  const std::int64_t b1 = db_->RecordResult(b, Result("list1", 2.5));
  const std::int64_t b1_tie = db_->RecordResult(b, Result("list1", 2.5));  // Tie: latest wins.
  const std::int64_t b2 = db_->RecordResult(b, Result("list2", 6.0));
  const std::int64_t c1 = db_->RecordResult(c, Result("list1", 4.0));
  const std::int64_t d1 = db_->RecordResult(d, Result("list1", 1.0));

  const auto ids = [](const std::vector<ResultRow>& rows) {
    std::vector<std::int64_t> out;
    for (const auto& row : rows) out.push_back(row.id);
    return out;
  };
  using Ids = std::vector<std::int64_t>;
  EXPECT_EQ(ids(db_->Results()), (Ids{d1, c1, b2, b1_tie, b1, a2, a1}));

  ResultFilter filter;
  filter.recipe = "r";
  EXPECT_EQ(ids(db_->Results(filter)), (Ids{c1, b2, b1_tie, b1, a2, a1}));
  filter.config = "fe";
  EXPECT_EQ(ids(db_->Results(filter)), (Ids{b2, b1_tie, b1, a2, a1}));
  filter.trial_list = "list1";
  EXPECT_EQ(ids(db_->Results(filter)), (Ids{b1_tie, b1, a1}));
  filter.limit = 2;
  EXPECT_EQ(ids(db_->Results(filter)), (Ids{b1_tie, b1}));

  ResultFilter by_run;
  by_run.run_id = a;
  EXPECT_EQ(ids(db_->Results(by_run)), (Ids{a2, a1}));

  ResultFilter best;
  best.best_per_config = true;
  const auto all_best = db_->Results(best);
  EXPECT_EQ(ids(all_best), (Ids{b1_tie, a2, c1, d1}));
  ASSERT_EQ(all_best.size(), 4u);
  EXPECT_EQ(all_best[0].recipe + "/" + all_best[0].config + "/" + all_best[0].record.trial_list,
            "r/fe/list1");
  EXPECT_EQ(all_best[0].record.eer, 2.5);
  EXPECT_EQ(all_best[1].record.eer, 5.0);
  EXPECT_EQ(all_best[2].record.eer, 4.0);
  EXPECT_EQ(all_best[3].recipe, "r2");
  EXPECT_EQ(all_best[3].record.eer, 1.0);

  best.recipe = "r";
  best.trial_list = "list2";
  EXPECT_EQ(ids(db_->Results(best)), (Ids{a2}));
  // The best is chosen among the rows that match the other filters.
  ResultFilter best_of_a;
  best_of_a.best_per_config = true;
  best_of_a.run_id = a;
  EXPECT_EQ(ids(db_->Results(best_of_a)), (Ids{a1, a2}));
}

TEST_P(DbDatabaseTest, ArtifactsRoundTrip) {
  const std::int64_t run = db_->BeginRun(SampleRunInfo());
  const std::int64_t stage = db_->BeginStage(run, 5, "network training");
  ArtifactRecord checkpoint;
  checkpoint.stage_id = stage;
  checkpoint.path = "networks/epoch.3.pt";
  checkpoint.kind = "checkpoint";
  checkpoint.checksum = "sha256:00ff";
  checkpoint.bytes = 17'000'000'000;  // Beyond 32 bits.
  ArtifactRecord scores;
  scores.path = "/tmp/out/scores/voxceleb1_o.txt";
  scores.kind = "scores";
  const std::int64_t id1 = db_->RecordArtifact(run, checkpoint);
  const std::int64_t id2 = db_->RecordArtifact(run, scores);
  const auto rows = db_->Artifacts(run);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].id, id1);
  EXPECT_EQ(rows[0].run_id, run);
  EXPECT_EQ(rows[0].record.stage_id, std::optional<std::int64_t>(stage));
  EXPECT_EQ(rows[0].record.path, "networks/epoch.3.pt");
  EXPECT_EQ(rows[0].record.kind, "checkpoint");
  EXPECT_EQ(rows[0].record.checksum, "sha256:00ff");
  EXPECT_EQ(rows[0].record.bytes, 17'000'000'000);
  EXPECT_EQ(rows[1].id, id2);
  EXPECT_FALSE(rows[1].record.stage_id.has_value());
  EXPECT_EQ(rows[1].record.checksum, "");
  EXPECT_EQ(rows[1].record.bytes, 0);
}

TEST_P(DbDatabaseTest, ListRunsFiltersNewestFirst) {
  const std::int64_t r1 = db_->BeginRun(SampleRunInfo("r", "fe"));
  const std::int64_t r2 = db_->BeginRun(SampleRunInfo("r", "net"));
  const std::int64_t r3 = db_->BeginRun(SampleRunInfo("r", "fe"));
  const std::int64_t r4 = db_->BeginRun(SampleRunInfo("other", "fe"));
  db_->FinishRun(r1, RunStatus::kFinished);
  db_->FinishRun(r2, RunStatus::kFailed, "boom");
  const auto ids = [](const std::vector<RunRow>& rows) {
    std::vector<std::int64_t> out;
    for (const auto& row : rows) out.push_back(row.id);
    return out;
  };
  using Ids = std::vector<std::int64_t>;
  EXPECT_EQ(ids(db_->ListRuns()), (Ids{r4, r3, r2, r1}));
  RunFilter filter;
  filter.recipe = "r";
  EXPECT_EQ(ids(db_->ListRuns(filter)), (Ids{r3, r2, r1}));
  filter.config = "fe";
  EXPECT_EQ(ids(db_->ListRuns(filter)), (Ids{r3, r1}));
  filter.status = RunStatus::kFinished;
  EXPECT_EQ(ids(db_->ListRuns(filter)), (Ids{r1}));
  RunFilter running;
  running.status = RunStatus::kRunning;
  EXPECT_EQ(ids(db_->ListRuns(running)), (Ids{r4, r3}));
  running.limit = 1;
  EXPECT_EQ(ids(db_->ListRuns(running)), (Ids{r4}));
}

// A writer killed with SIGKILL in the middle of its run (no handler, no goodbye): its rows stay, and
// the next reader marks its run and running stage crashed.
TEST_P(DbDatabaseTest, WriterKilledWithSigkillIsMarkedCrashedKeepingItsRows) {
  db_.reset();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    try {
      Database db(path_);
      RunInfo info;
      info.recipe = "r";
      info.config = "killed";
      const std::int64_t id = db.BeginRun(info);
      db.BeginStage(id, 5, "network training");
      EpochRecord epoch;
      epoch.epoch = 1;
      epoch.loss = 4.5;
      db.RecordEpoch(id, epoch);
      if (::write(fds[1], &id, sizeof(id)) != sizeof(id)) ::_exit(2);
      for (;;) ::pause();  // until killed, the connection still open
    } catch (...) {
      ::_exit(1);
    }
  }
  ::close(fds[1]);
  std::int64_t id = 0;
  ASSERT_EQ(::read(fds[0], &id, sizeof(id)), static_cast<ssize_t>(sizeof(id)));
  ::close(fds[0]);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);

  db_ = std::make_unique<Database>(path_);
  const auto run = db_->GetRun(id);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->status, RunStatus::kCrashed);
  EXPECT_FALSE(run->status_inferred);  // persisted
  EXPECT_NE(run->error_text.value_or("").find(std::to_string(child)), std::string::npos);
  ASSERT_EQ(db_->Stages(id).size(), 1u);
  EXPECT_EQ(db_->Stages(id)[0].status, RunStatus::kCrashed);
  ASSERT_EQ(db_->Epochs(id).size(), 1u);
  EXPECT_EQ(db_->Epochs(id)[0].record.loss, 4.5);
  RawDb raw(path_);
  EXPECT_EQ(raw.Scalar("SELECT status FROM runs WHERE id = " + std::to_string(id)), "crashed");
}

TEST_P(DbDatabaseTest, RunOfExitedProcessIsMarkedCrashedAndPersisted) {
  // A child process begins a run and a stage, then dies without finishing them. No connection
  // may be open across fork(): SQLite's per-process lock bookkeeping would be inherited.
  db_.reset();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    int code = 0;
    try {
      Database db(path_);
      RunInfo info;
      info.recipe = "r";
      info.config = "doomed";
      const std::int64_t id = db.BeginRun(info);
      db.BeginStage(id, 5, "network training");
      code = ::write(fds[1], &id, sizeof(id)) == sizeof(id) ? 0 : 2;
    } catch (...) {
      code = 1;
    }
    ::_exit(code);
  }
  ::close(fds[1]);
  std::int64_t id = 0;
  ASSERT_EQ(::read(fds[0], &id, sizeof(id)), static_cast<ssize_t>(sizeof(id)));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  db_ = std::make_unique<Database>(path_);

  {
    RawDb raw(path_);  // Before any reader looked, the row still says 'running'.
    EXPECT_EQ(raw.Scalar("SELECT status FROM runs WHERE id = " + std::to_string(id)), "running");
  }
  const std::int64_t alive = db_->BeginRun(SampleRunInfo());  // This process: stays running.
  const auto runs = db_->ListRuns();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].id, id);
  EXPECT_EQ(runs[1].info.pid, static_cast<std::int64_t>(child));
  EXPECT_EQ(runs[1].status, RunStatus::kCrashed);
  EXPECT_FALSE(runs[1].status_inferred);
  EXPECT_EQ(runs[1].end_time, std::optional<std::string>(runs[1].heartbeat_time));
  EXPECT_NE(runs[1].error_text.value_or("").find(std::to_string(child)), std::string::npos);
  EXPECT_EQ(runs[0].id, alive);
  EXPECT_EQ(runs[0].status, RunStatus::kRunning);

  RawDb raw(path_);
  EXPECT_EQ(raw.Scalar("SELECT status FROM runs WHERE id = " + std::to_string(id)), "crashed");
  EXPECT_EQ(raw.Scalar("SELECT status FROM stages WHERE run_id = " + std::to_string(id)),
            "crashed");
  EXPECT_EQ(db_->MarkCrashedRuns(), 0);  // Already marked.
}

TEST_P(DbDatabaseTest, ReusedPidWithDifferentStartTimeIsCrashed) {
  RunInfo info = SampleRunInfo();
  info.process_start += 12345;  // Our pid, but "started" at another time: a pid reuse.
  const std::int64_t reused = db_->BeginRun(info);
  const std::int64_t mine = db_->BeginRun(SampleRunInfo());
  EXPECT_EQ(db_->MarkCrashedRuns(), 1);
  EXPECT_EQ(db_->GetRun(reused)->status, RunStatus::kCrashed);
  EXPECT_EQ(db_->GetRun(mine)->status, RunStatus::kRunning);
}

TEST_P(DbDatabaseTest, StaleHeartbeatOfAnotherHostIsShownCrashedButNotStored) {
  RunInfo remote = SampleRunInfo("r", "remote");
  remote.host = "some-other-host.example";
  remote.pid = 1;  // Alive here, but pids of another host mean nothing on this one.
  const std::int64_t stale = db_->BeginRun(remote);
  const std::int64_t fresh = db_->BeginRun(remote);
  RunInfo container = SampleRunInfo("r", "container");
  container.pid_namespace = "pid:[1]";  // Same host, other pid namespace: also unverifiable.
  const std::int64_t stale_container = db_->BeginRun(container);
  {
    RawDb raw(path_);
    raw.Exec("UPDATE runs SET heartbeat_time = '2000-01-01T00:00:00.000Z' WHERE id IN (" +
             std::to_string(stale) + ", " + std::to_string(stale_container) + ")");
  }
  EXPECT_EQ(db_->MarkCrashedRuns(), 0);
  const auto s = db_->GetRun(stale);
  EXPECT_EQ(s->status, RunStatus::kCrashed);
  EXPECT_TRUE(s->status_inferred);
  EXPECT_EQ(db_->GetRun(stale_container)->status, RunStatus::kCrashed);
  EXPECT_EQ(db_->GetRun(fresh)->status, RunStatus::kRunning);
  EXPECT_FALSE(db_->GetRun(fresh)->status_inferred);

  RunFilter crashed;
  crashed.status = RunStatus::kCrashed;
  ASSERT_EQ(db_->ListRuns(crashed).size(), 2u);
  RunFilter running;
  running.status = RunStatus::kRunning;
  ASSERT_EQ(db_->ListRuns(running).size(), 1u);
  EXPECT_EQ(db_->ListRuns(running)[0].id, fresh);

  RawDb raw(path_);
  EXPECT_EQ(raw.Scalar("SELECT status FROM runs WHERE id = " + std::to_string(stale)), "running");

  // A heartbeat brings it back; a smaller threshold makes the fresh one stale.
  db_->Heartbeat(stale);
  EXPECT_EQ(db_->GetRun(stale)->status, RunStatus::kRunning);
  DatabaseOptions strict;
  strict.stale_heartbeat = std::chrono::seconds(-3600);  // Any heartbeat is "older" than this.
  Database impatient(path_, strict);
  EXPECT_EQ(impatient.GetRun(fresh)->status, RunStatus::kCrashed);
}

// A full disk, simulated with max_page_count: the file cannot grow, so a long error text does
// not fit; the run must still end 'failed' with the first cause at the start of its error text.
TEST_P(DbDatabaseSqliteTest, FullDatabaseStillRecordsTheFailureAndItsFirstCause) {
  const std::int64_t id = db_->BeginRun(SampleRunInfo());
  const std::int64_t stage = db_->BeginStage(id, 5, "train");
  db_.reset();
  RawDb raw(path_);
  DatabaseOptions full;
  full.max_page_count = std::stoll(raw.Scalar("PRAGMA page_count"));
  Database db(path_, full);

  // Writing anything that needs a new page fails as on a full disk.
  std::string cause;
  try {
    ArtifactRecord big;
    big.path = std::string(64 * 1024, 'p');
    big.kind = "checkpoint";
    db.RecordArtifact(id, big);
    FAIL() << "RecordArtifact should not fit";
  } catch (const DbError& e) {
    cause = std::string("stage 5 (train) failed: ") + e.what();
  }
  EXPECT_NE(cause.find("full"), std::string::npos) << cause;
  const std::string log_tail(40 * 1024, 'x');  // e.g. the tail of a worker's log
  EXPECT_NO_THROW(db.FinishRun(id, RunStatus::kFailed, cause + "\n" + log_tail));

  EXPECT_EQ(raw.Scalar("SELECT status FROM runs WHERE id = " + std::to_string(id)), "failed");
  const std::string text = raw.Scalar("SELECT error_text FROM runs WHERE id = " + std::to_string(id));
  EXPECT_EQ(text.rfind(cause.substr(0, 100), 0), 0u) << text;  // the first cause comes first
  EXPECT_NE(text.find("database is full"), std::string::npos) << text;
  EXPECT_LE(text.size(), Database::kShortErrorBytes + 100);
  EXPECT_NE(raw.Scalar("SELECT end_time FROM runs WHERE id = " + std::to_string(id)), "NULL");
  // The stage keeps its status: only the run's own row was updated.
  EXPECT_EQ(raw.Scalar("SELECT status FROM stages WHERE id = " + std::to_string(stage)), "running");

  // A short text fits as it is.
  const std::int64_t other = db.BeginRun(SampleRunInfo());
  db.FinishRun(other, RunStatus::kFailed, "disk full");
  EXPECT_EQ(db.GetRun(other)->error_text, std::optional<std::string>("disk full"));
}

// A run that dies ends at its last sign of life (its last heartbeat or write), not at its start,
// and the error text says when that was and when the crash was found.
TEST_P(DbDatabaseTest, CrashedRunEndsAtItsLastSignOfLife) {
  db_.reset();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    int code = 0;
    try {
      Database db(path_);
      RunInfo info;
      info.recipe = "r";
      info.config = "killed";
      const std::int64_t id = db.BeginRun(info);
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      EpochRecord epoch;
      epoch.epoch = 1;
      db.RecordEpoch(id, epoch);  // the last sign of life
      code = ::write(fds[1], &id, sizeof(id)) == sizeof(id) ? 0 : 2;
    } catch (...) {
      code = 1;
    }
    ::_exit(code);
  }
  ::close(fds[1]);
  std::int64_t id = 0;
  ASSERT_EQ(::read(fds[0], &id, sizeof(id)), static_cast<ssize_t>(sizeof(id)));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_EQ(status, 0);

  db_ = std::make_unique<Database>(path_);
  const auto run = db_->GetRun(id);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->status, RunStatus::kCrashed);
  const std::string epoch_time = db_->Epochs(id).at(0).recorded_time;
  EXPECT_GT(epoch_time, run->start_time);
  EXPECT_EQ(run->heartbeat_time, epoch_time);
  EXPECT_EQ(run->end_time, std::optional<std::string>(epoch_time));
  const std::string text = run->error_text.value_or("");
  EXPECT_NE(text.find("last sign of life (heartbeat) at " + epoch_time), std::string::npos) << text;
  EXPECT_NE(text.find("found gone at "), std::string::npos) << text;
}

TEST_P(DbDatabaseTest, EveryWriteOfARunIsASignOfLife) {
  const std::int64_t id = db_->BeginRun(SampleRunInfo());
  RawDb raw(path_);
  const auto heartbeat = [&] { return raw.Scalar("SELECT heartbeat_time FROM runs WHERE id = " + std::to_string(id)); };
  const auto old = [&] { raw.Exec("UPDATE runs SET heartbeat_time = '2000-01-01T00:00:00.000Z'"); };
  old();
  const std::int64_t stage = db_->BeginStage(id, 1, "prepare");
  EXPECT_GT(heartbeat(), "2001");
  old();
  db_->FinishStage(stage, RunStatus::kFinished);
  EXPECT_GT(heartbeat(), "2001");
  old();
  EpochRecord epoch;
  epoch.epoch = 1;
  db_->RecordEpoch(id, epoch);
  EXPECT_GT(heartbeat(), "2001");
  old();
  db_->RecordResult(id, Result("vox1_o", 2.0));
  EXPECT_GT(heartbeat(), "2001");
  old();
  ArtifactRecord artifact;
  artifact.path = "a";
  artifact.kind = "list";
  db_->RecordArtifact(id, artifact);
  EXPECT_GT(heartbeat(), "2001");
  // A run that has ended keeps its final times.
  db_->FinishRun(id, RunStatus::kFinished);
  const std::string final_beat = heartbeat();
  db_->RecordArtifact(id, artifact);
  EXPECT_EQ(heartbeat(), final_beat);
}

TEST_P(DbDatabaseTest, MovedDatabaseKeepsWorking) {
  Database moved = std::move(*db_);
  const std::int64_t id = moved.BeginRun(SampleRunInfo());
  Database assigned(NewLocation());
  assigned = std::move(moved);
  EXPECT_EQ(assigned.path(), path_);
  EXPECT_TRUE(assigned.GetRun(id).has_value());
  EXPECT_THROW(db_->SchemaVersion(), std::logic_error);  // Moved-from.
}

}  // namespace
}  // namespace asv::db
