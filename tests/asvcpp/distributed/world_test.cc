#include "asvcpp/distributed/world.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "asvcpp/base/error.h"

namespace asv::distributed {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The ConfigError message of WorldFromEnvironment(env), or "" when it does not throw.
std::string WorldErrorOf(const Environment& env) {
  try {
    WorldFromEnvironment(env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string HostListError(std::string_view list) {
  try {
    ExpandHostList(list);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string TasksError(std::string_view spec) {
  try {
    ExpandTasksPerNode(spec);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// Two nodes with four GPUs each, as torchrun --nnodes 2 --nproc-per-node 4 exports it on node 1.
Environment TorchrunNode1Rank5() {
  return {{"RANK", "5"},          {"WORLD_SIZE", "8"},      {"LOCAL_RANK", "1"},       {"LOCAL_WORLD_SIZE", "4"},
          {"GROUP_RANK", "1"},    {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}, {"PATH", "/usr/bin"}};
}

// srun -N2 --ntasks-per-node=2 in job 1234, step 3: the task with global rank 3 (node 1, local 1).
Environment SlurmStepRank3() {
  return {{"SLURM_PROCID", "3"},
          {"SLURM_NTASKS", "4"},
          {"SLURM_LOCALID", "1"},
          {"SLURM_NODEID", "1"},
          {"SLURM_NNODES", "2"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
          {"SLURM_STEP_NODELIST", "gpu[07-08]"},
          {"SLURM_JOB_ID", "1234"},
          {"SLURM_STEP_ID", "3"}};
}

TEST(WorldTest, ProtocolNames) {
  EXPECT_STREQ(ToString(LaunchProtocol::kNone), "none");
  EXPECT_STREQ(ToString(LaunchProtocol::kAsvrun), "asvrun");
  EXPECT_STREQ(ToString(LaunchProtocol::kTorchrun), "torchrun");
  EXPECT_STREQ(ToString(LaunchProtocol::kSlurm), "slurm");
}

TEST(WorldTest, NoProtocolIsASingleProcess) {
  const WorldInfo info = WorldFromEnvironment({{"PATH", "/usr/bin"}, {"LOCAL_RANK", "3"}});
  EXPECT_EQ(info.protocol, LaunchProtocol::kNone);
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.world_size, 1);
  EXPECT_FALSE(info.distributed());
  EXPECT_EQ(info.Describe(), "single process (no launch protocol)");
  // Only one of the pair is not a torchrun environment.
  EXPECT_EQ(WorldFromEnvironment({{"RANK", "1"}}).protocol, LaunchProtocol::kNone);
}

TEST(WorldTest, Torchrun) {
  const WorldInfo info = WorldFromEnvironment(TorchrunNode1Rank5());
  EXPECT_EQ(info.protocol, LaunchProtocol::kTorchrun);
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_world_size, 4);
  EXPECT_EQ(info.node_rank, 1);
  EXPECT_EQ(info.nnodes, 2);
  EXPECT_EQ(info.master_addr, "10.0.0.1");
  EXPECT_EQ(info.master_port, 29500);
  EXPECT_FALSE(info.store_hosted_externally);
  EXPECT_TRUE(info.distributed());
  EXPECT_EQ(info.Describe(), "rank 5 of 8 (local 1 of 4, node 1 of 2), torchrun, store 10.0.0.1:29500");
}

TEST(WorldTest, TorchrunAgentStore) {
  Environment env = TorchrunNode1Rank5();
  env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  const WorldInfo info = WorldFromEnvironment(env);
  EXPECT_TRUE(info.store_hosted_externally);
  EXPECT_THAT(info.Describe(), HasSubstr("torchrun's agent"));
  env["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  EXPECT_FALSE(WorldFromEnvironment(env).store_hosted_externally);
}

TEST(WorldTest, TorchrunDefaults) {
  // A hand-made single-node environment: local values default to the global ones.
  const WorldInfo info = WorldFromEnvironment({{"RANK", "2"}, {"WORLD_SIZE", "3"}, {"MASTER_PORT", "1234"}});
  EXPECT_EQ(info.local_rank, 2);
  EXPECT_EQ(info.local_world_size, 3);
  EXPECT_EQ(info.node_rank, 0);
  EXPECT_EQ(info.nnodes, 1);
  EXPECT_EQ(info.master_addr, "127.0.0.1");
  EXPECT_EQ(info.master_port, 1234);

  // Uneven last node: 5 processes at 2 per node make 3 nodes; the node rank follows from RANK.
  const WorldInfo uneven = WorldFromEnvironment({{"RANK", "4"},
                                                 {"WORLD_SIZE", "5"},
                                                 {"LOCAL_RANK", "0"},
                                                 {"LOCAL_WORLD_SIZE", "2"},
                                                 {"MASTER_ADDR", "h0"},
                                                 {"MASTER_PORT", "1234"}});
  EXPECT_EQ(uneven.nnodes, 3);
  EXPECT_EQ(uneven.node_rank, 2);

  // A world of one needs no port.
  const WorldInfo alone = WorldFromEnvironment({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  EXPECT_EQ(alone.protocol, LaunchProtocol::kTorchrun);
  EXPECT_EQ(alone.master_port, 0);
  EXPECT_FALSE(alone.distributed());
}

TEST(WorldTest, TorchrunErrorsNameVariableAndValue) {
  EXPECT_THAT(WorldErrorOf({{"RANK", "3"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}),
              HasSubstr("RANK=3 but WORLD_SIZE=2: RANK must be smaller"));
  EXPECT_THAT(WorldErrorOf({{"RANK", "x1"}, {"WORLD_SIZE", "2"}}), HasSubstr("RANK=x1 is not an integer"));
  EXPECT_THAT(WorldErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "2.0"}}), HasSubstr("WORLD_SIZE=2.0 is not an integer"));
  EXPECT_THAT(WorldErrorOf({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}), HasSubstr("RANK=-1 must be at least 0"));
  EXPECT_THAT(WorldErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "0"}}), HasSubstr("WORLD_SIZE=0 must be at least 1"));
  EXPECT_THAT(WorldErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "99999999999"}}), HasSubstr("WORLD_SIZE=99999999999"));
  EXPECT_THAT(WorldErrorOf({{"RANK", "1"}, {"WORLD_SIZE", "2"}}), HasSubstr("MASTER_PORT is not set but WORLD_SIZE=2"));
  EXPECT_THAT(WorldErrorOf({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}),
              HasSubstr("MASTER_PORT=70000 must be at most 65535"));
  EXPECT_THAT(WorldErrorOf({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "http"}}),
              HasSubstr("MASTER_PORT=http is not an integer"));

  Environment env = TorchrunNode1Rank5();
  env.erase("MASTER_ADDR");
  EXPECT_THAT(WorldErrorOf(env), HasSubstr("MASTER_ADDR is not set"));
  EXPECT_THAT(WorldErrorOf(env), HasSubstr("2 nodes"));

  env = TorchrunNode1Rank5();
  env["LOCAL_RANK"] = "4";
  EXPECT_THAT(WorldErrorOf(env), HasSubstr("LOCAL_RANK=4 but LOCAL_WORLD_SIZE=4: LOCAL_RANK must be smaller"));
  env = TorchrunNode1Rank5();
  env["GROUP_RANK"] = "2";
  EXPECT_THAT(WorldErrorOf(env), HasSubstr("GROUP_RANK=2 but WORLD_SIZE=8"));
  env = TorchrunNode1Rank5();
  env["LOCAL_WORLD_SIZE"] = "9";
  EXPECT_THAT(WorldErrorOf(env), HasSubstr("LOCAL_WORLD_SIZE=9 but WORLD_SIZE=8"));
  // A defaulted value is named with where it came from.
  EXPECT_THAT(
      WorldErrorOf(
          {{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}, {"MASTER_ADDR", "h"}}),
      HasSubstr("LOCAL_RANK (unset, so RANK=3) but LOCAL_WORLD_SIZE=2"));
  // The protocol is named so the user knows which launcher's variables were read.
  EXPECT_THAT(WorldErrorOf({{"RANK", "3"}, {"WORLD_SIZE", "2"}}), HasSubstr("torchrun environment"));
}

TEST(WorldTest, Asvrun) {
  Environment env = TorchrunNode1Rank5();
  env["ASV_LAUNCHER"] = "1";
  const WorldInfo info = WorldFromEnvironment(env);
  EXPECT_EQ(info.protocol, LaunchProtocol::kAsvrun);
  EXPECT_EQ(info.rank, 5);
  EXPECT_TRUE(info.store_hosted_externally);
  EXPECT_THAT(info.Describe(), HasSubstr("asvrun, store 10.0.0.1:29500 (hosted by the launcher)"));

  // ASV_LAUNCHER=1 makes the variables required rather than optional.
  EXPECT_THAT(WorldErrorOf({{"ASV_LAUNCHER", "1"}, {"WORLD_SIZE", "2"}}),
              HasSubstr("asvrun environment: RANK is not set"));
  EXPECT_THAT(WorldErrorOf({{"ASV_LAUNCHER", "1"}, {"RANK", "0"}, {"WORLD_SIZE", "2"}}),
              HasSubstr("MASTER_PORT is not set"));
  // Any other value does not select asvrun.
  env["ASV_LAUNCHER"] = "0";
  EXPECT_EQ(WorldFromEnvironment(env).protocol, LaunchProtocol::kTorchrun);
}

// What asvrun's launcher writes is what a worker reads back.
TEST(WorldTest, AsvrunWorkerEnvironmentReadsBack) {
  WorldInfo world;
  world.rank = 5;
  world.world_size = 8;
  world.local_rank = 1;
  world.local_world_size = 4;
  world.node_rank = 1;
  world.nnodes = 2;
  world.master_addr = "10.0.0.1";
  world.master_port = 29511;
  const Environment env = AsvrunWorkerEnvironment(world);
  EXPECT_EQ(env.at("ASV_LAUNCHER"), "1");
  const WorldInfo back = WorldFromEnvironment(env);
  EXPECT_EQ(back.protocol, LaunchProtocol::kAsvrun);
  EXPECT_EQ(back.rank, 5);
  EXPECT_EQ(back.world_size, 8);
  EXPECT_EQ(back.local_rank, 1);
  EXPECT_EQ(back.local_world_size, 4);
  EXPECT_EQ(back.node_rank, 1);
  EXPECT_EQ(back.nnodes, 2);
  EXPECT_EQ(back.master_addr, "10.0.0.1");
  EXPECT_EQ(back.master_port, 29511);
  EXPECT_TRUE(back.store_hosted_externally);
  // An inherited forced protocol would change the reading: launchers remove it.
  EXPECT_NE(std::find(kWorkerUnsetEnvironment.begin(), kWorkerUnsetEnvironment.end(), "ASV_DIST_PROTOCOL"),
            kWorkerUnsetEnvironment.end());
}

TEST(WorldTest, Slurm) {
  const WorldInfo info = WorldFromEnvironment(SlurmStepRank3());
  EXPECT_EQ(info.protocol, LaunchProtocol::kSlurm);
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.world_size, 4);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_world_size, 2);
  EXPECT_EQ(info.node_rank, 1);
  EXPECT_EQ(info.nnodes, 2);
  EXPECT_EQ(info.master_addr, "gpu07");
  // 15000 + (1234 * 16 + 3) % 40000
  EXPECT_EQ(info.master_port, 15000 + 19747);
  EXPECT_FALSE(info.store_hosted_externally);
  EXPECT_EQ(info.Describe(), "rank 3 of 4 (local 1 of 2, node 1 of 2), slurm, store gpu07:34747");
}

