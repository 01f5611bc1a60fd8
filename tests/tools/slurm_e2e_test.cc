// asvrun --slurm against a real one-node SLURM cluster on localhost (tests/tools/slurm/
// start_cluster.sh: munged, slurmctld and slurmd of Debian's slurm-wlm, started as root in a
// temporary folder for each test and torn down after it): configs submitted as batch jobs, a
// data-parallel CPU job whose ranks srun starts, a job cancelled with scancel, the dry run's
// scripts, and a config error that submits nothing. On the tiny synthetic corpus. Skipped when not
// root, without slurm-wlm and munge (tools/setup.sh installs them), espeak-ng/ffmpeg or Gloo.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
#include <thread>

#include "asvcpp/db/database.h"
#include "tests/build_paths.h"
#include "tests/tools/test_util.h"
#include "tests/tools/xvector_tiny.h"

namespace asv {
namespace {

namespace fs = std::filesystem;

const std::string kConfigs =
    testing::kTinyFeaturesBlock + R"(
# Tiny network, training only (stage 5)
train < features
paths.system_folder = 'a_system'
recipe.start_stage = 5
recipe.end_stage = 5
)" + testing::kTinyTrainingLines + R"(
# The same in another system folder
train_b < train
paths.system_folder = 'b_system'

# Trains far longer than any test waits
long < train
paths.system_folder = 'long_system'
network.max_epochs = 1000
network.epochs_per_train_call = 100000

# Not a setting
bad < train
network.no_such_setting = 3
)";

// Waits up to `seconds` for `done`, checking twice a second.
bool WaitFor(int seconds, const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return done();
}

// The job ids in asvrun --slurm's output ("submitted R C as SLURM job N (output F)").
std::vector<std::int64_t> SubmittedJobs(const std::string& out) {
  std::vector<std::int64_t> ids;
  const std::regex line("as SLURM job ([0-9]+) ");
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it) {
    ids.push_back(std::stoll((*it)[1].str()));
  }
  return ids;
}

class SlurmE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "a SLURM cluster of its own needs root (slurmd)";
    if (!testing::HaveDemoCorpusTools()) {
      GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
    }
    if (testing::RunCommand({ASV_ASVRUN, "info"}, scratch_.path()).out.find("Gloo: yes") == std::string::npos) {
      GTEST_SKIP() << "this LibTorch has no Gloo: CPU data parallelism is not available";
    }
    const auto started = testing::RunCommand(
        {std::string(ASV_SOURCE_DIR) + "/tests/tools/slurm/start_cluster.sh", scratch_.path().string()},
        scratch_.path());
    if (started.status == 77) GTEST_SKIP() << started.err;
    ASSERT_EQ(started.status, 0) << started.err;
    cluster_ = started.out.substr(0, started.out.find('\n'));
    ::setenv("SLURM_CONF", (fs::path(cluster_) / "slurm.conf").c_str(), 1);
    ASSERT_EQ(testing::PrepareTinyXvectorFeatures(root_, kConfigs), "");
  }

  void TearDown() override {
    if (cluster_.empty()) return;
    testing::RunCommand({std::string(ASV_SOURCE_DIR) + "/tests/tools/slurm/stop_cluster.sh", cluster_},
                        scratch_.path());
    ::unsetenv("SLURM_CONF");
  }

  fs::path out() const { return scratch_.path() / "out"; }
  fs::path db_path() const { return out() / "experiments.db"; }

  // asvrun voxceleb/xvector CONFIGS... with this test's output folder, plus `extra`, in root_.
  testing::CommandResult Asvrun(const std::vector<std::string>& configs, std::vector<std::string> extra = {}) const {
    std::vector<std::string> args{ASV_ASVRUN, "voxceleb/xvector"};
    args.insert(args.end(), configs.begin(), configs.end());
    for (const auto& a : {"--run-configs", "run_configs", "--init-config", "init_config", "--set"}) args.push_back(a);
    args.push_back("paths.output_folder=" + out().string());
    args.push_back("--set");
    args.push_back("paths.feature_and_list_folder=" + (root_ / "out/datasets").string());
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::RunCommand(args, root_);
  }

  // squeue's jobs of this cluster, one "ID STATE" per line.
  std::string Queue() const { return testing::RunCommand({"squeue", "-h", "-o", "%i %T"}, scratch_.path()).out; }

  std::vector<db::RunRow> Runs() const {
    if (!fs::exists(db_path())) return {};
    return db::Database(db_path()).ListRuns();
  }

  // The job's output file, for failure messages.
  std::string JobOutput(const std::string& config, std::int64_t job) const {
    return testing::Slurp(out() / "slurm" / (config + "." + std::to_string(job) + ".out"));
  }

  fs::path root_ = fs::path(ASV_BINARY_DIR) / "test_data/slurm_e2e";
  testing::ScratchDir scratch_{"slurm_e2e"};
  std::string cluster_;
};

