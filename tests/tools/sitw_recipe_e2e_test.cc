// sitw/xvector end to end on the tiny synthetic corpus (tools/make_demo_corpus.py --small:
// VoxCeleb1, VoxCeleb2 and SITW layouts): asvrun runs stages 0-9 with a tiny network trained on
// the per-video concatenations of VoxCeleb1 (with augmented copies) and VoxCeleb2, less a
// speaker of recipe.excluded_speakers_file and a video of recipe.excluded_utterance_prefixes,
// evaluates on both SITW lists during training and scores them in stage 9. Skipped when
// espeak-ng or ffmpeg is missing.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "asvcpp/db/database.h"
#include "tests/build_paths.h"
#include "tests/tools/sitw_tiny_configs.h"
#include "tests/tools/test_util.h"

namespace asv {
namespace {

namespace fs = std::filesystem;
using testing::CountLines;

// The sorted entries of `folder` (names only).
std::vector<std::string> SortedNames(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// utt2spk of a list or embedding folder as id -> speaker.
std::map<std::string, std::string> ReadUtt2Spk(const fs::path& file) {
  std::map<std::string, std::string> table;
  std::istringstream in(testing::Slurp(file));
  std::string id, speaker;
  while (in >> id >> speaker) table[id] = speaker;
  return table;
}

TEST(SitwRecipeE2eTest, TinyCorpusThroughEveryStage) {
  if (!testing::HaveDemoCorpusTools()) {
    GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
  }
  testing::ScratchDir dir("sitw_e2e");
  const auto corpus = testing::SetUpSitwDir(dir);
  ASSERT_EQ(corpus.status, 0) << corpus.err;

  // The first VoxCeleb1 speaker is excluded by a speaker list, the first video of the second by
  // its utterance-id prefix (in voxceleb1_cat, with its augmented copies).
  const auto speakers = SortedNames(dir / "corpus/voxceleb1/wav");
  ASSERT_GE(speakers.size(), 3u);
  const std::string excluded_speaker = speakers[0];
  const std::string excluded_video = speakers[1] + "-" + SortedNames(dir / "corpus/voxceleb1/wav" / speakers[1])[0];
  dir.Write("excluded_speakers.txt", excluded_speaker + "\n");
  const std::vector<std::string> args = {
      ASV_ASVRUN, "sitw/xvector", "tiny", "--run-configs", "configs/run_configs", "--set",
      "recipe.excluded_speakers_file='excluded_speakers.txt'", "--set",
      fmt::format("recipe.excluded_utterance_prefixes=['{}']", excluded_video)};

  // The dry run counts what the earlier stages of the run produce: nothing is missing.
  std::vector<std::string> dry = args;
  dry.push_back("--dry-run");
  const auto checked = testing::RunCommand(dry, dir.path());
  ASSERT_EQ(checked.status, 0) << checked.err;

  const auto run = testing::RunCommand(args, dir.path());
  ASSERT_EQ(run.status, 0) << run.err;

  db::Database database(dir / "out/experiments.db");
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, db::RunStatus::kFinished);
  std::vector<int> numbers;
  for (const auto& stage : database.Stages(runs[0].id)) numbers.push_back(stage.stage);
  EXPECT_EQ(numbers, (std::vector<int>{0, 1, 2, 5, 7, 9}));

  // Stage 0: one voxceleb1_cat utterance per video (2 per speaker), both SITW parts.
  const fs::path lists = dir / "out/datasets";
  EXPECT_EQ(CountLines(lists / "voxceleb1_cat/lists/utt2spk"), 2 * speakers.size());
  EXPECT_EQ(CountLines(lists / "voxceleb1_cat_combined/lists/utt2spk"), 4 * speakers.size());
  for (const char* part : {"sitw", "sitw_dev"}) {
    for (const char* list : {"sitw_trials_core_core.txt", "sitw_trials_core_multi.txt"}) {
      EXPECT_GT(CountLines(lists / part / "lists" / list), 0u) << part << "/" << list;
    }
  }

  // What the exclusions leave of the training and PLDA data.
  std::map<std::string, std::string> data = ReadUtt2Spk(lists / "voxceleb1_cat_combined/lists/utt2spk");
  const auto vox2 = ReadUtt2Spk(lists / "voxceleb2_cat/lists/utt2spk");
  data.insert(vox2.begin(), vox2.end());
  std::size_t left_out = 0;
  for (const auto& [id, speaker] : data) {
    left_out += speaker == excluded_speaker || id.rfind(excluded_video, 0) == 0;
  }
  // The speaker's 2 videos and the one video, and whichever augmented copies stage 2 drew of them.
  EXPECT_GE(left_out, 3u);
  EXPECT_NE(run.err.find(fmt::format("training data: {} of {} utterances left out", left_out, data.size())),
            std::string::npos)
      << run.err;
  const auto plda = ReadUtt2Spk(dir / "out/tiny_system/embeddings/plda.utt2spk");
  EXPECT_EQ(plda.size(), data.size() - left_out);
  for (const auto& [id, speaker] : plda) {
    EXPECT_NE(speaker, excluded_speaker) << id;
    EXPECT_NE(id.rfind(excluded_video, 0), 0u) << id;
  }

  // Both SITW lists: evaluated after each of the 2 epochs and scored by stage 9.
  std::map<std::string, std::size_t> trials = {
      {"sitw_core_core", CountLines(lists / "sitw/lists/sitw_trials_core_core.txt")},
      {"sitw_core_multi", CountLines(lists / "sitw/lists/sitw_trials_core_multi.txt")}};
  const auto results = database.Results({});
  ASSERT_EQ(results.size(), 6u);
  std::map<std::string, int> per_list;
  for (const auto& r : results) {
    ASSERT_EQ(trials.count(r.record.trial_list), 1u) << r.record.trial_list;
    ++per_list[r.record.trial_list];
    EXPECT_EQ(static_cast<std::size_t>(r.record.n_target + r.record.n_nontarget), trials[r.record.trial_list]);
    EXPECT_GT(r.record.n_target, 0);
    EXPECT_GE(r.record.eer, 0);
    EXPECT_LE(r.record.eer, 100);
  }
  EXPECT_EQ(per_list, (std::map<std::string, int>{{"sitw_core_core", 3}, {"sitw_core_multi", 3}}));
  EXPECT_EQ(results[0].record.stage, std::optional<int>(9));
  const fs::path scores = dir / "out/tiny_system/scores";
  EXPECT_EQ(CountLines(scores / "scores_sitw_trials_core_core.txt"), trials["sitw_core_core"]);
  EXPECT_EQ(CountLines(scores / "scores_sitw_trials_core_multi.txt"), trials["sitw_core_multi"]);

  const auto table = testing::RunCommand({ASV_ASVRUN, "results", "--db", "out/experiments.db", "--best"}, dir.path());
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("sitw_core_core"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("sitw_core_multi"), std::string::npos) << table.out;
}

// A speaker list with two fields on a line stops stage 5 with the file and line.
TEST(SitwRecipeE2eTest, BadSpeakerListNamesFileAndLine) {
  if (!testing::HaveDemoCorpusTools()) {
    GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
  }
  testing::ScratchDir dir("sitw_e2e_bad_list");
  const auto corpus = testing::SetUpSitwDir(dir);
  ASSERT_EQ(corpus.status, 0) << corpus.err;
  dir.Write("excluded_speakers.txt", "id10001\nid10002 id10003\n");
  const auto run = testing::RunCommand(
      {ASV_ASVRUN, "sitw/xvector", "tiny", "--run-configs", "configs/run_configs", "--set",
       "recipe.excluded_speakers_file='excluded_speakers.txt'", "--set", "recipe.augmentation_datasets={}", "--set",
       "recipe.training_datasets=['voxceleb2_cat']", "--set", "recipe.end_stage=5"},
      dir.path());
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.err.find("excluded_speakers.txt:2: expected one speaker id per line, found 2 fields"),
            std::string::npos)
      << run.err;
}

}  // namespace
}  // namespace asv
