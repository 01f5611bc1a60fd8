// The scoring benchmark (tools/bench/backend_scoring.cc) at a small size: the report has every
// step and list, the metrics are those of a working system, the inputs for the peer are written,
// and, where /usr/bin/python3 has NumPy, the NumPy peer (tools/bench/peers/backend_scoring.py)
// recomputes everything and agrees with asvcpp (it exits 1 otherwise). Timings are not checked.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <unistd.h>

#include "tests/build_paths.h"

namespace {

namespace fs = std::filesystem;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(BenchScoring, SmallRunReportsEveryStepAndAgreesWithTheNumPyPeer) {
  const fs::path dir = fs::temp_directory_path() / ("asv_bench_scoring_test." + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string command = std::string(ASV_BENCH_SCORING) +
                              " --utterances 2000 --speakers 100 --dim 32 --speaker-rank 16 --between-variance 4"
                              " --cohort 500 --backend-vectors 2000 --calibration-trials 2000"
                              " --list-sizes 501 3000 3000 --top-n 50 --threads 1 --write " +
                              (dir / "data").string() + " --json " + (dir / "cpp.json").string() + " 2> " +
                              (dir / "log.txt").string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command << "\n" << ReadText(dir / "log.txt");
  std::ifstream in(dir / "cpp.json");
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["trials"].get<std::int64_t>(), 6501);
  ASSERT_EQ(report["lists"].size(), 3u);
  const std::int64_t sizes[] = {501, 3000, 3000};
  for (int i = 0; i < 3; ++i) {
    const auto& list = report["lists"][i];
    EXPECT_EQ(list["trials"].get<std::int64_t>(), sizes[i]);
    EXPECT_EQ(list["targets"].get<std::int64_t>(), (sizes[i] + 1) / 2);  // alternately target, non-target
    const double eer = list["eer_percent"].get<double>();
    EXPECT_GT(eer, 0.0);
    EXPECT_LT(eer, 30.0) << list.dump();
    EXPECT_LE(list["min_dcf_0.05"].get<double>(), list["act_dcf_0.05"].get<double>() + 1e-12);
    EXPECT_LE(list["min_cllr"].get<double>(), list["cllr"].get<double>() + 1e-12);
  }
  for (const char* step : {"process", "snorm_stats", "score", "normalise", "calibration_train", "calibration_apply",
                           "metrics", "total"}) {
    EXPECT_GE(report[step]["wall_s"].get<double>(), 0.0) << step;
    EXPECT_GE(report[step]["cpu_s"].get<double>(), 0.0) << step;
  }
  EXPECT_GT(report["peak_rss_mb"].get<double>(), 1.0);
  EXPECT_EQ(fs::file_size(dir / "data" / "embeddings.f32"), 2000u * 32u * 4u);
  EXPECT_EQ(fs::file_size(dir / "data" / "vox1_e_trials.i64"), 3000u * 2u * 8u);

  if (std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no NumPy for /usr/bin/python3: the peer's cross-check is skipped";
  }
  const std::string peer = std::string("/usr/bin/python3 ") + ASV_SOURCE_DIR +
                           "/tools/bench/peers/backend_scoring.py " + (dir / "data").string() +
                           " --threads 1 --chunk-rows 300 --asvcpp-json " + (dir / "cpp.json").string() +
                           " --json " + (dir / "numpy.json").string() + " 2> " + (dir / "peer_log.txt").string();
  ASSERT_EQ(std::system(peer.c_str()), 0) << peer << "\n" << ReadText(dir / "peer_log.txt") << ReadText(dir / "numpy.json");
  std::ifstream peer_in(dir / "numpy.json");
  const auto numpy = nlohmann::json::parse(peer_in);
  EXPECT_TRUE(numpy["agreement"]["ok"].get<bool>());
  EXPECT_LT(numpy["agreement"]["snorm_mean_max_abs_diff"].get<double>(), 1e-5);
  fs::remove_all(dir);
}

}  // namespace