TEST(WorldTest, SlurmPortDiffersBetweenJobsAndSteps) {
  Environment env = SlurmStepRank3();
  const int port = WorldFromEnvironment(env).master_port;
  env["SLURM_STEP_ID"] = "4";
  EXPECT_NE(WorldFromEnvironment(env).master_port, port);
  env["SLURM_JOB_ID"] = "1235";
  EXPECT_NE(WorldFromEnvironment(env).master_port, port);
  env["SLURM_JOB_ID"] = "4294967295";  // large ids stay inside [15000, 55000)
  const int large = WorldFromEnvironment(env).master_port;
  EXPECT_GE(large, 15000);
  EXPECT_LT(large, 55000);
}

TEST(WorldTest, SlurmOverridesAndFallbacks) {
  Environment env = SlurmStepRank3();
  env["MASTER_ADDR"] = "login1";
  env["MASTER_PORT"] = "29400";
  WorldInfo info = WorldFromEnvironment(env);
  EXPECT_EQ(info.master_addr, "login1");
  EXPECT_EQ(info.master_port, 29400);

  // Job-level variables when the step-level ones are missing.
  env = SlurmStepRank3();
  env.erase("SLURM_STEP_TASKS_PER_NODE");
  env.erase("SLURM_STEP_NODELIST");
  env.erase("SLURM_NNODES");
  env["SLURM_TASKS_PER_NODE"] = "3,2";
  env["SLURM_JOB_NODELIST"] = "rack[1-2]-n[1-2]";
  env["SLURM_JOB_NUM_NODES"] = "2";
  env["SLURM_NTASKS"] = "5";
  info = WorldFromEnvironment(env);
  EXPECT_EQ(info.local_world_size, 2);  // node 1 of "3,2"
  EXPECT_EQ(info.master_addr, "rack1-n1");
  EXPECT_EQ(info.world_size, 5);
}

