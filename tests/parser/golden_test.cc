// Golden tests of the config parser. Each directory under tests/parser/golden/ holds one case:
//
//   ok/<case>/   inputs `run_configs` (or run_configs.py) and/or `init_config` (or init_config.py);
//                expected.txt = the rendered warnings (if any), then "[init_config]" and the
//                Dump() of ResolveInit() when there is an init config, then, for every config of
//                the run-configs file in file order, a line "[name]" and the Dump() of Resolve(name).
//                Sections are separated by an empty line. The case must produce no error.
//   bad/<case>/  the same inputs; expected.txt = Render() of every diagnostic of ParseInitConfig,
//                ParseRunConfigs and CheckRunConfigs. The case must produce at least one error.
//
// Inputs are parsed with their bare file names as paths, so the output does not depend on where
// the checkout lives.
//
// To regenerate expected.txt after an intended change, run the test with ASV_UPDATE_GOLDEN=1:
//   ASV_UPDATE_GOLDEN=1 build/tests/parser/asv_parser_golden_test
// then review every changed file (git diff tests/parser/golden) before committing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/base/fs.h"
#include "parser/parse.h"
#include "parser/resolve.h"
#include "tests/build_paths.h"

namespace asv::parser {
namespace {

namespace stdfs = std::filesystem;

const stdfs::path kGoldenDir = stdfs::path(ASV_SOURCE_DIR) / "tests" / "parser" / "golden";

// The input named `stem` or `stem.py` in `dir`, if any.
std::optional<stdfs::path> Input(const stdfs::path& dir, const std::string& stem) {
  for (const auto& name : {stem, stem + ".py"}) {
    if (stdfs::exists(dir / name)) return dir / name;
  }
  return std::nullopt;
}

struct Outcome {
  std::string text;
  bool has_errors = false;
};

Outcome Run(const stdfs::path& dir, bool ok) {
  Diagnostics diags;
  std::optional<InitConfigFile> init;
  std::optional<RunConfigsFile> run;
  if (const auto path = Input(dir, "init_config")) {
    init = ParseInitConfig(fs::ReadFile(*path), path->filename().string(), diags);
  }
  if (const auto path = Input(dir, "run_configs")) {
    run = ParseRunConfigs(fs::ReadFile(*path), path->filename().string(), diags);
    CheckRunConfigs(*run, diags);
  }
  Outcome out{diags.Render(), diags.has_errors()};
  if (!ok || out.has_errors) return out;

  std::vector<std::string> sections;
  if (!out.text.empty()) sections.push_back(out.text);
  if (init) sections.push_back("[init_config]\n" + Dump(ResolveInit(*init)));
  if (run) {
    std::vector<std::string> done;
    for (const auto& block : run->blocks) {
      if (std::find(done.begin(), done.end(), block.name) != done.end()) continue;
      done.push_back(block.name);
      Diagnostics resolve_diags;
      const auto config = Resolve(*run, block.name, resolve_diags);
      sections.push_back("[" + block.name + "]\n" + (config ? Dump(*config) : resolve_diags.Render()));
      out.has_errors |= resolve_diags.has_errors();
    }
  }
  out.text.clear();
  for (std::size_t i = 0; i < sections.size(); ++i) out.text += (i > 0 ? "\n" : "") + sections[i];
  return out;
}

std::vector<stdfs::path> Cases(const std::string& kind) {
  std::vector<stdfs::path> cases;
  for (const auto& entry : stdfs::directory_iterator(kGoldenDir / kind)) {
    if (entry.is_directory()) cases.push_back(entry.path());
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

void CheckCases(const std::string& kind, std::size_t min_cases) {
  const bool update = std::getenv("ASV_UPDATE_GOLDEN") != nullptr;
  const auto cases = Cases(kind);
  EXPECT_GE(cases.size(), min_cases);
  for (const auto& dir : cases) {
    const std::string name = kind + "/" + dir.filename().string();
    ASSERT_TRUE(Input(dir, "run_configs") || Input(dir, "init_config")) << name << ": no input file";
    const Outcome got = Run(dir, kind == "ok");
    if (kind == "ok") {
      EXPECT_FALSE(got.has_errors) << name << " reports errors:\n" << got.text;
    } else {
      EXPECT_TRUE(got.has_errors) << name << " reports no error:\n" << got.text;
    }
    const stdfs::path expected_path = dir / "expected.txt";
    if (update) {
      fs::WriteFileAtomic(expected_path, got.text);
      continue;
    }
    ASSERT_TRUE(stdfs::exists(expected_path)) << name << ": missing expected.txt (run with ASV_UPDATE_GOLDEN=1)";
    EXPECT_EQ(got.text, fs::ReadFile(expected_path)) << "golden case " << name;
  }
}

TEST(ParserGoldenTest, AllCases) {
  CheckCases("ok", 5);
  CheckCases("bad", 15);
}

// ParseRunConfigsFor against the whole parse, on every golden input and the recipe's shipped
// run_configs: for each config (and a name defined nowhere), reading only its chain resolves to the
// same values, fails where the whole file fails, and reports nothing the whole parse does not.
TEST(ParserGoldenTest, ChainReadingAgreesWithTheWholeFile) {
  std::vector<stdfs::path> files{stdfs::path(ASV_SOURCE_DIR) / "run_configs" / "voxceleb" / "xvector" / "run_configs"};
  for (const std::string kind : {"ok", "bad"}) {
    for (const auto& dir : Cases(kind)) {
      if (const auto path = Input(dir, "run_configs")) files.push_back(*path);
    }
  }
  std::size_t configs = 0;
  for (const auto& path : files) {
    const std::string text = fs::ReadFile(path);
    Diagnostics whole_diags;
    const auto whole = ParseRunConfigs(text, "run_configs", whole_diags);
    CheckRunConfigs(whole, whole_diags);
    std::vector<std::string> whole_rendered;
    for (const auto& d : whole_diags.all()) whole_rendered.push_back(d.Render());
    std::vector<std::string> names{"no_such_config"};
    for (const auto& block : whole.blocks) names.push_back(block.name);
    for (const auto& name : names) {
      SCOPED_TRACE(path.string() + ": " + name);
      Diagnostics diags;
      const auto chain = ParseRunConfigsFor(text, "run_configs", {name}, diags);
      CheckRunConfigs(chain, diags);
      for (const auto& d : diags.all()) {
        EXPECT_NE(std::find(whole_rendered.begin(), whole_rendered.end(), d.Render()), whole_rendered.end())
            << "reported only when reading the chain:\n" << d.Render();
      }
      Diagnostics resolve_whole;
      Diagnostics resolve_chain;
      const auto expected = Resolve(whole, name, resolve_whole);
      const auto got = Resolve(chain, name, resolve_chain);
      ASSERT_EQ(got.has_value(), expected.has_value()) << resolve_chain.Render() << resolve_whole.Render();
      if (expected) {
        EXPECT_EQ(Dump(*got), Dump(*expected));
      }
      ++configs;
    }
  }
  EXPECT_GE(configs, 60u);
}

}  // namespace
}  // namespace asv::parser
