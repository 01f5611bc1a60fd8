// Database::CopyFrom between the stores (asvrun db copy): SQLite to PostgreSQL and back, every table
// with its ids, times and artifact checksums, a non-empty target refused unless replaced.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/db/database.h"
#include "tests/asvcpp/db/db_test_util.h"
#include "tests/asvcpp/db/store_test.h"

namespace asv::db {
namespace {

using testing::SampleRunInfo;
using testing::Store;

// The parameter is the target's store; the source is in the other one.
class DbCopyTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (IsSkipped()) return;
    std::string skip;
    if (testing::PostgresServerUri(&skip).empty()) GTEST_SKIP() << "no PostgreSQL test server: " << skip;
    target_ = location();
    source_ = NewLocation(postgres() ? Store::kSqlite : Store::kPostgres);
  }

  std::string source_;
  std::string target_;
};
ASV_INSTANTIATE_STORES(DbCopyTest);

// Every table, NULLs, NaN, a failed and a still-running run, costs, artifacts with checksums.
void Populate(Database& db) {
  RunInfo info = SampleRunInfo("voxceleb/xvector", "net");
  info.slurm_job_id = 4711;
  info.slurm_array_task_id = 3;
  const std::int64_t a = db.BeginRun(info);
  const std::int64_t stage = db.BeginStage(a, 5, "train");
  EpochRecord epoch;
  epoch.epoch = 1;
  epoch.loss = 3.25;
  epoch.accuracy = std::numeric_limits<double>::quiet_NaN();
  epoch.learning_rate = 0.1;
  epoch.val_loss = 2.5;
  epoch.data_wait_percent = 12.5;
  db.RecordEpoch(a, epoch);
  ResultRecord result;
  result.trial_list = "vox1_o";
  result.eer = 2.3125;
  result.min_dcf = 0.25;
  result.n_target = 37611;
  result.n_nontarget = 37609;
  result.stage = 9;
  result.cllr = 0.5;
  result.costs = {CostRecord{0.05, 1, 1, 0.125, 0.25}, CostRecord{0.01, 1, 1, 0.375, std::nullopt}};
  db.RecordResult(a, result);
  ArtifactRecord artifact;
  artifact.stage_id = stage;
  artifact.path = "system/nnet/epoch.1.pt";
  artifact.kind = "checkpoint";
  artifact.checksum = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  artifact.bytes = 123456789;
  db.RecordArtifact(a, artifact);
  ProgressRecord progress;
  progress.stage = "5 train";
  progress.what = "epoch 1/2";
  progress.done = 40;
  progress.total = 80;
  progress.unit = "batches";
  db.UpdateProgress(a, 0, progress);
  db.FinishStage(stage, RunStatus::kFinished);
  db.FinishRun(a, RunStatus::kFailed, "out of memory");
  db.BeginRun(SampleRunInfo("voxceleb/margin", "aam"));  // still running, this live process
  SlurmJobRecord job;
  job.job_id = 4712;
  job.recipe = "voxceleb/xvector";
  job.config = "net_large";
  job.output_file = "/data/slurm/net_large.4712.out";
  db.RecordSlurmJob(job);
}

// Everything the reading members give, as text: equal for two databases with the same rows.
std::string Contents(Database& db) {
  std::string text;
  for (const RunRow& run : db.ListRuns()) {
    text += fmt::format("run {} {} {} {} {} {} {} {} {} {} {}\n", run.id, run.info.recipe, run.info.config,
                        ToString(run.status), run.start_time, run.end_time.value_or("-"), run.heartbeat_time,
                        run.error_text.value_or("-"), run.info.settings_json, run.info.slurm_job_id.value_or(0),
                        run.info.slurm_array_task_id.value_or(0));
    for (const StageRow& s : db.Stages(run.id)) {
      text += fmt::format(" stage {} {} {} {} {}\n", s.id, s.stage, s.name, ToString(s.status), s.start_time);
    }
    for (const EpochRow& e : db.Epochs(run.id)) {
      text += fmt::format(" epoch {} {} {} {} {} {} {}\n", e.id, e.record.epoch, e.record.loss, e.record.accuracy,
                          e.record.val_loss.value_or(-1), e.record.data_wait_percent.value_or(-1), e.recorded_time);
    }
    for (const ArtifactRow& r : db.Artifacts(run.id)) {
      text += fmt::format(" artifact {} {} {} {} {} {}\n", r.id, r.record.stage_id.value_or(0), r.record.path,
                          r.record.checksum, r.record.bytes, r.recorded_time);
    }
  }
  for (const ResultRow& r : db.Results()) {
    text += fmt::format("result {} {} {} {} {} {} {}\n", r.id, r.run_id, r.record.trial_list, r.record.eer,
                        r.record.min_dcf, r.record.cllr.value_or(-1), r.recorded_time);
    for (const CostRecord& c : r.record.costs) {
      text += fmt::format(" cost {} {} {}\n", c.p_target, c.min_dcf, c.act_dcf.value_or(-1));
    }
  }
  for (const ProgressRow& p : db.ProgressRows()) {
    text += fmt::format("progress {} {} {} {} {}\n", p.run_id, p.rank, p.record.what, p.record.done, p.updated_time);
  }
  for (const SlurmJobRecord& j : db.UnclaimedSlurmJobs()) {
    text += fmt::format("job {} {} {}\n", j.job_id, j.config, j.output_file);
  }
  return text;
}

TEST_P(DbCopyTest, CopiesEveryTableWithIdsTimesAndChecksums) {
  std::string expected;
  {
    Database source(source_);
    Populate(source);
    expected = Contents(source);
  }
  ASSERT_NE(expected.find("sha256:9f86d081"), std::string::npos);
  DatabaseOptions read_only;
  read_only.read_only = true;
  Database source(source_, read_only);
  Database target(target_);
  const auto copied = target.CopyFrom(source, /*replace=*/false);
  const std::vector<std::pair<std::string, std::int64_t>> counts = {
      {"runs", 2}, {"stages", 1},    {"epochs", 1},   {"results", 1},
      {"result_costs", 2}, {"artifacts", 1}, {"progress", 1}, {"slurm_jobs", 1}};
  EXPECT_EQ(copied, counts);
  EXPECT_EQ(Contents(target), expected);
  EXPECT_EQ(target.RecordedChecksum("system/nnet/epoch.1.pt"),
            std::optional<std::string>("sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"));
  // New rows of the target get new ids.
  const std::int64_t next = target.BeginRun(SampleRunInfo());
  EXPECT_EQ(next, 3);
  EXPECT_GT(target.BeginStage(next, 1, "features"), 1);
  EXPECT_EQ(target.IntegrityCheck(), "ok");
}

TEST_P(DbCopyTest, RefusesANonEmptyTargetUnlessReplacing) {
  {
    Database source(source_);
    Populate(source);
  }
  DatabaseOptions read_only;
  read_only.read_only = true;
  Database source(source_, read_only);
  Database target(target_);
  const std::int64_t own = target.BeginRun(SampleRunInfo("own", "run"));
  ASV_EXPECT_THROW_CONTAINS(target.CopyFrom(source, /*replace=*/false), DbError, target.location(),
                            "not empty (1 runs)", "--replace");
  ASSERT_EQ(target.ListRuns().size(), 1u);  // untouched
  EXPECT_EQ(target.ListRuns()[0].id, own);
  target.CopyFrom(source, /*replace=*/true);
  EXPECT_EQ(Contents(target), Contents(source));
}

}  // namespace
}  // namespace asv::db