TEST(WorldTest, SlurmNeedsAJobStep) {
  // In a batch script (no SLURM_STEP_ID) the process is alone.
  Environment env = SlurmStepRank3();
  env.erase("SLURM_STEP_ID");
  EXPECT_EQ(WorldFromEnvironment(env).protocol, LaunchProtocol::kNone);
}

TEST(WorldTest, SlurmErrors) {
  Environment env = SlurmStepRank3();
  env["SLURM_PROCID"] = "4";
  EXPECT_THAT(WorldErrorOf(env), HasSubstr("SLURM_PROCID=4 but SLURM_NTASKS=4: SLURM_PROCID must be smaller"));
  env = SlurmStepRank3();
  env["SLURM_LOCALID"] = "2";
  EXPECT_THAT(WorldErrorOf(env), HasSubstr("SLURM_LOCALID=2 but SLURM_STEP_TASKS_PER_NODE=2(x2)"));
  env = SlurmStepRank3();
  env["SLURM_STEP_TASKS_PER_NODE"] = "2(x";
  EXPECT_THAT(WorldErrorOf(env), HasSubstr("SLURM_STEP_TASKS_PER_NODE=2(x"));
  env = SlurmStepRank3();
  env["SLURM_STEP_NODELIST"] = "gpu[07-";
  EXPECT_THAT(WorldErrorOf(env), HasSubstr("SLURM_STEP_NODELIST=gpu[07-"));
  env = SlurmStepRank3();
  env["SLURM_NODEID"] = "2";
  EXPECT_THAT(WorldErrorOf(env), HasSubstr("SLURM_NODEID=2 but SLURM_NNODES=2"));
  env = SlurmStepRank3();
  env.erase("SLURM_JOB_ID");
  EXPECT_THAT(WorldErrorOf(env), HasSubstr("neither MASTER_PORT nor SLURM_JOB_ID is set"));
  env = SlurmStepRank3();
  env["SLURM_JOB_ID"] = "12a";
  EXPECT_THAT(WorldErrorOf(env), HasSubstr("SLURM_JOB_ID=12a is not an integer"));
  env = SlurmStepRank3();
  env.erase("SLURM_LOCALID");
  EXPECT_THAT(WorldErrorOf(env), HasSubstr("slurm environment: SLURM_LOCALID is not set"));
}

