// The library folders under asvcpp/ form layers: no folder includes a header of another folder
// that includes one of its own (checked on the sources, so that a two-way dependency cannot come
// back unnoticed; the CMake targets follow the folders).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/build_paths.h"

namespace asv {
namespace {

namespace fs = std::filesystem;

// folder -> the other asvcpp folders its .h/.cc files include.
std::map<std::string, std::set<std::string>> FolderIncludes(const fs::path& asvcpp) {
  static const std::regex include(R"re(^\s*#\s*include\s+"asvcpp/([a-z_]+)/)re");
  std::map<std::string, std::set<std::string>> edges;
  for (const auto& entry : fs::recursive_directory_iterator(asvcpp)) {
    const auto ext = entry.path().extension();
    if (!entry.is_regular_file() || (ext != ".h" && ext != ".cc")) continue;
    const std::string folder = fs::relative(entry.path(), asvcpp).begin()->string();
    std::ifstream in(entry.path());
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
      if (std::regex_search(line, m, include) && m[1] != folder) edges[folder].insert(m[1]);
    }
  }
  return edges;
}

TEST(LayeringTest, NoLibraryFolderIncludesAnotherThatIncludesIt) {
  const auto edges = FolderIncludes(fs::path(ASV_SOURCE_DIR) / "asvcpp");
  ASSERT_GE(edges.size(), 10u);  // the walk found the folders
  ASSERT_TRUE(edges.at("train").count("nnet"));
  std::vector<std::string> both_ways;
  for (const auto& [a, targets] : edges) {
    for (const auto& b : targets) {
      const auto back = edges.find(b);
      if (a < b && back != edges.end() && back->second.count(a)) both_ways.push_back(a + " <-> " + b);
    }
  }
  EXPECT_TRUE(both_ways.empty()) << ::testing::PrintToString(both_ways);
}

}  // namespace
}  // namespace asv
