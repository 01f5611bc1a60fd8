// A dry run of every block of ASVtorch's own run_configs.py of voxceleb/xvector and of
// sitw/xvector (tests/tools/asvtorch_configs/, verbatim copies of ASVtorch's files, with their
// init_config.py) and of asvcpp's run_configs/sitw/xvector/run_configs (with its init_config):
//   asvrun RECIPE BLOCK --init-config FILE --run-configs FILE --dry-run --set paths.output_folder=TMP
// Every block resolves (no exit 2: no unknown setting, recipe or parse error) and the dry run
// stops with exit 3 naming exactly the inputs that are missing here: the corpus folders of the
// init config (ASVtorch's /media/... folders, asvcpp's demo_data/... ones relative to the folder
// asvrun runs in), and in the empty output folder the lists, features, networks and embeddings
// that the earlier stages of the recipe would have written. ASVtorch's 'emb' and 'score' ("not
// runnable as is", only inherited from) name no system folder: they use the default system1,
// which holds no network or embeddings, and say so like any other block.
//
// The dry runs run in this process (tools::RunConfigs through asvrun_in_process.h): one asvrun
// for each of the ~85 blocks would start LibTorch 85 times.
#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "asvcpp/base/diagnostic.h"
#include "asvcpp/recipe/config_loader.h"
#include "recipes/catalog.h"
#include "tests/build_paths.h"
#include "tests/tools/asvrun_in_process.h"
#include "tests/tools/test_util.h"
#include "tools/asvrun/commands.h"

