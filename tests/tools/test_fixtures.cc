// Set-up tests of ctest fixtures (FIXTURES_SETUP in tests/tools/CMakeLists.txt): each makes data
// that several end-to-end tests share, once per build, before those tests start.
#include <gtest/gtest.h>

#include "tests/tools/test_util.h"

namespace asv {
namespace {

namespace fs = std::filesystem;

// Fixture `tiny_corpus`: tools/make_demo_corpus.py --small in build/test_data/tiny_corpus.
TEST(TestFixtures, TinyCorpus) {
  if (!testing::HaveDemoCorpusTools()) {
    GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
  }
  const fs::path corpus = testing::SharedTinyCorpus();
  EXPECT_GT(testing::CountLines(corpus / "voxceleb1/veri_test.txt"), 0u);
  EXPECT_TRUE(fs::is_directory(corpus / "voxceleb2"));
  EXPECT_TRUE(fs::is_directory(corpus / "musan"));
  EXPECT_TRUE(fs::is_directory(corpus / "RIRS_NOISES"));
}

}  // namespace
}  // namespace asv
