// The sources of a unity batch (cmake/AsvUnity.cmake) share one translation unit, so a name that
// two of them define for themselves (in an anonymous namespace, or `static` at namespace scope)
// would clash or, worse, turn into one overload set and let one source call the other's function.
// No two sources of a batch define the same such name (type aliases of the same name are allowed:
// C++ accepts repeated identical aliases and rejects different ones). A line scan of the sources
// as clang-format lays them out: namespace members start in column 0.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/build_paths.h"
#include "tests/tools/test_util.h"

namespace asv {
namespace {

namespace fs = std::filesystem;

// The line without string and character literals and without a trailing // comment.
std::string CodeOf(const std::string& line) {
  static const std::regex literal(R"re("(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')re");
  std::string code = std::regex_replace(line, literal, "\"\"");
  const auto comment = code.find("//");
  return comment == std::string::npos ? code : code.substr(0, comment);
}

// Names that `source` defines for itself: the functions, types and constants of its anonymous
// namespaces and its `static` functions at namespace scope. Value: true when every definition of
// the name in the file is a type alias (`using X = ...`).
std::map<std::string, bool> OwnNames(const fs::path& source) {
  static const std::regex function(
      R"re(^(?:template\s*<.*>\s*)?(?:(?:static|inline|constexpr)\s+)*[A-Za-z_][\w:<>,\s*&]*?[\s*&]([A-Za-z_]\w*)\s*\()re");
  static const std::regex type(
      R"re(^(?:template\s*<.*>\s*)?(?:struct|class|enum class|enum|union)\s+([A-Za-z_]\w*))re");
  static const std::regex alias(R"re(^using\s+([A-Za-z_]\w*)\s*=)re");
  static const std::regex constant(
      R"re(^(?:static\s+)?(?:inline\s+)?(?:constexpr|const)\s+[^=(;]*?\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*(?:=|\{))re");
  static const std::regex anonymous(R"re(^\s*namespace\s*\{)re");
  static const std::set<std::string> keywords{"if",     "for",      "while",  "switch",
                                              "return", "operator", "sizeof", "decltype"};
  std::map<std::string, bool> names;
  std::ifstream in(source);
  std::string line;
  int depth = 0;
  std::vector<int> anonymous_depths;
  bool in_comment = false;
  while (std::getline(in, line)) {
    std::string code = CodeOf(line);
    if (in_comment || code.find("/*") != std::string::npos) {
      in_comment = code.find("*/") == std::string::npos;
      continue;
    }
    const bool in_anonymous = !anonymous_depths.empty() && depth == anonymous_depths.back();
    const bool column0 = !code.empty() && code[0] != ' ' && code[0] != '\t' && code[0] != '}' && code[0] != '#';
    if (column0 && (in_anonymous || code.rfind("static ", 0) == 0)) {
      std::smatch m;
      if (std::regex_search(code, m, alias)) {
        names.emplace(m[1], true);
      } else if (std::regex_search(code, m, type) || std::regex_search(code, m, constant)) {
        names[m[1]] = false;
      } else if (std::regex_search(code, m, function) && !keywords.count(m[1])) {
        // `Type Class::Method(` defines a member, not a name of the file's own.
        const std::string head = code.substr(0, static_cast<std::size_t>(m.position(1)));
        if (head.empty() || head.back() != ':') names[m[1]] = false;
      }
    }
    if (std::regex_search(code, anonymous)) anonymous_depths.push_back(depth + 1);
    depth += static_cast<int>(std::count(code.begin(), code.end(), '{') - std::count(code.begin(), code.end(), '}'));
    while (!anonymous_depths.empty() && depth < anonymous_depths.back()) anonymous_depths.pop_back();
  }
  return names;
}

// "name: a.cc b.cc" for every name that more than one of `members` defines for itself.
std::vector<std::string> Clashes(const std::vector<fs::path>& members) {
  std::map<std::string, std::vector<std::string>> owners;
  std::map<std::string, bool> only_aliases;
  for (const auto& member : members) {
    for (const auto& [name, is_alias] : OwnNames(member)) {
      owners[name].push_back(member.filename().string());
      const auto it = only_aliases.emplace(name, is_alias).first;
      it->second = it->second && is_alias;
    }
  }
  std::vector<std::string> clashes;
  for (const auto& [name, files] : owners) {
    if (files.size() < 2 || only_aliases[name]) continue;
    std::string text = name + ":";
    for (const auto& f : files) text += " " + f;
    clashes.push_back(text);
  }
  return clashes;
}

TEST(UnityNamesTest, TheScanFindsAClashAndAllowsRepeatedAliases) {
  testing::ScratchDir dir("unity_names");
  const auto a = dir.Write("a.cc",
                           "namespace asv::x {\nnamespace {\n\nusing Ids = int;\nconstexpr int kLimit = 3;\n"
                           "int Scale(int v) {\n  return v * kLimit;\n}\n\nstruct Row {\n  int Width() const;\n};\n\n"
                           "}  // namespace\n\nint Row::Width() const { return 1; }\n}  // namespace asv::x\n");
  const auto b = dir.Write("b.cc",
                           "namespace asv::x {\nnamespace {\n\nusing Ids = int;\n// int Row(int);\n"
                           "const char* Name() { return \"int Scale(\"; }\n\n}  // namespace\n\n"
                           "double Scale(double v) { return v; }  // public: declared in a header\n"
                           "static float Shift(float v) { return v; }\n}  // namespace asv::x\n");
  const auto c = dir.Write("c.cc", "namespace asv::x {\nstatic float Shift(float v) { return v + 1; }\n}\n");
  EXPECT_EQ(OwnNames(a),
            (std::map<std::string, bool>{{"Ids", true}, {"Row", false}, {"Scale", false}, {"kLimit", false}}));
  EXPECT_EQ(OwnNames(b), (std::map<std::string, bool>{{"Ids", true}, {"Name", false}, {"Shift", false}}));
  EXPECT_TRUE(Clashes({a, b}).empty()) << ::testing::PrintToString(Clashes({a, b}));
  EXPECT_EQ(Clashes({a, b, c}), (std::vector<std::string>{"Shift: b.cc c.cc"}));
}

TEST(UnityNamesTest, NoTwoSourcesOfABatchDefineTheSameOwnName) {
  const fs::path batches = fs::path(ASV_BINARY_DIR) / "unity";
  if (!fs::is_directory(batches)) GTEST_SKIP() << "no unity batches in this build (ASV_UNITY_BUILD=OFF)";
  static const std::regex include(R"re(^#include "([^"]+)")re");
  int checked = 0;
  std::vector<std::string> clashes;
  for (const auto& entry : fs::recursive_directory_iterator(batches)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".cc") continue;
    std::vector<fs::path> members;
    std::ifstream in(entry.path());
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
      if (std::regex_search(line, m, include)) members.push_back(fs::path(ASV_SOURCE_DIR) / m[1].str());
    }
    for (const auto& clash : Clashes(members))
      clashes.push_back(fs::relative(entry.path(), batches).string() + ": " + clash);
    ++checked;
  }
  EXPECT_GE(checked, 20);  // the walk found the batches
  EXPECT_TRUE(clashes.empty()) << ::testing::PrintToString(clashes);
}

}  // namespace
}  // namespace asv
