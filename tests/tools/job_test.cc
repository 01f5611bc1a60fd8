// asvrun's process plan (tools/asvrun/job.h): which processes a config runs in, from the
// settings, the command line and what the machine offers (a RuntimeInfo made up for each case,
// so GPU cases run on CPU machines too).
#include "tools/asvrun/job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "asvcpp/base/error.h"
#include "asvcpp/db/database.h"
#include "asvcpp/recipe/recipe.h"
#include "recipes/catalog.h"
#include "recipes/voxceleb/margin/margin_recipe.h"
#include "recipes/voxceleb/xvector/xvector_recipe.h"
#include "tests/tools/test_util.h"

namespace asv::tools {
namespace {

using ::testing::HasSubstr;

distributed::RuntimeInfo Machine(int gpus, bool gloo = true) {
  distributed::RuntimeInfo info;
  info.torch_version = "2.11.0";
  info.cuda_build = gpus > 0;
  info.cuda_available = gpus > 0;
  info.gloo_build = gloo;
  info.nccl_build = gpus > 0;
  for (int i = 0; i < gpus; ++i) info.gpus.push_back(distributed::GpuInfo{i, "H100", 80LL << 30, 9, 0});
  return info;
}

class JobTest : public ::testing::Test {
 protected:
  std::unique_ptr<recipe::RecipeSettings> settings_ = recipes::FindRecipe("voxceleb/xvector").NewSettings();
  settings::ComputingSettings& computing() { return settings_->common().computing; }
};

TEST_F(JobTest, OneCpuProcessNeedsNoLauncher) {
  const auto plan = PlanProcesses(*settings_, {}, Machine(0), std::nullopt);
  EXPECT_FALSE(plan.cuda);
  EXPECT_EQ(plan.world_size, 1);
  EXPECT_FALSE(plan.needs_launcher());
  EXPECT_EQ(plan.Describe(), "1 process on the CPU");
}

TEST_F(JobTest, NprocPerNodeOnTheCpu) {
  DistOptions options;
  options.nproc_per_node = 3;
  settings_->common().network.minibatch_size = 60;  // a multiple of 3 and 6
  const auto plan = PlanProcesses(*settings_, options, Machine(0), std::nullopt);
  EXPECT_EQ(plan.world_size, 3);
  EXPECT_TRUE(plan.needs_launcher());
  EXPECT_EQ(plan.Describe(), "3 processes on the CPU (Gloo)");
  options.nnodes = 2;
  options.node_rank = 1;
  options.master_addr = "node0";
  EXPECT_EQ(PlanProcesses(*settings_, options, Machine(0), std::nullopt).world_size, 6);
}

TEST_F(JobTest, MinibatchMustBeAMultipleOfTheWorldSize) {
  DistOptions options;
  options.nproc_per_node = 3;
  settings_->common().network.minibatch_size = 64;
  try {
    PlanProcesses(*settings_, options, Machine(0), std::nullopt);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "network.minibatch_size (64) is not a multiple of the world size (3): each rank would train on 21, "
              "63 in all; nearest valid values: 63 or 66");
  }
  settings_->common().network.minibatch_size = 63;
  EXPECT_EQ(PlanProcesses(*settings_, options, Machine(0), std::nullopt).world_size, 3);
  settings_->common().network.minibatch_size = 64;
  options.nproc_per_node = 1;  // one process: any size of at least 2
  EXPECT_EQ(PlanProcesses(*settings_, options, Machine(0), std::nullopt).world_size, 1);
}

TEST_F(JobTest, BatchNormNeedsTwoExamplesPerRank) {
  settings_->common().network.minibatch_size = 1;
  try {
    PlanProcesses(*settings_, {}, Machine(0), std::nullopt);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "network.minibatch_size (1) gives the one process 1 example: StandardNet normalises its embedding "
              "layer with BatchNorm, which needs at least 2 per rank in training; nearest valid value: 2");
  }
  // Nothing trains: no batch to check.
  auto& recipe = dynamic_cast<recipes::voxceleb_xvector::XvectorSettings&>(*settings_).recipe();
  recipe.start_stage = 7;
  recipe.end_stage = 9;
  EXPECT_EQ(PlanProcesses(*settings_, {}, Machine(0), std::nullopt).world_size, 1);
}

