// Data-parallel voxceleb/xvector through asvrun on the CPU (Gloo), on the tiny synthetic corpus
// (tools/make_demo_corpus.py --small): asvrun's own launcher (--nproc-per-node), two such jobs at
// once, a killed worker, the torchrun and SLURM environment protocols, two asvrun launchers as two
// nodes, and checkpoints moving between world sizes. Skipped without espeak-ng/ffmpeg or without
// Gloo (the pip LibTorch has none).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <thread>

#include "asvcpp/db/database.h"
#include "tests/build_paths.h"
#include "tests/tools/test_util.h"
#include "tests/tools/xvector_tiny.h"

namespace asv {
namespace {

namespace fs = std::filesystem;
using Env = std::map<std::string, std::string>;

// `cwd` must be private to the test: RunCommand keeps its output files there.
bool HaveGloo(const fs::path& cwd) {
  return testing::RunCommand({ASV_ASVRUN, "info"}, cwd).out.find("Gloo: yes") != std::string::npos;
}

// A TCP port that is free right now (for the protocols where the user picks MASTER_PORT).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

const std::string kConfigs =
    testing::kTinyFeaturesBlock + testing::kTinyStages5To9Block + R"(
# Training only
train < tiny
recipe.end_stage = 5

# Trains far longer than any test waits
long < train
paths.system_folder = 'long_system'
network.max_epochs = 1000
network.epochs_per_train_call = 100000
)";

class DistE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::HaveDemoCorpusTools()) {
      GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
    }
    if (!HaveGloo(scratch_.path())) GTEST_SKIP() << "this LibTorch has no Gloo: CPU data parallelism is not available";
    const auto error = testing::PrepareTinyXvectorFeatures(root_, kConfigs);
    ASSERT_EQ(error, "");
  }

  const fs::path& dir() const { return root_; }
  fs::path out() const { return scratch_.path() / "out"; }
  fs::path db_path() const { return out() / "experiments.db"; }

  // asvrun RECIPE CONFIG with this test's output folder, plus `extra` arguments.
  std::vector<std::string> Asvrun(const std::string& config, std::vector<std::string> extra = {}) const {
    std::vector<std::string> args{ASV_ASVRUN,    "voxceleb/xvector",
                                  config,        "--run-configs",
                                  "run_configs", "--init-config",
                                  "init_config", "--set",
                                  "paths.output_folder=" + out().string(),
                                  "--set",       "paths.feature_and_list_folder=" + (dir() / "out/datasets").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // Runs `args` with `env` added; output goes to log files named after `tag`.
  testing::CommandResult Run(const std::vector<std::string>& args, const Env& env = {},
                             const std::string& tag = "cmd") const {
    std::string command = "cd " + testing::ShellQuote(dir().string()) + " && env";
    for (const auto& [k, v] : env) command += " " + testing::ShellQuote(k + "=" + v);
    for (const auto& a : args) command += " " + testing::ShellQuote(a);
    const auto out = scratch_.path() / (tag + ".out");
    const auto err = scratch_.path() / (tag + ".err");
    command += " >" + testing::ShellQuote(out.string()) + " 2>" + testing::ShellQuote(err.string()) + " </dev/null";
    const int raw = std::system(command.c_str());
    testing::CommandResult r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
    r.out = testing::Slurp(out);
    r.err = testing::Slurp(err);
    return r;
  }

  fs::path root_ = fs::path(ASV_BINARY_DIR) / "test_data/dist_e2e";
  testing::ScratchDir scratch_{"dist_e2e"};
};

TEST_F(DistE2eTest, TwoProcessesTrainEvaluateAndScore) {
  const auto r = Run(Asvrun("tiny", {"--nproc-per-node", "2"}));
  ASSERT_EQ(r.status, 0) << r.err;
  db::Database database(db_path());
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, db::RunStatus::kFinished);
  EXPECT_EQ(runs[0].info.world_size, 2);
  EXPECT_TRUE(runs[0].info.gpu_ids.empty());
  // Rank 0 alone records stages, epochs and results: each exactly once.
  std::vector<int> stages;
  for (const auto& stage : database.Stages(runs[0].id)) stages.push_back(stage.stage);
  EXPECT_EQ(stages, (std::vector<int>{5, 7, 9}));
  const auto epochs = database.Epochs(runs[0].id);
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_GT(epochs[1].record.frames_per_second, 0);
  EXPECT_EQ(database.Results({}).size(), 3u);
  const fs::path networks = out() / "tiny_system/networks";
  EXPECT_TRUE(fs::exists(networks / "epoch.2.pt"));
  EXPECT_TRUE(fs::exists(networks / "logs/epoch.1.log"));
  EXPECT_TRUE(fs::exists(networks / "logs/rank1_epoch.1.log"));
  // Both ranks logged; rank 1's lines carry its rank.
  EXPECT_NE(r.err.find("r1]"), std::string::npos) << r.err;
  // Only rank 0 prints progress lines; both ranks record their progress (rank 1: its training).
  EXPECT_NE(r.err.find("] epoch 2/2: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("r1] epoch "), std::string::npos) << r.err;
  const auto progress = database.ProgressRows({runs[0].id});
  ASSERT_EQ(progress.size(), 2u);
  EXPECT_EQ(progress[0].rank, 0);
  EXPECT_EQ(progress[0].record.stage, "9 scoring");
  EXPECT_EQ(progress[1].rank, 1);
  EXPECT_EQ(progress[1].record.stage, "5 train");
  EXPECT_EQ(progress[1].record.what, "epoch 2/2");
  EXPECT_EQ(progress[1].record.unit, "batches");
  EXPECT_EQ(progress[1].record.done, progress[1].record.total.value_or(-1));
}

// Job b trains with network.sync_batch_norm (BatchNorm statistics over both ranks).
TEST_F(DistE2eTest, TwoConcurrentTwoProcessJobsBothFinish) {
  auto a = std::async(std::launch::async, [&] {
    return Run(Asvrun("train", {"--nproc-per-node", "2", "--set", "paths.system_folder=a"}), {}, "a");
  });
  auto b = std::async(std::launch::async, [&] {
    return Run(Asvrun("train", {"--nproc-per-node", "2", "--set", "paths.system_folder=b", "--set",
                                "network.sync_batch_norm=True"}),
               {}, "b");
  });
  const auto ra = a.get();
  const auto rb = b.get();
  EXPECT_EQ(ra.status, 0) << ra.err;
  EXPECT_EQ(rb.status, 0) << rb.err;
  EXPECT_EQ(ra.err.find("SyncBatchNorm on"), std::string::npos) << ra.err;
  EXPECT_NE(rb.err.find("r0] SyncBatchNorm on (network.sync_batch_norm)"), std::string::npos) << rb.err;
  db::Database database(db_path());
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& run : runs) EXPECT_EQ(run.status, db::RunStatus::kFinished);

  // A checkpoint of 2 ranks resumes in 1 process, and one of 1 process in 4 ranks.
  const auto one = Run(Asvrun("train", {"--set", "paths.system_folder=a", "--set", "network.resume_epoch=2", "--set",
                                        "network.max_epochs=3"}),
                       {}, "resume1");
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_TRUE(fs::exists(out() / "a/networks/epoch.3.pt"));
  // (network.minibatch_size, 8, must be a multiple of the world size.)
  const auto four = Run(Asvrun("train", {"--nproc-per-node", "4", "--set", "paths.system_folder=a", "--set",
                                         "network.resume_epoch=3", "--set", "network.max_epochs=4"}),
                        {}, "resume4");
  ASSERT_EQ(four.status, 0) << four.err;
  EXPECT_TRUE(fs::exists(out() / "a/networks/epoch.4.pt"));
}

