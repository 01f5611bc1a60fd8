// The benchmark harness (tools/bench/run_benchmarks.py) in quick mode without peers: every case
// runs end to end and reports a positive asvcpp figure (rows marked any_sign, such as an RSS
// growth, just a number; case 6 also splits stage 5's RSS by kind of mapping), so the harness
// cannot rot unnoticed. Case 6 (asvrun's memory on the --small demo corpus) needs espeak-ng and
// ffmpeg and is left out without them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <unistd.h>

#include "tests/tools/test_util.h"

namespace {

namespace fs = std::filesystem;

TEST(BenchHarness, QuickModeReportsEveryCase) {
  const fs::path out = fs::temp_directory_path() / ("asv_bench_harness_test." + std::to_string(::getpid()));
  fs::remove_all(out);
  std::set<std::string> expected{"1", "2", "3", "4", "5"};
  if (asv::testing::HaveTool("espeak-ng") && asv::testing::HaveTool("ffmpeg")) expected.insert("6");
  std::string case_list;
  for (const auto& c : expected) case_list += (case_list.empty() ? "" : ",") + c;
  std::string command = std::string("python3 ") + ASV_SOURCE_DIR + "/tools/bench/run_benchmarks.py --quick " +
                        "--no-peers --cases " + case_list + " --build " + ASV_BINARY_DIR + " --out " + out.string();
  if (expected.count("6") != 0) command += " --small-corpus " + asv::testing::SharedTinyCorpus().string();
  command += " > " + (out.string() + ".log") + " 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream log(out.string() + ".log");
  const std::string log_text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  ASSERT_EQ(status, 0) << command << "\n" << log_text;

  std::ifstream in(out / "results.json");
  ASSERT_TRUE(in) << "no results.json\n" << log_text;
  const auto results = nlohmann::json::parse(in);
  EXPECT_TRUE(results["meta"]["failures"].empty()) << results["meta"]["failures"].dump();
  std::set<std::string> cases;
  for (const auto& row : results["rows"]) {
    const std::string name = row["case"].get<std::string>() + ": " + row["name"].get<std::string>();
    ASSERT_TRUE(row["asvcpp"].is_object()) << name;
    ASSERT_TRUE(row["asvcpp"]["median"].is_number()) << name;
    if (!row.value("any_sign", false)) {
      EXPECT_GT(row["asvcpp"]["median"].get<double>(), 0.0) << name;
    }
    cases.insert(row["case"].get<std::string>().substr(0, 1));
    if (row["name"].get<std::string>().rfind("RSS growth", 0) == 0) {
      // Stage 5's RSS split by kind of mapping (/proc/PID/smaps): the libraries and glibc's heap
      // are resident in any LibTorch process.
      const auto& by_kind = row["details"]["epochs"].back()["rss_by_kind_mb"];
      ASSERT_TRUE(by_kind.is_object()) << row["details"]["epochs"].dump();
      EXPECT_GT(by_kind["files"].get<double>(), 10.0) << by_kind.dump();
      EXPECT_GT(by_kind["heap"].get<double>(), 1.0) << by_kind.dump();
      EXPECT_EQ(by_kind.size(), 5u) << by_kind.dump();
    }
  }
  EXPECT_EQ(cases, expected);
  EXPECT_TRUE(fs::exists(out / "results.md"));
  fs::remove_all(out);
  fs::remove(out.string() + ".log");
}

}  // namespace
