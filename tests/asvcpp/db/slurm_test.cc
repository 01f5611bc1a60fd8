// SLURM in the experiment database (schema version 8): the job id a run executes in, the jobs
// `asvrun --slurm` submitted, and crash detection that asks SLURM how a job ended.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "asvcpp/db/database.h"
#include "asvcpp/db/schema.h"
#include "tests/asvcpp/db/db_test_util.h"

namespace asv::db {
namespace {

using testing::RawDb;

// Sets environment variables for the lifetime of the object, restoring their old values.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::string>& values) {
    for (const auto& [name, value] : values) {
      const char* old = std::getenv(name.c_str());
      saved_[name] = old != nullptr ? std::optional<std::string>(old) : std::nullopt;
      ::setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST(DbSlurmTest, UpgradesVersion7DatabaseWithSlurmColumnsKeepingEveryRow) {
  const testing::ScopedDir dir("slurm_v8");
  const auto path = dir / "experiments.db";
  std::int64_t run = 0;
  std::vector<std::string> before;
  {
    DatabaseOptions v7;
    v7.max_schema_version = 7;
    Database db(path, v7);
    ASSERT_EQ(db.SchemaVersion(), 7);
    run = db.BeginRun(testing::SampleRunInfo("r", "a"));
    db.BeginStage(run, 5, "train");
    EXPECT_THROW(db.UnclaimedSlurmJobs(), DbError);  // no table before version 8
    before = RawDb(path).Query("SELECT * FROM runs ORDER BY id");
  }
  {
    Database db(path);
    EXPECT_EQ(db.SchemaVersion(), 8);
    EXPECT_EQ(LatestSchemaVersion(), 8);
    EXPECT_EQ(db.IntegrityCheck(), "ok");
    const auto row = db.GetRun(run);
    ASSERT_TRUE(row.has_value());
    EXPECT_FALSE(row->info.slurm_job_id.has_value());
    EXPECT_FALSE(row->info.slurm_array_task_id.has_value());
    EXPECT_TRUE(db.UnclaimedSlurmJobs().empty());
  }
  RawDb raw(path);
  // The old run row is unchanged apart from the two new columns, NULL at its end.
  const auto after = raw.Query("SELECT * FROM runs ORDER BY id");
  ASSERT_EQ(after.size(), before.size());
  EXPECT_EQ(after[0], before[0] + "|NULL|NULL");
  EXPECT_EQ(raw.Scalar("SELECT count(*) FROM sqlite_master WHERE name = 'runs_slurm_job'"), "1");
  EXPECT_EQ(raw.Scalar("SELECT count(*) FROM stages"), "1");
}

TEST(DbSlurmTest, RunRecordsTheSlurmJobOfItsEnvironment) {
  const testing::ScopedDir dir("slurm_env");
  Database db(dir / "experiments.db");
  RunInfo info = testing::SampleRunInfo();
  info.pid = 0;  // BeginRun fills the identity, SLURM job included
  std::int64_t in_job = 0;
  std::int64_t in_array = 0;
  std::int64_t bad = 0;
  {
    ScopedEnv env({{"SLURM_JOB_ID", "1234"}, {"SLURM_ARRAY_TASK_ID", ""}});
    in_job = db.BeginRun(info);
  }
  {
    ScopedEnv env({{"SLURM_JOB_ID", "1240"}, {"SLURM_ARRAY_TASK_ID", "7"}});
    in_array = db.BeginRun(info);
  }
  {
    ScopedEnv env({{"SLURM_JOB_ID", "12x"}, {"SLURM_ARRAY_TASK_ID", "7"}});
    bad = db.BeginRun(info);
  }
  EXPECT_EQ(db.GetRun(in_job)->info.slurm_job_id, std::optional<std::int64_t>(1234));
  EXPECT_FALSE(db.GetRun(in_job)->info.slurm_array_task_id.has_value());
  EXPECT_EQ(db.GetRun(in_array)->info.slurm_job_id, std::optional<std::int64_t>(1240));
  EXPECT_EQ(db.GetRun(in_array)->info.slurm_array_task_id, std::optional<std::int64_t>(7));
  EXPECT_FALSE(db.GetRun(bad)->info.slurm_job_id.has_value());
  EXPECT_FALSE(db.GetRun(bad)->info.slurm_array_task_id.has_value());
}

TEST(DbSlurmTest, SubmittedJobsAreUnclaimedUntilARunTakesThemOver) {
  const testing::ScopedDir dir("slurm_jobs");
  Database db(dir / "experiments.db");
  SlurmJobRecord job;
  job.job_id = 55;
  job.recipe = "voxceleb/xvector";
  job.config = "a";
  job.output_folder = "/out";
  job.output_file = "/out/slurm/a.55.out";
  job.command_line = "asvrun voxceleb/xvector a";
  db.RecordSlurmJob(job);
  job.job_id = 56;
  job.config = "b";
  db.RecordSlurmJob(job);
  auto unclaimed = db.UnclaimedSlurmJobs();
  ASSERT_EQ(unclaimed.size(), 2u);
  EXPECT_EQ(unclaimed[0].job_id, 56);
  EXPECT_EQ(unclaimed[1].job_id, 55);
  EXPECT_EQ(unclaimed[1].config, "a");
  EXPECT_EQ(unclaimed[1].output_file, "/out/slurm/a.55.out");
  EXPECT_FALSE(unclaimed[1].submit_time.empty());
  RunInfo info = testing::SampleRunInfo("voxceleb/xvector", "a");
  info.slurm_job_id = 55;
  db.BeginRun(info);
  unclaimed = db.UnclaimedSlurmJobs();
  ASSERT_EQ(unclaimed.size(), 1u);
  EXPECT_EQ(unclaimed[0].job_id, 56);
}

TEST(DbSlurmTest, DeadRunOfAJobSlurmEndedIsFailedWithSlurmsReason) {
  const testing::ScopedDir dir("slurm_end");
  const auto path = dir / "experiments.db";
  std::vector<std::int64_t> asked;
  DatabaseOptions options;
  options.slurm_job_end = [&asked](std::int64_t job) -> std::optional<SlurmJobEnd> {
    asked.push_back(job);
    if (job == 77) return SlurmJobEnd{RunStatus::kFailed, "cancelled by SLURM (job 77: JobState=CANCELLED)"};
    return std::nullopt;  // job 78: SLURM cannot say
  };
  Database db(path, options);
  RunInfo dead = testing::SampleRunInfo("r", "cancelled");
  dead.process_start += 12345;  // our pid, another start time: a process that is gone
  dead.slurm_job_id = 77;
  const std::int64_t cancelled = db.BeginRun(dead);
  dead.config = "unknown";
  dead.slurm_job_id = 78;
  const std::int64_t unknown = db.BeginRun(dead);
  RunInfo alive = testing::SampleRunInfo("r", "alive");
  alive.slurm_job_id = 79;
  const std::int64_t running = db.BeginRun(alive);
  db.BeginStage(cancelled, 5, "train");

  // A read-only reader infers it and stores nothing.
  {
    DatabaseOptions read_only = options;
    read_only.read_only = true;
    Database reader(path, read_only);
    const auto row = reader.GetRun(cancelled);
    EXPECT_EQ(row->status, RunStatus::kFailed);
    EXPECT_TRUE(row->status_inferred);
    EXPECT_EQ(row->error_text.value_or(""), "cancelled by SLURM (job 77: JobState=CANCELLED)");
    EXPECT_EQ(reader.GetRun(unknown)->status, RunStatus::kCrashed);
    EXPECT_EQ(RawDb(path).Scalar("SELECT status FROM runs WHERE id = " + std::to_string(cancelled)), "running");
  }
  EXPECT_EQ(db.MarkCrashedRuns(), 2);
  const auto row = db.GetRun(cancelled);
  EXPECT_EQ(row->status, RunStatus::kFailed);
  EXPECT_FALSE(row->status_inferred);
  EXPECT_EQ(row->error_text.value_or(""), "cancelled by SLURM (job 77: JobState=CANCELLED)");
  EXPECT_EQ(db.Stages(cancelled)[0].status, RunStatus::kFailed);
  EXPECT_EQ(db.GetRun(unknown)->status, RunStatus::kCrashed);
  EXPECT_EQ(db.GetRun(running)->status, RunStatus::kRunning);
  // The job of the live local run is never asked about.
  EXPECT_EQ(std::count(asked.begin(), asked.end(), 79), 0);
  RunFilter failed;
  failed.status = RunStatus::kFailed;
  EXPECT_EQ(db.ListRuns(failed).size(), 1u);
}

TEST(DbSlurmTest, RunOfAnotherHostWhoseJobSlurmEndedIsShownFailed) {
  const testing::ScopedDir dir("slurm_remote");
  DatabaseOptions options;
  options.slurm_job_end = [](std::int64_t job) -> std::optional<SlurmJobEnd> {
    if (job == 90) return SlurmJobEnd{RunStatus::kFailed, "time limit reached (job 90: JobState=TIMEOUT)"};
    return std::nullopt;
  };
  Database db(dir / "experiments.db", options);
  RunInfo remote = testing::SampleRunInfo("r", "remote");
  remote.host = "node17.example";
  remote.slurm_job_id = 90;
  const std::int64_t timed_out = db.BeginRun(remote);
  remote.slurm_job_id = 91;
  const std::int64_t still = db.BeginRun(remote);
  EXPECT_EQ(db.MarkCrashedRuns(), 0);  // another host's runs are never persisted
  EXPECT_EQ(db.GetRun(timed_out)->status, RunStatus::kFailed);
  EXPECT_TRUE(db.GetRun(timed_out)->status_inferred);
  EXPECT_EQ(db.GetRun(timed_out)->error_text.value_or(""), "time limit reached (job 90: JobState=TIMEOUT)");
  EXPECT_EQ(db.GetRun(still)->status, RunStatus::kRunning);
}

}  // namespace
}  // namespace asv::db
