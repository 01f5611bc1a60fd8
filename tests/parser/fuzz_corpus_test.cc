// Replays the fuzzer's kept corpus (tests/parser/fuzz_corpus/: inputs that once crashed or hung
// the config reader, small versions of hostile inputs, the real run_configs files) through the
// fuzz target's code, so that none of them ever crashes again. tools/fuzz_configs.sh fuzzes
// from this corpus.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "asvcpp/base/fs.h"
#include "tests/build_paths.h"
#include "tests/parser/fuzz/config_fuzz.h"

namespace asv::parser {
namespace {

namespace stdfs = std::filesystem;

TEST(FuzzCorpusTest, EveryKeptInputIsReadWithoutCrashing) {
  const stdfs::path dir = stdfs::path(ASV_SOURCE_DIR) / "tests" / "parser" / "fuzz_corpus";
  std::vector<stdfs::path> inputs;
  for (const auto& entry : stdfs::directory_iterator(dir)) {
    if (entry.is_regular_file()) inputs.push_back(entry.path());
  }
  std::sort(inputs.begin(), inputs.end());
  ASSERT_GE(inputs.size(), 10u) << dir;
  for (const auto& input : inputs) {
    SCOPED_TRACE(input.filename().string());
    EXPECT_NO_THROW(fuzz::ReadConfigs(fs::ReadFile(input.string())));
  }
}

}  // namespace
}  // namespace asv::parser