TEST_F(SlurmE2eTest, TwoConfigsRunAsTwoJobsAndFinishWithTheirJobIds) {
  const auto r = Asvrun({"train", "train_b"}, {"--slurm"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto jobs = SubmittedJobs(r.out);
  ASSERT_EQ(jobs.size(), 2u) << r.out;
  const bool finished = WaitFor(150, [&] {
    const auto runs = Runs();
    return runs.size() == 2 && runs[0].status != db::RunStatus::kRunning &&
           runs[1].status != db::RunStatus::kRunning;
  });
  ASSERT_TRUE(finished) << JobOutput("train", jobs[0]) << JobOutput("train_b", jobs[1]);
  const auto runs = Runs();
  std::map<std::string, std::int64_t> job_of;
  for (const auto& run : runs) {
    EXPECT_EQ(run.status, db::RunStatus::kFinished) << run.error_text.value_or("");
    ASSERT_TRUE(run.info.slurm_job_id.has_value());
    job_of[run.info.config] = *run.info.slurm_job_id;
    EXPECT_FALSE(run.info.slurm_array_task_id.has_value());
    EXPECT_EQ(run.info.world_size, 1);
  }
  EXPECT_EQ(job_of["train"], jobs[0]);
  EXPECT_EQ(job_of["train_b"], jobs[1]);
  // Both scripts are kept beside the jobs' output, and `asvrun runs` shows the job ids.
  EXPECT_TRUE(fs::exists(out() / "slurm" / ("train." + std::to_string(jobs[0]) + ".sh")));
  EXPECT_NE(JobOutput("train_b", jobs[1]).find("finished"), std::string::npos) << JobOutput("train_b", jobs[1]);
  const auto listed = testing::RunCommand({ASV_ASVRUN, "runs", "--db", db_path().string()}, root_);
  EXPECT_NE(listed.out.find(" job "), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find(" " + std::to_string(jobs[0]) + " "), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("pending"), std::string::npos) << listed.out;
}

TEST_F(SlurmE2eTest, DataParallelCpuJobRunsTwoTasksThroughSrunAndRecordsOneRun) {
  const auto r = Asvrun({"train"}, {"--nproc-per-node", "2", "--slurm"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto jobs = SubmittedJobs(r.out);
  ASSERT_EQ(jobs.size(), 1u) << r.out;
  const bool finished = WaitFor(150, [&] {
    const auto runs = Runs();
    return runs.size() == 1 && runs[0].status != db::RunStatus::kRunning;
  });
  const std::string output = JobOutput("train", jobs[0]);
  ASSERT_TRUE(finished) << output;
  db::Database database(db_path());
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 1u);  // rank 0 alone records the run
  EXPECT_EQ(runs[0].status, db::RunStatus::kFinished) << runs[0].error_text.value_or("") << output;
  EXPECT_EQ(runs[0].info.world_size, 2);
  EXPECT_EQ(runs[0].info.slurm_job_id, std::optional<std::int64_t>(jobs[0]));
  EXPECT_EQ(database.Epochs(runs[0].id).size(), 2u);  // each epoch once
  // Both ranks ran, under srun's protocol.
  EXPECT_NE(output.find("r1]"), std::string::npos) << output;
  EXPECT_NE(output.find("slurm"), std::string::npos) << output;
}

TEST_F(SlurmE2eTest, ScancelFailsTheRunWithSlurmsReason) {
  const auto r = Asvrun({"long"}, {"--slurm"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto jobs = SubmittedJobs(r.out);
  ASSERT_EQ(jobs.size(), 1u) << r.out;
  // Until its run starts, the job is listed as submitted (pending or starting).
  const auto listed = testing::RunCommand({ASV_ASVRUN, "runs", "--db", db_path().string()}, root_);
  EXPECT_EQ(listed.status, 0) << listed.err;
  // Cancelled once it trains (an epoch recorded: deep inside the run).
  const bool training = WaitFor(120, [&] {
    const auto runs = Runs();
    return runs.size() == 1 && !db::Database(db_path()).Epochs(runs[0].id).empty();
  });
  ASSERT_TRUE(training) << JobOutput("long", jobs[0]);
  const auto cancel = testing::RunCommand({"scancel", std::to_string(jobs[0])}, scratch_.path());
  ASSERT_EQ(cancel.status, 0) << cancel.err;
  const bool ended = WaitFor(60, [&] { return Runs()[0].status != db::RunStatus::kRunning; });
  ASSERT_TRUE(ended) << JobOutput("long", jobs[0]);
  const auto run = Runs()[0];
  EXPECT_EQ(run.status, db::RunStatus::kFailed) << JobOutput("long", jobs[0]);
  EXPECT_FALSE(run.status_inferred);
  EXPECT_EQ(run.error_text.value_or("").rfind("cancelled by SLURM (job " + std::to_string(jobs[0]), 0), 0u)
      << run.error_text.value_or("");
  EXPECT_TRUE(WaitFor(30, [&] { return Queue().empty(); })) << Queue();
}

TEST_F(SlurmE2eTest, PendingJobIsListedAsPendingUntilCancelled) {
  const auto r = Asvrun({"train"}, {"--slurm", "--slurm-option=--begin=now+1hour"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto jobs = SubmittedJobs(r.out);
  ASSERT_EQ(jobs.size(), 1u) << r.out;
  const auto listed = testing::RunCommand({ASV_ASVRUN, "runs", "--db", db_path().string()}, root_);
  ASSERT_EQ(listed.status, 0) << listed.err;
  EXPECT_NE(listed.out.find("pending"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find(std::to_string(jobs[0])), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("BeginTime"), std::string::npos) << listed.out;
  ASSERT_EQ(testing::RunCommand({"scancel", std::to_string(jobs[0])}, scratch_.path()).status, 0);
  // Cancelled before it started: listed as failed with SLURM's reason, no run recorded.
  const bool failed = WaitFor(30, [&] {
    const auto again = testing::RunCommand({ASV_ASVRUN, "runs", "--db", db_path().string()}, root_);
    return again.out.find("cancelled by SLURM") != std::string::npos;
  });
  EXPECT_TRUE(failed);
  EXPECT_TRUE(Runs().empty());
}

TEST_F(SlurmE2eTest, DryRunPrintsTheScriptsAndSubmitsNothing) {
  const auto r = Asvrun({"train", "train_b"},
                        {"--slurm", "--dry-run", "--set", "computing.use_gpu=True", "--set",
                         "computing.gpu_ids=(0, 1)", "--slurm-option=--partition=debug", "--db", "exp.db"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string asvrun = (fs::path(ASV_ASVRUN).parent_path() / "asvrun").string();
  const auto expected = [&](const std::string& config) {
    return "#!/bin/bash\n"
           "#SBATCH --job-name=asv-voxceleb-xvector-" + config + "\n"
           "#SBATCH --output=" + (out() / "slurm" / (config + ".%j.out")).string() + "\n"
           "#SBATCH --chdir=" + root_.string() + "\n"
           "#SBATCH --nodes=1\n"
           "#SBATCH --ntasks=2\n"
           "#SBATCH --ntasks-per-node=2\n"
           "#SBATCH --gres=gpu:2\n"
           "#SBATCH --partition=debug\n"
           "srun --kill-on-bad-exit=1 " + asvrun + " voxceleb/xvector " + config + " --init-config " +
           (root_ / "init_config").string() + " --run-configs " + (root_ / "run_configs").string() +
           " --set paths.output_folder=" + out().string() + " --set paths.feature_and_list_folder=" +
           (root_ / "out/datasets").string() + " --set computing.use_gpu=True --set 'computing.gpu_ids=(0, 1)' --db " +
           (root_ / "exp.db").string() + "\n";
  };
  EXPECT_EQ(r.out, "# batch script 1 of 2: voxceleb/xvector train (--dry-run: not submitted)\n" + expected("train") +
                       "\n# batch script 2 of 2: voxceleb/xvector train_b (--dry-run: not submitted)\n" +
                       expected("train_b"));
  // One task on the CPU: asvrun runs in the batch script itself, without srun or GPUs.
  const auto cpu = Asvrun({"train"}, {"--slurm", "--dry-run"});
  ASSERT_EQ(cpu.status, 0) << cpu.err;
  EXPECT_NE(cpu.out.find("#SBATCH --ntasks=1\n"), std::string::npos) << cpu.out;
  EXPECT_EQ(cpu.out.find("srun"), std::string::npos) << cpu.out;
  EXPECT_EQ(cpu.out.find("--gres"), std::string::npos) << cpu.out;
  EXPECT_NE(cpu.out.find("\n" + asvrun + " voxceleb/xvector train "), std::string::npos) << cpu.out;
  // A template: its variables substituted, the shell's own left alone; an unknown one is an error.
  const auto tmpl = scratch_.Write("job.tmpl", "#!/bin/bash\n#SBATCH -n ${ASV_NTASKS} -o ${ASV_OUTPUT}\n"
                                               "echo $HOME ${HOME} ${ASV_GPUS}\n${ASV_LAUNCH}\n");
  const auto templated = Asvrun({"train"}, {"--slurm", "--dry-run", "--nproc-per-node", "2", "--slurm-template",
                                            tmpl.string()});
  ASSERT_EQ(templated.status, 0) << templated.err;
  EXPECT_NE(templated.out.find("#SBATCH -n 2 -o " + (out() / "slurm/train.%j.out").string() +
                               "\necho $HOME ${HOME} 0\nsrun --kill-on-bad-exit=1 " + asvrun),
            std::string::npos)
      << templated.out;
  const auto bad = scratch_.Write("bad.tmpl", "#!/bin/bash\n\n${ASV_GPU}\n");
  const auto refused = Asvrun({"train"}, {"--slurm", "--slurm-template", bad.string()});
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.err.find(bad.string() + ":3: unknown template variable ${ASV_GPU}"), std::string::npos)
      << refused.err;
  EXPECT_EQ(Queue(), "");
  EXPECT_FALSE(fs::exists(out()));
}

TEST_F(SlurmE2eTest, ConfigErrorInOneOfTwoConfigsSubmitsNothing) {
  const auto r = Asvrun({"train", "bad"}, {"--slurm"});
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("no_such_setting"), std::string::npos) << r.err;
  // A global batch that two tasks do not divide, in both configs: both named, nothing submitted.
  const auto odd = Asvrun({"train", "train_b"}, {"--slurm", "--nproc-per-node", "3"});
  EXPECT_EQ(odd.status, 2) << odd.out << odd.err;
  EXPECT_NE(odd.err.find("config train:"), std::string::npos) << odd.err;
  EXPECT_NE(odd.err.find("config train_b:"), std::string::npos) << odd.err;
  EXPECT_EQ(odd.out.find("submitted"), std::string::npos) << odd.out;
  EXPECT_EQ(Queue(), "");
  EXPECT_FALSE(fs::exists(db_path()));
}

}  // namespace
}  // namespace asv