namespace asv {
namespace {

namespace fs = std::filesystem;

// What the dry run of one block says: its exit status, the stages it lists and the paths its
// "missing input:" lines name, in order ({out}: the output folder, {cwd}: the folder asvrun runs
// in).
struct Block {
  std::string name;
  int status = 3;
  std::vector<int> stages;
  std::vector<std::string> missing;
};

std::string Lists(const std::string& dataset, const std::string& file = "") {
  return "{out}/datasets/" + dataset + "/lists" + (file.empty() ? "" : "/" + file);
}

// Stage 0: the corpus folders of the prepared datasets.
Block Prepare(const std::string& name, std::vector<std::string> folders) { return {name, 3, {0}, std::move(folders)}; }

// Stage 1: the lists stage 0 writes.
Block Features(const std::string& name, const std::vector<std::string>& datasets) {
  Block block{name, 3, {1}, {}};
  for (const auto& d : datasets) block.missing.push_back(Lists(d, "wav.scp"));
  return block;
}

// Stage 2: the noise and reverberation folders and the features of the augmented datasets.
Block Augment(const std::string& name, const std::string& musan, const std::string& rirs,
              const std::vector<std::string>& datasets) {
  Block block{name, 3, {2}, {musan, rirs}};
  for (const auto& d : datasets) block.missing.push_back(Lists(d, "feats.scp"));
  return block;
}

// The data an x-vector recipe trains on, builds its PLDA from and tests on.
struct RecipeData {
  std::vector<std::string> training;
  std::vector<std::string> plda;
  std::string trial_dataset;
};

// The blocks both ASVtorch x-vector files have from 'net' on: six networks (ASVtorch's system
// folders), trained (stage 5), their embeddings extracted (stage 7) and scored (stage 9).
std::vector<Block> NetworkBlocks(const RecipeData& data) {
  const std::vector<std::pair<std::string, std::string>> networks = {
      {"net", "full_system_default"},
      {"net_se", "full_system_se"},
      {"net_resse", "full_system_resse"},
      {"net_lde_isotropic", "full_system_lde_isotropic"},
      {"net_lde_tied_diagonal", "full_system_lde_tied_diagonal"},
      {"net_netvlad", "full_system_netvlad"}};
  auto train = [&](const std::string& name) {
    Block block{name, 3, {5}, {}};
    for (const auto& d : data.training) block.missing.push_back(Lists(d, "feats.scp"));
    return block;
  };
  auto embeddings = [&](const std::string& name, const std::string& system) {
    Block block{name, 3, {7}, {"{out}/" + system + "/networks/epoch.1.pt"}};
    for (const auto& d : data.plda) block.missing.push_back(Lists(d, "feats.scp"));
    block.missing.push_back(Lists(data.trial_dataset, "feats.scp"));
    block.missing.push_back(Lists(data.trial_dataset));  // its trial lists
    return block;
  };
  auto scoring = [&](const std::string& name, const std::string& system) {
    const std::string folder = "{out}/" + system + "/embeddings/";
    return Block{name, 3, {9}, {folder + "plda.scp", folder + "trial.scp", folder + "plda.utt2spk",
                                Lists(data.trial_dataset)}};
  };
  std::vector<Block> blocks;
  for (const auto& [net, system] : networks) {
    blocks.push_back(train(net));
    if (net == "net") {
      blocks.push_back(train("net_resume"));
      blocks.back().missing.push_back("{out}/full_system_default/networks/epoch.23.pt");  // network.resume_epoch
    }
  }
  blocks.push_back(embeddings("emb", "system1"));
  for (const auto& [net, system] : networks) blocks.push_back(embeddings("emb_" + net, system));
  blocks.push_back(scoring("score", "system1"));
  for (const auto& [net, system] : networks) blocks.push_back(scoring("score_" + net, system));
  return blocks;
}

std::vector<Block> Concat(std::vector<Block> a, const std::vector<Block>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// ASVtorch's voxceleb/xvector: VoxCeleb1 for testing, VoxCeleb2 (concatenated per video,
// augmented) for training and PLDA.
std::vector<Block> AsvtorchVoxcelebBlocks() {
  const std::string media = "/media/hdd3/";
  return Concat({Prepare("prepare", {media + "voxceleb1", media + "voxceleb2"}),
                 Prepare("prepare_vox1", {media + "voxceleb1"}), Prepare("prepare_vox2", {media + "voxceleb2"}),
                 Features("fe", {"voxceleb1", "voxceleb2_cat"}), Features("fe_vox2", {"voxceleb2"}),
                 Augment("aug", media + "musan", "/media/hdd2/vvestman/kaldi/egs/voxceleb/v2/RIRS_NOISES",
                         {"voxceleb2_cat"})},
                NetworkBlocks({{"voxceleb2_cat_combined"}, {"voxceleb2_cat_combined"}, "voxceleb1"}));
}

// The blocks of ASVtorch's sitw/xvector, with the corpus folders of an init config: `corpus` the
// folder holding voxceleb1, voxceleb2 and sitw.
std::vector<Block> SitwBlocks(const std::string& corpus, const std::string& musan, const std::string& rirs) {
  const std::vector<std::string> combined = {"voxceleb1_cat_combined", "voxceleb2_cat_combined"};
  return Concat({Prepare("prepare", {corpus + "voxceleb1", corpus + "voxceleb2", corpus + "sitw"}),
                 Prepare("prepare_vox1", {corpus + "voxceleb1"}), Prepare("prepare_vox2", {corpus + "voxceleb2"}),
                 Prepare("prepare_sitw", {corpus + "sitw"}),
                 Features("fe", {"voxceleb1_cat", "voxceleb2_cat", "sitw"}),
                 Features("fe_vox2", {"voxceleb1", "voxceleb2"}),
                 Augment("aug", musan, rirs, {"voxceleb1_cat", "voxceleb2_cat"})},
                NetworkBlocks({combined, combined, "sitw"}));
}

std::vector<Block> AsvtorchSitwBlocks() {
  return SitwBlocks("/media/hdd3/", "/media/hdd3/musan", "/media/hdd2/vvestman/kaldi/egs/voxceleb/v2/RIRS_NOISES");
}

// asvcpp's sitw/xvector: its two demo blocks, then ASVtorch's blocks unchanged, with the
// demo_data/ folders of its init config (paths.musan_folder and paths.rirs_folder are shown as
// written, the dataset folders absolute).
std::vector<Block> AsvcppSitwBlocks() {
  const std::string corpus = "{cwd}/demo_data/";
  Block demo{"demo",
             3,
             {0, 1, 2, 5, 7, 9},
             {corpus + "voxceleb1", corpus + "voxceleb2", corpus + "sitw"}};  // stages 1-9 read what 0 writes
  // From stage 2 on: stage 2's noise, reverberation and features; the SITW features (stage 7) and
  // trial lists (stages 7 and 9) that stages 0 and 1 of 'demo' write.
  Block demo_aug{"demo_aug",
                 3,
                 {2, 5, 7, 9},
                 {"demo_data/musan", "demo_data/RIRS_NOISES", Lists("voxceleb1_cat", "feats.scp"),
                  Lists("voxceleb2_cat", "feats.scp"), Lists("sitw", "feats.scp"), Lists("sitw"), Lists("sitw")}};
  return Concat({demo, demo_aug}, SitwBlocks(corpus, "demo_data/musan", "demo_data/RIRS_NOISES"));
}

struct DryRunFile {
  std::string label;  // test name
  std::string recipe;
  fs::path init_config;
  fs::path run_configs;
  std::vector<Block> blocks;  // every block of run_configs, in file order
};

void PrintTo(const DryRunFile& f, std::ostream* os) {
  *os << f.recipe << " " << fs::relative(f.run_configs, ASV_SOURCE_DIR).string();
}

DryRunFile AsvtorchFile(const std::string& recipe, const std::string& folder, std::vector<Block> blocks) {
  const fs::path dir = fs::path(ASV_SOURCE_DIR) / "tests/tools/asvtorch_configs" / folder;
  return {"asvtorch_" + folder, recipe, dir / "init_config.py", dir / "run_configs.py", std::move(blocks)};
}

DryRunFile AsvcppFile(const std::string& recipe, const std::string& label, std::vector<Block> blocks) {
  const fs::path dir = fs::path(ASV_SOURCE_DIR) / "run_configs" / recipe;
  return {label, recipe, dir / "init_config", dir / "run_configs", std::move(blocks)};
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// What a dry run printed for one config: the stage numbers and the paths of its missing inputs
// ("    missing input: PATH: why").
struct DryRunReport {
  std::string header;  // "config NAME < PARENTS"
  std::vector<int> stages;
  std::vector<std::string> missing;
};

DryRunReport ParseDryRun(const std::string& out) {
  DryRunReport report;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("config ", 0) == 0) report.header = line;
    if (line.rfind("  stage ", 0) == 0) report.stages.push_back(std::stoi(line.substr(8)));
    const std::string missing = "    missing input: ";
    if (line.rfind(missing, 0) == 0) {
      const auto rest = line.substr(missing.size());
      report.missing.push_back(rest.substr(0, rest.find(": ")));
    }
  }
  return report;
}

// Runs the test in a scratch folder (relative paths of an init config resolve there) and goes back.
class InFolder {
 public:
  explicit InFolder(const fs::path& folder) : previous_(fs::current_path()) { fs::current_path(folder); }
  ~InFolder() { fs::current_path(previous_); }
  InFolder(const InFolder&) = delete;
  InFolder& operator=(const InFolder&) = delete;