// Pids of the direct children of `pid` (the launcher's workers).
std::vector<pid_t> Children(pid_t pid) {
  std::vector<pid_t> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  for (pid_t child; in >> child;) out.push_back(child);
  return out;
}

bool Alive(pid_t pid) {
  return ::kill(pid, 0) == 0;
}

TEST_F(DistE2eTest, KillingOneWorkerEndsTheJobAndMarksTheRunFailed) {
  const auto args = Asvrun("long", {"--nproc-per-node", "2"});
  const std::string log = (scratch_.path() / "launcher.log").string();
  const pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    if (::chdir(dir().c_str()) != 0) ::_exit(99);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(98);
  }
  // Wait until training is under way (a checkpoint exists), then kill rank 1.
  const fs::path checkpoint = out() / "long_system/networks/epoch.1.pt";
  for (int i = 0; i < 1500 && !fs::exists(checkpoint); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(fs::exists(checkpoint)) << testing::Slurp(log);
  const auto workers = Children(launcher);
  ASSERT_EQ(workers.size(), 2u) << testing::Slurp(log);
  const auto start = std::chrono::steady_clock::now();
  ::kill(workers[1], SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(launcher, &status, 0), launcher);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 60.0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGKILL) << testing::Slurp(log);
  for (pid_t w : workers) EXPECT_FALSE(Alive(w)) << "worker " << w << " outlived the launcher";
  db::Database database(db_path());
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, db::RunStatus::kFailed);
  ASSERT_TRUE(runs[0].error_text.has_value());
  EXPECT_NE(runs[0].error_text->find("rank 1"), std::string::npos) << *runs[0].error_text;
}