TEST_F(JobTest, EveryGlobalBatchOfTheMarginRecipeIsChecked) {
  auto margin_settings = recipes::FindRecipe("voxceleb/margin").NewSettings();
  auto& margin = dynamic_cast<recipes::voxceleb_margin::MarginSettings&>(*margin_settings);
  margin.recipe().model = "ECAPA_TDNN_c512";
  margin.common().network.minibatch_size = 66;
  margin.recipe().lm_minibatch_size = 1;
  try {
    recipe::CheckGlobalBatches(margin, 2);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    // Both problems at once, each with the nearest valid values.
    EXPECT_EQ(std::string(e.what()),
              "recipe.lm_minibatch_size (1) is not a multiple of the world size (2): each rank would train on 0, 0 "
              "in all; nearest valid value: 4");
  }
  margin.recipe().lm_minibatch_size = 2;
  try {
    recipe::CheckGlobalBatches(margin, 2);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "recipe.lm_minibatch_size (2) gives each rank 1 example: ECAPA_TDNN_c512 normalises its pooled "
              "statistics with BatchNorm, which needs at least 2 per rank in training; nearest valid value: 4");
  }
  margin.common().network.minibatch_size = 67;
  try {
    recipe::CheckGlobalBatches(margin, 2);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("network.minibatch_size (67) is not a multiple of the world size (2): each rank "
                                    "would train on 33, 66 in all; nearest valid values: 66 or 68\nrecipe."));
  }
  // ResNet34 has no BatchNorm after pooling: one segment per rank is allowed.
  margin.recipe().model = "ResNet34";
  margin.common().network.minibatch_size = 2;
  EXPECT_NO_THROW(recipe::CheckGlobalBatches(margin, 2));
  // Without fine-tuning, recipe.lm_minibatch_size is not used.
  margin.recipe().lm_minibatch_size = 3;
  EXPECT_THROW(recipe::CheckGlobalBatches(margin, 2), ConfigError);
  margin.recipe().lm_epochs = 0;
  margin.recipe().lm_warm_up_epochs = 0;
  EXPECT_NO_THROW(recipe::CheckGlobalBatches(margin, 2));
}

TEST_F(JobTest, CpuProcessesNeedGloo) {
  DistOptions options;
  options.nproc_per_node = 2;
  try {
    PlanProcesses(*settings_, options, Machine(0, /*gloo=*/false), std::nullopt);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("need Gloo"));
  }
}