TEST(WorldTest, ForcedProtocol) {
  Environment env = SlurmStepRank3();
  env["RANK"] = "0";
  env["WORLD_SIZE"] = "1";
  EXPECT_EQ(WorldFromEnvironment(env).protocol, LaunchProtocol::kTorchrun);  // torchrun comes first
  env["ASV_DIST_PROTOCOL"] = "slurm";
  EXPECT_EQ(WorldFromEnvironment(env).protocol, LaunchProtocol::kSlurm);
  env["ASV_DIST_PROTOCOL"] = "none";
  EXPECT_EQ(WorldFromEnvironment(env).protocol, LaunchProtocol::kNone);
  env["ASV_DIST_PROTOCOL"] = "mpi";
  EXPECT_THAT(WorldErrorOf(env), HasSubstr("ASV_DIST_PROTOCOL=mpi is not one of none, asvrun, torchrun, slurm"));
  EXPECT_THAT(WorldErrorOf({{"ASV_DIST_PROTOCOL", "torchrun"}}), HasSubstr("RANK is not set"));
}

TEST(WorldTest, CurrentEnvironmentReadsTheProcessEnvironment) {
  ASSERT_EQ(setenv("ASV_WORLD_TEST_VALUE", "a=b c", 1), 0);
  const Environment env = CurrentEnvironment();
  unsetenv("ASV_WORLD_TEST_VALUE");
  ASSERT_EQ(env.count("ASV_WORLD_TEST_VALUE"), 1u);
  EXPECT_EQ(env.at("ASV_WORLD_TEST_VALUE"), "a=b c");  // split at the first '=' only
}