TEST_F(DistE2eTest, TorchrunEnvironmentProtocol) {
  const std::string port = std::to_string(FreePort());
  std::vector<std::future<testing::CommandResult>> ranks;
  for (int r = 0; r < 2; ++r) {
    Env env{{"RANK", std::to_string(r)}, {"WORLD_SIZE", "2"},         {"LOCAL_RANK", std::to_string(r)},
            {"LOCAL_WORLD_SIZE", "2"},   {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}};
    ranks.push_back(std::async(std::launch::async,
                               [this, env, r] { return Run(Asvrun("train"), env, "rank" + std::to_string(r)); }));
  }
  for (auto& f : ranks) {
    const auto result = f.get();
    EXPECT_EQ(result.status, 0) << result.err;
  }
  db::Database database(db_path());
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 1u);  // recorded by rank 0 only
  EXPECT_EQ(runs[0].status, db::RunStatus::kFinished);
  EXPECT_EQ(runs[0].info.world_size, 2);
  EXPECT_EQ(database.Epochs(runs[0].id).size(), 2u);
}

TEST_F(DistE2eTest, SlurmEnvironmentProtocol) {
  const std::string port = std::to_string(FreePort());
  std::vector<std::future<testing::CommandResult>> ranks;
  for (int r = 0; r < 2; ++r) {
    Env env{{"SLURM_PROCID", std::to_string(r)},
            {"SLURM_NTASKS", "2"},
            {"SLURM_LOCALID", std::to_string(r)},
            {"SLURM_NODEID", "0"},
            {"SLURM_NNODES", "1"},
            {"SLURM_TASKS_PER_NODE", "2"},
            {"SLURM_STEP_ID", "0"},
            {"SLURM_JOB_ID", "4242"},
            {"SLURM_JOB_NODELIST", "localhost"},
            {"MASTER_PORT", port}};
    ranks.push_back(std::async(std::launch::async,
                               [this, env, r] { return Run(Asvrun("train"), env, "task" + std::to_string(r)); }));
  }
  for (auto& f : ranks) {
    const auto result = f.get();
    EXPECT_EQ(result.status, 0) << result.err;
  }
  db::Database database(db_path());
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, db::RunStatus::kFinished);
  EXPECT_EQ(runs[0].info.world_size, 2);
}

TEST_F(DistE2eTest, TwoLaunchersAsTwoNodes) {
  const std::string port = std::to_string(FreePort());
  std::vector<std::future<testing::CommandResult>> nodes;
  for (int n = 0; n < 2; ++n) {
    nodes.push_back(std::async(std::launch::async, [this, port, n] {
      return Run(Asvrun("train", {"--nnodes", "2", "--node-rank", std::to_string(n), "--master-addr", "127.0.0.1",
                                  "--master-port", port, "--nproc-per-node", "1"}),
                 {}, "node" + std::to_string(n));
    }));
  }
  for (auto& f : nodes) {
    const auto result = f.get();
    EXPECT_EQ(result.status, 0) << result.err;
  }
  db::Database database(db_path());
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 1u);  // node 0's launcher records the run
  EXPECT_EQ(runs[0].status, db::RunStatus::kFinished);
  EXPECT_EQ(runs[0].info.world_size, 2);
  EXPECT_EQ(database.Epochs(runs[0].id).size(), 2u);
}

}  // namespace
}  // namespace asv
