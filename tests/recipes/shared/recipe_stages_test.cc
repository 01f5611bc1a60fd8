// Stage 0's requests (shared::ResolvePreparationJobs with the corpora each recipe knows), the
// list folders each corpus gives, what the dry run finds missing in a corpus folder, and the
// defaults of sitw/xvector (ASVtorch's sitw/xvector run.py).
#include "recipes/shared/recipe_stages.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/base/error.h"
#include "recipes/catalog.h"
#include "recipes/shared/xvector/xvector_settings.h"

namespace asv::recipes::shared {
namespace {

namespace stdfs = std::filesystem;

std::string PreparationError(const std::optional<std::vector<std::string>>& requested,
                             const settings::OrderedDict<std::string>& datasets,
                             const std::vector<std::string>& known) {
  try {
    ResolvePreparationJobs(requested, datasets, known);
  } catch (const DataError& e) {
    return e.what();
  }
  return "no error";
}

TEST(RecipeStagesTest, SitwRecipePreparesVoxCelebAndSitw) {
  const settings::OrderedDict<std::string> datasets = {
      {"sitw", "/s"}, {"musan", "/m"}, {"voxceleb2", "/v2"}, {"voxceleb1", "/v1"}};
  const auto all = ResolvePreparationJobs(std::nullopt, datasets, SitwPreparableDatasets());
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].name, "sitw");
  EXPECT_EQ(all[0].corpus, stdfs::path("/s"));
  EXPECT_EQ(all[1].name, "voxceleb2");
  EXPECT_EQ(all[2].name, "voxceleb1");
  // The VoxCeleb recipes leave SITW alone, and refuse it when asked.
  EXPECT_EQ(ResolvePreparationJobs(std::nullopt, datasets).size(), 2u);
  EXPECT_EQ(PreparationError(std::vector<std::string>{"sitw"}, datasets, PreparableDatasets()),
            "recipe.preparation_datasets: this recipe cannot prepare dataset 'sitw' (it knows: voxceleb1, voxceleb2)");
  // List folders that another corpus's preparation writes name that corpus.
  EXPECT_EQ(PreparationError(std::vector<std::string>{"sitw_dev"}, datasets, SitwPreparableDatasets()),
            "recipe.preparation_datasets: 'sitw_dev' is prepared together with 'sitw'; ask for 'sitw'");
  EXPECT_EQ(PreparationError(std::vector<std::string>{"voxceleb1_cat"}, datasets, SitwPreparableDatasets()),
            "recipe.preparation_datasets: 'voxceleb1_cat' is prepared together with 'voxceleb1'; ask for 'voxceleb1'");
  EXPECT_EQ(PreparationError(std::vector<std::string>{"sitw"}, {{"voxceleb1", "/v1"}}, SitwPreparableDatasets()),
            "recipe.preparation_datasets names 'sitw', which paths.datasets does not give a corpus folder for "
            "(paths.datasets has: voxceleb1)");
}

TEST(RecipeStagesTest, ListFoldersAndMissingPartsOfEachCorpus) {
  const stdfs::path dir = stdfs::temp_directory_path() / ("recipe_stages_test_" + std::to_string(::getpid()));
  stdfs::remove_all(dir);
  stdfs::create_directories(dir / "sitw/eval/lists");
  stdfs::create_directories(dir / "voxceleb2");
  const PreparationJob sitw{"sitw", dir / "sitw"};
  const PreparationJob vox1{"voxceleb1", dir / "voxceleb1"};
  const PreparationJob vox2{"voxceleb2", dir / "voxceleb2"};
  EXPECT_EQ(PreparedDatasetsOf(vox1), (std::vector<std::string>{"voxceleb1", "voxceleb1_cat"}));
  EXPECT_EQ(PreparedDatasetsOf(vox2), (std::vector<std::string>{"voxceleb2", "voxceleb2_cat"}));
  EXPECT_EQ(PreparedDatasetsOf(sitw), (std::vector<std::string>{"sitw"}));
  stdfs::create_directories(dir / "sitw/dev");
  EXPECT_EQ(PreparedDatasetsOf(sitw), (std::vector<std::string>{"sitw", "sitw_dev"}));

  const std::string enroll = (dir / "sitw/eval/lists/enroll-core.lst").string();
  EXPECT_EQ(MissingCorpusParts(sitw, "S"), (std::vector<std::string>{enroll + ": missing: SITW's eval part (S)"}));
  std::ofstream(enroll) << "00001 audio/abcde.flac\n";
  EXPECT_TRUE(MissingCorpusParts(sitw, "S").empty());
  EXPECT_EQ(MissingCorpusParts(vox1, "S"),
            (std::vector<std::string>{(dir / "voxceleb1").string() + ": no such folder (S)"}));
  EXPECT_EQ(MissingCorpusParts(vox2, "S"),
            (std::vector<std::string>{(dir / "voxceleb2").string() + ": neither dev/aac nor test/aac exists (S)"}));
  stdfs::remove_all(dir);
}

// sitw/xvector's recipe group: ASVtorch's sitw data as defaults (what `asvrun show` and `diff`
// compare with), voxceleb/xvector's own unchanged.
TEST(RecipeStagesTest, SitwDefaultsAreAsvtorchsSitwData) {
  const auto settings = FindRecipe("sitw/xvector").NewSettings();
  auto& sitw = dynamic_cast<xvector::XvectorSettings&>(*settings);
  const auto& r = sitw.recipe();
  const std::vector<std::string> both = {"voxceleb1_cat_combined", "voxceleb2_cat_combined"};
  EXPECT_EQ(r.training_datasets, both);
  EXPECT_EQ(r.plda_datasets, both);
  EXPECT_EQ(r.EvaluationPldaDatasets(), (std::vector<std::string>{"voxceleb1_cat_combined"}));
  EXPECT_EQ(r.excluded_utterance_prefixes, (std::vector<std::string>{"id11111-G2QZRjUB_VM"}));
  EXPECT_EQ(r.excluded_speakers_file, "");
  EXPECT_EQ(r.min_speech_frames, 500);
  EXPECT_EQ(r.min_utterances_per_speaker, 10);
  EXPECT_EQ(r.plda_speakers_during_training, 500);
  EXPECT_EQ(r.trial_dataset, "sitw");
  EXPECT_EQ(r.trial_lists.Keys(), (std::vector<std::string>{"sitw_core_core", "sitw_core_multi"}));
  EXPECT_EQ(*r.trial_lists.Find("sitw_core_multi"), "sitw_trials_core_multi.txt");
  EXPECT_EQ(r.training_trial_lists, (std::vector<std::string>{"sitw_core_core", "sitw_core_multi"}));
  for (const char* field : {"training_datasets", "evaluation_plda_datasets", "excluded_utterance_prefixes",
                            "trial_dataset", "trial_lists"}) {
    EXPECT_TRUE(sitw.tree().FindGroup("recipe")->Find(field)->IsDefault()) << field;
  }

  const auto vox = FindRecipe("voxceleb/xvector").NewSettings();
  const auto& v = dynamic_cast<xvector::XvectorSettings&>(*vox).recipe();
  EXPECT_EQ(v.training_datasets, (std::vector<std::string>{"voxceleb2_cat_combined"}));
  EXPECT_EQ(v.EvaluationPldaDatasets(), (std::vector<std::string>{"voxceleb2_cat_combined"}));
  EXPECT_TRUE(v.excluded_utterance_prefixes.empty());
  EXPECT_EQ(v.trial_dataset, "voxceleb1");
}

}  // namespace
}  // namespace asv::recipes::shared
