// Every config-language example in README.md is run: a ```run_configs block is written to a file
// `run_configs` in a scratch folder; a following ```show NAME [ARGS...] block must equal the
// output of `asvrun show voxceleb/xvector NAME --run-configs run_configs ARGS...`, and a
// ```errors NAME block the error output (exit status 2) of `asvrun voxceleb/xvector NAME
// --run-configs run_configs`.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/build_paths.h"
#include "tests/tools/test_util.h"

namespace asv {
namespace {

struct Fence {
  std::string info;  ///< Text after the opening ```.
  std::string body;
  int line = 0;
};

std::vector<Fence> Fences(const std::string& markdown) {
  std::vector<Fence> fences;
  std::istringstream in(markdown);
  std::string line;
  int number = 0;
  Fence* open = nullptr;
  while (std::getline(in, line)) {
    ++number;
    if (line.rfind("```", 0) == 0) {
      if (open == nullptr) {
        fences.push_back(Fence{line.substr(3), "", number});
        open = &fences.back();
      } else {
        open = nullptr;
      }
    } else if (open != nullptr) {
      open->body += line + "\n";
    }
  }
  return fences;
}

std::vector<std::string> Words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

TEST(ReadmeExamplesTest, EveryExampleBehavesAsShown) {
  const auto fences = Fences(testing::Slurp(std::string(ASV_SOURCE_DIR) + "/README.md"));
  testing::ScratchDir dir("readme");
  bool have_configs = false;
  int checked = 0;
  for (const auto& fence : fences) {
    const auto words = Words(fence.info);
    if (words.empty()) continue;
    SCOPED_TRACE("README.md:" + std::to_string(fence.line) + " ```" + fence.info);
    if (words[0] == "run_configs") {
      dir.Write("run_configs", fence.body);
      have_configs = true;
    } else if (words[0] == "show" || words[0] == "errors") {
      ASSERT_TRUE(have_configs) << "example output before any run_configs block";
      ASSERT_GE(words.size(), 2u);
      std::vector<std::string> args = {ASV_ASVRUN};
      if (words[0] == "show") args.push_back("show");
      args.insert(args.end(), {"voxceleb/xvector", words[1], "--run-configs", "run_configs"});
      args.insert(args.end(), words.begin() + 2, words.end());
      const auto result = testing::RunCommand(args, dir.path());
      if (words[0] == "show") {
        EXPECT_EQ(result.status, 0) << result.err;
        EXPECT_EQ(result.out, fence.body);
      } else {
        EXPECT_EQ(result.status, 2);
        EXPECT_EQ(result.err, fence.body);
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 5);
}

}  // namespace
}  // namespace asv
