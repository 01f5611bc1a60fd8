// Loading configs with many bad lines: each problem is looked up and reported once.
#include "asvcpp/recipe/config_loader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "asvcpp/base/error.h"
#include "asvcpp/settings/settings.h"
#include "tests/asvcpp/recipe/plain_recipe.h"

namespace asv::recipe {
namespace {

namespace stdfs = std::filesystem;

using testing::PlainRecipe;

struct Files {
  explicit Files(const std::string& run_configs)
      : dir(stdfs::temp_directory_path() / ("asv_config_loader_" + std::to_string(::getpid()))) {
    stdfs::remove_all(dir);
    stdfs::create_directories(dir);
    std::ofstream(dir / "run_configs") << run_configs;
    std::ofstream(dir / "init_config") << "network.max_epochs = 3\nnetwork.no_such_init_key = 1\n";
    files.run_configs = dir / "run_configs";
    files.init_config = dir / "init_config";
  }
  ~Files() { stdfs::remove_all(dir); }
  stdfs::path dir;
  RecipeFiles files;
};

// A config of many misspelt names: the file's check reports each once; resolving the config
// binds the good values and reports none of the file's problems again (it used to look every
// name up a second time and report it again, the duplicates dropped only after the fact).
TEST(ConfigLoaderTest, ProblemsOfTheFilesAreReportedOnceNotAgainWhenResolving) {
  constexpr int kBad = 300;
  std::string text = "base\nnetwork.minibatch_size = 64\n\nbad < base\n";
  for (int i = 0; i < kBad; ++i) text += "network.frame_layer_sise" + std::to_string(i) + " = 1\n";
  text += "network.max_epochs = 'many'\nnetwork.stat_size = 128\n";
  Files f(text);
  const PlainRecipe recipe;
  Diagnostics diags;
  const ConfigSet set(recipe, f.files, std::vector<std::string>{"bad"}, diags);
  EXPECT_EQ(diags.error_count(), static_cast<std::size_t>(kBad) + 2) << diags.Render();

  Diagnostics config_diags;
  const auto loaded = set.Resolve("bad", {}, config_diags);
  ASSERT_NE(loaded, nullptr);
  EXPECT_EQ(config_diags.error_count(), 0u) << config_diags.Render();
  const auto& network = loaded->settings->common().network;
  EXPECT_EQ(network.max_epochs, 3);  // from the init config; the run config's 'many' is not bound
  EXPECT_EQ(network.minibatch_size, 64);
  EXPECT_EQ(network.stat_size, 128);

  try {
    LoadConfigs(recipe, f.files, {"bad"}, {}, nullptr);
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.diagnostics().size(), static_cast<std::size_t>(kBad) + 2);
    EXPECT_NE(std::string(e.what()).find(fmt::format("and {} more errors", kBad + 2 - 50)), std::string::npos)
        << e.what();
  }
}

// Warnings without errors are rendered for the user (`asvrun list`), the first 50 of them and
// then their count: a key set 100,000 times made a message of 100,000 warnings.
TEST(ConfigLoaderTest, WarningsAreRenderedFiftyAndACount) {
  std::string text = "twice\n";
  for (int i = 0; i < 80; ++i) text += fmt::format("network.max_epochs = {}\n", i + 1);
  Files f(text);
  const PlainRecipe recipe;
  std::ofstream(f.files.init_config) << "network.max_epochs = 3\n";
  std::string warnings;
  const auto loaded = LoadConfigs(recipe, f.files, {"twice"}, {}, &warnings);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].settings->common().network.max_epochs, 80);
  EXPECT_NE(warnings.find("run_configs:52:1: warning: 'network.max_epochs' is set twice"), std::string::npos)
      << warnings;
  EXPECT_EQ(warnings.find("run_configs:53:1:"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("\nand 29 more warnings\n"), std::string::npos) << warnings.substr(warnings.size() - 300);
}

}  // namespace
}  // namespace asv::recipe
