// The CPU mode of the GPU acceptance check (tools/gpu_check/gpu_check.py), so that the script
// cannot rot between runs on GPU machines: the tiny data made as tools/gpu_check/prepare.sh makes
// it, then every step that can run on the CPU (end to end in fp32 and bf16, checkpoints across
// devices, both benchmarks) passes and the GPU-only ones are reported as skipped, in report.json
// and report.md. Skipped when espeak-ng, ffmpeg or python3 is missing.
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "tests/build_paths.h"
#include "tests/tools/test_util.h"

namespace asv {
namespace {

namespace fs = std::filesystem;

TEST(GpuCheckTest, CpuModeRunsEveryStepThatCanRunOnTheCpu) {
  if (!testing::HaveDemoCorpusTools()) {
    GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
  }
  testing::ScratchDir dir("gpu_check");
  const std::string source = ASV_SOURCE_DIR;
  const auto prepare = testing::RunCommand({"env", std::string("ASV_ASVRUN=") + ASV_ASVRUN,
                                            "ASV_TINY_CORPUS=" + testing::SharedTinyCorpus().string(),
                                            source + "/tools/gpu_check/prepare.sh", "--data", "data"},
                                           dir.path());
  ASSERT_EQ(prepare.status, 0) << prepare.out << prepare.err;
  ASSERT_TRUE(fs::exists(dir / "data/PREPARED"));
  // The speech audio stays behind (PCM stores replace it for the margin recipe); only the tiny
  // MUSAN and room impulse responses that the margin training mixes in travel, and voxceleb1's 12
  // recordings with their trial list for asvrun embed and verify.
  EXPECT_FALSE(fs::exists(dir / "data/corpus/voxceleb1")) << "the audio must not travel";
  EXPECT_FALSE(fs::exists(dir / "data/corpus/voxceleb2")) << "the audio must not travel";
  EXPECT_TRUE(fs::exists(dir / "data/corpus/musan"));
  EXPECT_TRUE(fs::exists(dir / "data/embed_audio/voxceleb1/veri_test.txt"));

  const auto check = testing::RunCommand({"python3", source + "/tools/gpu_check/gpu_check.py", "report", "--cpu",
                                          "--build-dir", ASV_BINARY_DIR, "--no-build", "--data", "data",
                                          "--skip-ctest", "--jobs", "2", "--budget", "800"},
                                         dir.path());
  const auto report = nlohmann::json::parse(testing::Slurp(dir / "report/report.json"));
  std::map<std::string, std::string> status;
  for (const auto& s : report["steps"]) status[s["step"]] = s["status"];
  EXPECT_EQ(check.status, 0) << check.err << testing::Slurp(dir / "report/report.md");
  EXPECT_EQ(report["mode"], "cpu");
  // dist_kill: 2 CPU processes over Gloo (Debian's LibTorch has it), one killed.
  for (const char* step : {"environment", "build", "e2e", "checkpoints", "dist_kill", "bench_train", "bench_features",
                           "margin_e2e", "embed", "bench_margin_data"}) {
    EXPECT_EQ(status[step], "pass") << step << "\n" << testing::Slurp(dir / "report/report.md");
  }
  for (const char* step : {"ctest_gpu", "pin_queue", "ctest_rest", "bench_margin", "bench_embed"}) {
    EXPECT_EQ(status[step], "skip") << step;
  }
  // The end-to-end figures come from the experiment database: two epochs and a final EER each.
  for (const auto& s : report["steps"]) {
    if (s["step"] != "e2e") continue;
    for (const char* config : {"gc_fp32", "gc_bf16"}) {
      const auto& c = s["figures"][config];
      EXPECT_EQ(c["device"], "cpu");
      EXPECT_EQ(c["epochs"].size(), 2u);
      ASSERT_EQ(c["results"].size(), 1u);
      EXPECT_GE(c["results"][0]["eer"].get<double>(), 0.0);
      EXPECT_LE(c["results"][0]["eer"].get<double>(), 100.0);
    }
  }
  // asvrun embed and verify with both margin models: every recording embedded, every trial scored.
  for (const auto& s : report["steps"]) {
    if (s["step"] != "embed") continue;
    for (const char* config : {"mc_resnet_fp32", "mc_ecapa_fp32"}) {
      const auto& c = s["figures"][config];
      EXPECT_EQ(c["recordings"], 12) << config;
      ASSERT_EQ(c["scores"]["cpu"].size(), 6u) << config;
    }
    EXPECT_NE(s["details"].get<std::string>().find("--device cuda refused (exit 2)"), std::string::npos)
        << s["details"];
  }
  // The Markdown report names every step, and stdout ends with it.
  const std::string md = testing::Slurp(dir / "report/report.md");
  for (const auto& s : report["steps"]) EXPECT_NE(md.find("| " + s["step"].get<std::string>() + " |"), std::string::npos);
  EXPECT_NE(check.out.find("# asvcpp GPU acceptance check (cpu mode)"), std::string::npos);
}

}  // namespace
}  // namespace asv