// computing.dist_backend: NCCL needs GPUs; Gloo on GPUs is allowed; the backend must be built in.
TEST_F(JobTest, DistBackendIsChosenAndChecked) {
  DistOptions options;
  options.nproc_per_node = 2;
  computing().dist_backend = distributed::DistBackend::kNccl;
  const auto error = [&](const distributed::RuntimeInfo& machine) {
    try {
      PlanProcesses(*settings_, options, machine, std::nullopt);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error(Machine(0)),
            "computing.dist_backend = 'nccl' needs GPUs, but this config runs on the CPU (a LibTorch without CUDA); "
            "use 'gloo' or 'auto'");
  computing().use_gpu = false;
  EXPECT_THAT(error(Machine(2)), HasSubstr("runs on the CPU (computing.use_gpu = False)"));
  computing().use_gpu = true;
  computing().gpu_ids = {0, 1};
  options.nproc_per_node = 0;
  const auto nccl = PlanProcesses(*settings_, options, Machine(2), std::nullopt);
  EXPECT_TRUE(nccl.nccl);
  EXPECT_EQ(nccl.Describe(), "2 processes on GPUs 0, 1 (NCCL)");

  computing().dist_backend = distributed::DistBackend::kGloo;
  const auto gloo = PlanProcesses(*settings_, options, Machine(2), std::nullopt);
  EXPECT_FALSE(gloo.nccl);
  EXPECT_EQ(gloo.Describe(), "2 processes on GPUs 0, 1 (Gloo)");
  EXPECT_EQ(error(Machine(2, /*gloo=*/false)),
            "2 GPU processes need Gloo, which this LibTorch (2.11.0) lacks; use computing.dist_backend = 'nccl' or "
            "'auto'");

  computing().dist_backend = distributed::DistBackend::kAuto;
  auto no_nccl = Machine(2);
  no_nccl.nccl_build = false;
  EXPECT_THAT(error(no_nccl), HasSubstr("2 GPU processes need NCCL"));
  EXPECT_TRUE(PlanProcesses(*settings_, options, Machine(2), std::nullopt).nccl);
}

TEST_F(JobTest, OneProcessPerGpuPinnedByPhysicalId) {
  computing().gpu_ids = {2, 0};
  const auto plan = PlanProcesses(*settings_, {}, Machine(4), std::nullopt);
  EXPECT_TRUE(plan.cuda);
  EXPECT_EQ(plan.world_size, 2);
  EXPECT_EQ(plan.gpu_ids, (std::vector<int>{2, 0}));
  EXPECT_EQ(plan.visible, (std::vector<std::string>{"2", "0"}));
  EXPECT_EQ(plan.Describe(), "2 processes on GPUs 2, 0 (NCCL)");
  // One GPU still gets its own pinned process.
  computing().gpu_ids = {1};
  const auto single = PlanProcesses(*settings_, {}, Machine(2), std::nullopt);
  EXPECT_TRUE(single.needs_launcher());
  EXPECT_EQ(single.visible, (std::vector<std::string>{"1"}));
}

TEST_F(JobTest, GpuIdsMustExistAndBeVisible) {
  computing().gpu_ids = {3};
  EXPECT_THROW(PlanProcesses(*settings_, {}, Machine(2), std::nullopt), ConfigError);
  computing().gpu_ids = {3};
  EXPECT_THROW(PlanProcesses(*settings_, {}, Machine(2), std::string("0,1")), ConfigError);
  computing().gpu_ids = {1};
  EXPECT_EQ(PlanProcesses(*settings_, {}, Machine(2), std::string("0,1")).visible,
            (std::vector<std::string>{"1"}));
}

TEST_F(JobTest, UseGpuFalseOrNoCudaRunsOnTheCpu) {
  computing().gpu_ids = {0, 1};
  computing().use_gpu = false;
  EXPECT_FALSE(PlanProcesses(*settings_, {}, Machine(2), std::nullopt).cuda);
  computing().use_gpu = true;
  const auto plan = PlanProcesses(*settings_, {}, Machine(0), std::nullopt);
  EXPECT_FALSE(plan.cuda);
  EXPECT_EQ(plan.world_size, 1);
}

TEST_F(JobTest, NprocPerNodeMustMatchTheGpus) {
  computing().gpu_ids = {0, 1};
  DistOptions options;
  options.nproc_per_node = 4;
  try {
    PlanProcesses(*settings_, options, Machine(2), std::nullopt);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--nproc-per-node 4 contradicts computing.gpu_ids = (0, 1)"));
  }
}

TEST_F(JobTest, NodeOptionsAreChecked) {
  DistOptions options;
  options.nnodes = 2;
  EXPECT_THROW(PlanProcesses(*settings_, options, Machine(0), std::nullopt), ConfigError);  // no --master-addr
  options.master_addr = "node0";
  options.node_rank = 2;
  EXPECT_THROW(PlanProcesses(*settings_, options, Machine(0), std::nullopt), ConfigError);
}

TEST_F(JobTest, SettingAllowsTheDatabaseOnANetworkFileSystemWhileTheConfigRuns) {
  ::unsetenv("ASV_DB_ALLOW_NETWORK_FS");
  testing::ScratchDir dir("job_network_fs");
  const auto path = dir.path() / "experiments.db";
  const auto open_on_nfs = [&path] {
    db::DatabaseOptions options;  // defaults, as every open of a run's database has them
    options.file_system_probe = [](const std::filesystem::path&) { return std::optional<std::string>("nfs"); };
    db::Database database(path, options);
  };
  EXPECT_THROW(open_on_nfs(), DbError);
  {
    const NetworkFileSystemPermission unchanged(*settings_);  // the setting is off by default
    EXPECT_EQ(std::getenv("ASV_DB_ALLOW_NETWORK_FS"), nullptr);
    EXPECT_THROW(open_on_nfs(), DbError);
  }
  settings_->common().paths.allow_experiment_db_on_network_fs = true;
  {
    const NetworkFileSystemPermission allowed(*settings_);
    EXPECT_STREQ(std::getenv("ASV_DB_ALLOW_NETWORK_FS"), "1");  // what the ranks it starts inherit
    EXPECT_NO_THROW(open_on_nfs());
  }
  EXPECT_EQ(std::getenv("ASV_DB_ALLOW_NETWORK_FS"), nullptr);  // restored
  EXPECT_THROW(open_on_nfs(), DbError);
  ::setenv("ASV_DB_ALLOW_NETWORK_FS", "0", 1);
  {
    const NetworkFileSystemPermission allowed(*settings_);
    EXPECT_STREQ(std::getenv("ASV_DB_ALLOW_NETWORK_FS"), "1");
  }
  EXPECT_STREQ(std::getenv("ASV_DB_ALLOW_NETWORK_FS"), "0");  // the user's own value comes back
  ::unsetenv("ASV_DB_ALLOW_NETWORK_FS");
}

}  // namespace
}  // namespace asv::tools