 private:
  fs::path previous_;
};

class AsvtorchConfigsDryRunTest : public ::testing::TestWithParam<DryRunFile> {};

TEST_P(AsvtorchConfigsDryRunTest, EveryBlockResolvesAndNamesWhatIsMissing) {
  const DryRunFile& file = GetParam();
  const auto& recipe = recipes::FindRecipe(file.recipe);
  recipe::LocateOptions locate;
  locate.init_config = file.init_config;
  locate.run_configs = file.run_configs;
  // Every assignment of every block is known to the recipe: not even a warning.
  Diagnostics diags;
  const recipe::ConfigSet configs(recipe, recipe::LocateRecipeFiles(file.recipe, locate), diags);
  EXPECT_TRUE(diags.empty()) << diags.Render();
  std::vector<std::string> names, expected_names;
  for (const auto& block : configs.run_configs().blocks) names.push_back(block.name);
  for (const auto& block : file.blocks) expected_names.push_back(block.name);
  ASSERT_EQ(names, expected_names);

  testing::ScratchDir dir("asvtorch_dry_run");
  const fs::path cwd = fs::canonical(dir.path());
  const fs::path out = cwd / "out";
  tools::TorchCommands torch;
  torch.run = tools::RunConfigs;
  {
    InFolder in(cwd);
    for (const auto& block : file.blocks) {
      SCOPED_TRACE(block.name);
      const auto r = testing::Asvrun({file.recipe, block.name, "--init-config", file.init_config.string(),
                                      "--run-configs", file.run_configs.string(), "--dry-run", "--set",
                                      "paths.output_folder=" + out.string()},
                                     torch);
      EXPECT_EQ(r.status, block.status) << r.out << r.err;
      const auto report = ParseDryRun(r.out);
      EXPECT_EQ(report.header.rfind("config " + block.name, 0), 0u) << r.out;
      EXPECT_NE(r.out.find("  output folder: " + out.string() + "\n"), std::string::npos) << r.out;
      EXPECT_EQ(report.stages, block.stages) << r.out;
      std::vector<std::string> expected;
      for (const auto& path : block.missing) {
        expected.push_back(Replace(Replace(path, "{out}", out.string()), "{cwd}", cwd.string()));
      }
      EXPECT_EQ(report.missing, expected) << r.out;
      // Only the count of missing inputs on stderr: no warning, unknown setting or recipe, parse error.
      const std::size_t n = expected.size();
      EXPECT_EQ(r.err, "asvrun: " + std::to_string(n) + (n == 1 ? " missing input" : " missing inputs") +
                           ": the run would stop at the stage that reads " + (n == 1 ? "it" : "them") + "\n");
      for (const char* bad : {"unknown", "error", "Error"}) {
        EXPECT_EQ(r.out.find(bad), std::string::npos) << bad << "\n" << r.out;
        EXPECT_EQ(r.err.find(bad), std::string::npos) << bad << "\n" << r.err;
      }
    }
  }
  // Nothing was written: no output folder, no database.
  EXPECT_TRUE(fs::is_empty(cwd));
}

INSTANTIATE_TEST_SUITE_P(
    Files, AsvtorchConfigsDryRunTest,
    ::testing::Values(AsvtorchFile("voxceleb/xvector", "voxceleb_xvector", AsvtorchVoxcelebBlocks()),
                      AsvtorchFile("sitw/xvector", "sitw_xvector", AsvtorchSitwBlocks()),
                      AsvcppFile("sitw/xvector", "asvcpp_sitw_xvector", AsvcppSitwBlocks())),
    [](const ::testing::TestParamInfo<DryRunFile>& param_info) { return param_info.param.label; });

}  // namespace
}  // namespace asv