TEST(WorldTest, ExpandHostList) {
  EXPECT_THAT(ExpandHostList("a,b"), ElementsAre("a", "b"));
  EXPECT_THAT(ExpandHostList("node[01-03,07],gpu5"), ElementsAre("node01", "node02", "node03", "node07", "gpu5"));
  EXPECT_THAT(ExpandHostList("node[8-10]"), ElementsAre("node8", "node9", "node10"));
  EXPECT_THAT(ExpandHostList("node[098-101]"), ElementsAre("node098", "node099", "node100", "node101"));
  EXPECT_THAT(ExpandHostList("rack[1-2]-n[1-2]"), ElementsAre("rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"));
  EXPECT_THAT(ExpandHostList("x[1]-ib,y"), ElementsAre("x1-ib", "y"));
  EXPECT_THAT(ExpandHostList("single"), ElementsAre("single"));
}

TEST(WorldTest, MalformedHostLists) {
  EXPECT_THAT(HostListError("node[1-"), HasSubstr("host list 'node[1-': '[' in 'node[1-' is not closed"));
  EXPECT_THAT(HostListError("node[3-1]"), HasSubstr("range 3-1 in [3-1] runs backwards"));
  EXPECT_THAT(HostListError("node[a-b]"), HasSubstr("'a-b' in [a-b] is not a number"));
  EXPECT_THAT(HostListError("node[]"), HasSubstr("is not a number"));
  EXPECT_THAT(HostListError("node[1,]"), HasSubstr("is not a number"));
  EXPECT_THAT(HostListError("node[1-2-3]"), HasSubstr("'1-2-3'"));
  EXPECT_THAT(HostListError("node1]"), HasSubstr("']' without '['"));
  EXPECT_THAT(HostListError("a,,b"), HasSubstr("empty host name"));
  EXPECT_THAT(HostListError(""), HasSubstr("empty host list"));
  EXPECT_THAT(HostListError("n[0-99999999999]"), HasSubstr("more than"));
  EXPECT_THAT(HostListError("n[0-9999]m[0-9999]"), HasSubstr("more than"));
}

TEST(WorldTest, ExpandTasksPerNode) {
  EXPECT_THAT(ExpandTasksPerNode("2(x3),1"), ElementsAre(2, 2, 2, 1));
  EXPECT_THAT(ExpandTasksPerNode("4"), ElementsAre(4));
  EXPECT_THAT(ExpandTasksPerNode("1,3(x2)"), ElementsAre(1, 3, 3));
  EXPECT_THAT(TasksError("2(x"), HasSubstr("tasks-per-node list '2(x': '2(x' is neither N nor N(xK)"));
  EXPECT_THAT(TasksError("2(3)"), HasSubstr("neither N nor N(xK)"));
  EXPECT_THAT(TasksError("2(x3"), HasSubstr("neither N nor N(xK)"));
  EXPECT_THAT(TasksError("a"), HasSubstr("neither N nor N(xK)"));
  EXPECT_THAT(TasksError("2,,1"), HasSubstr("neither N nor N(xK)"));
  EXPECT_THAT(TasksError(""), HasSubstr("neither N nor N(xK)"));
  EXPECT_THAT(TasksError("0"), HasSubstr("at least one task"));
  EXPECT_THAT(TasksError("2(x0)"), HasSubstr("at least one task"));
}

}  // namespace
}  // namespace asv::distributed
