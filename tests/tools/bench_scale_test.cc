// The scale benchmark (tools/bench/scale.cc) in quick mode: every case runs at 1 % of VoxCeleb1+2's
// counts in its own process and the report has the expected form (sizes, steps with their seconds,
// peak RSS, the Markdown table). Timings are not checked.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include <unistd.h>

#include "tests/build_paths.h"

namespace {

namespace fs = std::filesystem;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(BenchScale, QuickModeReportsEveryCase) {
  const fs::path dir = fs::temp_directory_path() / ("asv_bench_scale_test." + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string command = std::string(ASV_BENCH_SCALE) + " --quick --tree-dir " + (dir / "trees").string() +
                              " --json " + (dir / "scale.json").string() + " > " + (dir / "table.md").string() +
                              " 2> " + (dir / "log.txt").string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command << "\n" << ReadText(dir / "log.txt");

  std::ifstream in(dir / "scale.json");
  const auto report = nlohmann::json::parse(in);
  EXPECT_TRUE(report["failures"].empty()) << report["failures"].dump();
  EXPECT_EQ(report["meta"]["scales"], nlohmann::json::array({1.0}));
  // The tree of empty files: VoxCeleb1 153,516 + VoxCeleb2 dev 1,092,009 + test 36,237 files at 1 %.
  ASSERT_EQ(report["trees"].size(), 1u);
  EXPECT_EQ(report["trees"][0]["files"].get<std::int64_t>(), 1535 + 10920 + 362);
  EXPECT_GT(report["trees"][0]["inodes"].get<std::int64_t>(), report["trees"][0]["files"].get<std::int64_t>());

  const std::set<std::string> expected{"0", "5", "7", "backend", "db"};
  std::set<std::string> seen;
  for (const auto& row : report["cases"]) {
    const std::string name = row["case"].get<std::string>();
    seen.insert(name);
    EXPECT_EQ(row["scale"].get<double>(), 1.0) << name;
    ASSERT_TRUE(row["size"].is_object()) << name;
    EXPECT_FALSE(row["size"].empty()) << name;
    ASSERT_TRUE(row["steps"].is_array()) << name;
    EXPECT_GE(row["steps"].size(), 1u) << name;
    for (const auto& step : row["steps"]) {
      EXPECT_FALSE(step["name"].get<std::string>().empty()) << name;
      EXPECT_GE(step["seconds"].get<double>(), 0.0) << name;
      EXPECT_GE(step["cpu_seconds"].get<double>(), 0.0) << name;
    }
    // Every case runs in its own process, whose peak RSS covers at least its libraries.
    EXPECT_GT(row["peak_rss_mb"].get<double>(), 1.0) << name;
    EXPECT_GE(row["peak_rss_mb"].get<double>(), row["rss_before_steps_mb"].get<double>() * 0.99) << name;
  }
  EXPECT_EQ(seen, expected);
  // Stage 0 found every file of the tree.
  for (const auto& row : report["cases"]) {
    if (row["case"] == "0") {
      EXPECT_EQ(row["size"]["files"], report["trees"][0]["files"]);
    }
  }

  // The Markdown table: a header with the scale and growth columns, and for every case its size
  // row and its peak RSS row.
  const std::string table = ReadText(dir / "table.md");
  EXPECT_NE(table.find("| case | step | 1 % | growth | CPU time growth |\n|---|---|---:|---|---|\n"), std::string::npos) << table;
  for (const char* name : {"stage 0: list preparation", "stage 5: epoch sampler", "stage 7: extraction bookkeeping",
                           "back end: PLDA, scoring, metrics", "experiment database"}) {
    EXPECT_NE(table.find(std::string("| ") + name + " | size |"), std::string::npos) << name << "\n" << table;
    EXPECT_NE(table.find(std::string("| ") + name + " | peak RSS (MB) |"), std::string::npos) << name << "\n" << table;
  }
  EXPECT_NE(table.find("Tree at 1 %: 12817 files"), std::string::npos) << table;
  fs::remove_all(dir);
}

}  // namespace
