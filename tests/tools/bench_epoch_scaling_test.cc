// The epoch-scaling benchmark (tools/bench/epoch_scaling.py) in quick mode on the tiny corpus:
// both recipes' training stage with 1 and 2 processes over Gloo, and the figures it derives from
// the epochs the runs recorded. Timings are not checked, only their consistency.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/build_paths.h"
#include "tests/tools/test_util.h"

namespace asv {
namespace {

namespace fs = std::filesystem;

TEST(BenchEpochScaling, QuickModeTimesBothRecipesWithOneAndTwoProcesses) {
  if (testing::RunCommand({ASV_ASVRUN, "info"}, fs::temp_directory_path()).out.find("Gloo: yes") ==
      std::string::npos) {
    GTEST_SKIP() << "this LibTorch has no Gloo: CPU data parallelism is not available";
  }
  const fs::path corpus = testing::SharedTinyCorpus();
  testing::ScratchDir scratch("epoch_scaling");
  const auto json = scratch / "scaling.json";
  const auto r = testing::RunCommand({"python3", std::string(ASV_SOURCE_DIR) + "/tools/bench/epoch_scaling.py",
                                      "--quick", "--build", ASV_BINARY_DIR, "--corpus", corpus.string(), "--work",
                                      (scratch / "work").string(), "--nproc", "1,2", "--epochs", "2", "--json",
                                      json.string()},
                                     scratch.path());
  ASSERT_EQ(r.status, 0) << r.err << testing::Slurp(scratch / "work/log.txt");
  std::ifstream in(json);
  const auto report = nlohmann::json::parse(in);
  ASSERT_EQ(report["recipes"].size(), 2u);
  for (const char* recipe : {"voxceleb/xvector", "voxceleb/margin"}) {
    SCOPED_TRACE(recipe);
    const auto& rows = report["recipes"][recipe];
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0]["processes"], 1);
    EXPECT_EQ(rows[1]["processes"], 2);
    EXPECT_DOUBLE_EQ(rows[0]["speed_up"].get<double>(), 1.0);
    for (const auto& row : rows) {
      EXPECT_EQ(row["timed_epochs"], 1);  // of 2: the first is not timed
      const double seconds = row["epoch_seconds"];
      EXPECT_GT(seconds, 0);
      EXPECT_GT(row["frames_per_second"].get<double>(), 0);
      EXPECT_DOUBLE_EQ(row["speed_up"].get<double>(), rows[0]["epoch_seconds"].get<double>() / seconds);
      EXPECT_DOUBLE_EQ(row["efficiency"].get<double>(), row["speed_up"].get<double>() / row["processes"].get<int>());
    }
    // The Markdown table names the recipe and has one row per process count.
    EXPECT_NE(r.out.find(std::string(recipe) + " (stage 5"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace asv
