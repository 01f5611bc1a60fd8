// asvrun as users call it: exit codes, what is printed, what is (not) written.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "asvcpp/base/fs.h"
#include "asvcpp/db/database.h"
#include "tests/build_paths.h"
#include "tests/tools/test_util.h"

namespace asv {
namespace {

namespace fs = std::filesystem;
using testing::RunCommand;
using testing::ScratchDir;
using testing::CommandResult;

// A small recipe folder: run_configs/voxceleb/xvector/{init_config,run_configs} in `dir`.
void WriteRecipe(const ScratchDir& dir, const std::string& run_configs, const std::string& init_config = "") {
  dir.Write("run_configs/voxceleb/xvector/run_configs", run_configs);
  dir.Write("run_configs/voxceleb/xvector/init_config",
            init_config.empty() ? "paths.output_folder = 'out'\n" : init_config);
}

// Configs whose stage range selects no stage: runs that record everything and execute nothing.
constexpr const char* kNoStageConfigs =
    "# Base of the tests\n"
    "base\n"
    "recipe.start_stage = 10\n"
    "recipe.end_stage = 10\n"
    "network.max_epochs = 7\n"
    "\n"
    "# A child\n"
    "child < base\n"
    "network.frame_layer_size: int = 256\n";

CommandResult Asvrun(const ScratchDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), ASV_ASVRUN);
  return RunCommand(args, dir.path());
}

TEST(AsvrunTest, RunRecordsResolvedSettingsInTheDatabase) {
  ScratchDir dir("asvrun_run");
  WriteRecipe(dir, kNoStageConfigs);
  const auto r = Asvrun(dir, {"voxceleb/xvector", "child", "base", "--set", "network.max_epochs=9"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(fs::exists(dir / "out/experiments.db"));
  db::Database database(dir / "out/experiments.db");
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 2u);
  // Newest first: base ran after child.
  EXPECT_EQ(runs[0].info.config, "base");
  EXPECT_EQ(runs[1].info.config, "child");
  const auto& child = runs[1];
  EXPECT_EQ(child.status, db::RunStatus::kFinished);
  EXPECT_EQ(child.info.recipe, "voxceleb/xvector");
  EXPECT_EQ(child.info.parent_chain, std::vector<std::string>{"base"});
  EXPECT_NE(child.info.command_line.find("--set network.max_epochs=9"), std::string::npos);
  EXPECT_EQ(child.info.pid > 0, true);
  EXPECT_FALSE(child.info.host.empty());
  EXPECT_TRUE(child.end_time.has_value());
  EXPECT_EQ(child.info.settings_hash.size(), 16u);
  const auto settings = nlohmann::json::parse(child.info.settings_json);
  EXPECT_EQ(settings["network.max_epochs"], 9);
  EXPECT_EQ(settings["network.frame_layer_size"], 256);
  EXPECT_EQ(settings["recipe.start_stage"], 10);
  EXPECT_EQ(fs::path(child.info.output_folder), fs::weakly_canonical(dir / "out"));
  // Different configs, different hashes.
  EXPECT_NE(runs[0].info.settings_hash, child.info.settings_hash);

  const auto listed = Asvrun(dir, {"runs"});
  ASSERT_EQ(listed.status, 0) << listed.err;
  EXPECT_NE(listed.out.find("finished  voxceleb/xvector  child"), std::string::npos) << listed.out;
}

TEST(AsvrunTest, EveryProblemIsReportedAndNothingRuns) {
  ScratchDir dir("asvrun_bad");
  WriteRecipe(dir,
              "base\n"
              "network.frame_layer_sise = 512\n"
              "network.max_epochs = 'ten'\n"
              "\n"
              "child < bas\n"
              "recipe.start_stage = 0\n",
              "paths.output_folder = 'out'\ncomputing.gpu_id = (0,)\n");
  const auto r = Asvrun(dir, {"voxceleb/xvector", "child", "nonexistent"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("did you mean 'frame_layer_size'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'gpu_ids'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run_configs/voxceleb/xvector/run_configs:3:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'bas'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no config named 'nonexistent'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was run"), std::string::npos) << r.err;
  // Nothing is written: no output folder, no database.
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(AsvrunTest, ProblemsInOtherConfigsDoNotStopARunButListReportsThem) {
  ScratchDir dir("asvrun_elsewhere");
  // A config being written while others run: its errors concern no other config.
  WriteRecipe(dir, std::string(kNoStageConfigs) +
                       "\n"
                       "draft < child\n"
                       "network.frame_layer_sise = 512\n"
                       "network.max_epochs = [1,\n");
  const auto run = Asvrun(dir, {"voxceleb/xvector", "child"});
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err.find("run_configs:1"), std::string::npos) << run.err;  // nothing about lines 11-13
  EXPECT_NE(run.err.find("run 1 (child) finished"), std::string::npos) << run.err;
  const auto show = Asvrun(dir, {"show", "voxceleb/xvector", "base"});
  EXPECT_EQ(show.status, 0) << show.err;
  EXPECT_NE(show.out.find("network.max_epochs = 7"), std::string::npos) << show.out;
  // The draft itself, and `asvrun list` (the whole file), report them.
  for (const auto& args : {std::vector<std::string>{"voxceleb/xvector", "draft"},
                           std::vector<std::string>{"list", "voxceleb/xvector"}}) {
    const auto r = Asvrun(dir, args);
    EXPECT_EQ(r.status, 2) << args[0];
    EXPECT_NE(r.err.find("did you mean 'frame_layer_size'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("run_configs/voxceleb/xvector/run_configs:13:"), std::string::npos) << r.err;
  }
}

TEST(AsvrunTest, UnknownConfigSuggestsTheClosestName) {
  ScratchDir dir("asvrun_unknown");
  WriteRecipe(dir, kNoStageConfigs);
  const auto r = Asvrun(dir, {"voxceleb/xvector", "chlid"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no config named 'chlid'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'child'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(AsvrunTest, BadSetValueIsAConfigError) {
  ScratchDir dir("asvrun_set");
  WriteRecipe(dir, kNoStageConfigs);
  const auto r = Asvrun(dir, {"voxceleb/xvector", "base", "--set", "network.max_epochs=many"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--set network.max_epochs"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(AsvrunTest, ShowPrintsNonDefaultValuesAndExplains) {
  ScratchDir dir("asvrun_show");
  WriteRecipe(dir, kNoStageConfigs);
  const auto r = Asvrun(dir, {"show", "voxceleb/xvector", "child", "--explain"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("# voxceleb/xvector child < base"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("network.max_epochs = 7  # run config 'base' (run_configs/voxceleb/xvector/run_configs:5)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("network.frame_layer_size = 256  # run config 'child' (run_configs/voxceleb/xvector/run_configs:9)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("paths.output_folder = 'out'  # init config run_configs/voxceleb/xvector/init_config:1"),
            std::string::npos)
      << r.out;
  // Defaults are left out unless --all.
  EXPECT_EQ(r.out.find("network.stat_size"), std::string::npos);
  const auto all = Asvrun(dir, {"show", "voxceleb/xvector", "child", "--all"});
  ASSERT_EQ(all.status, 0) << all.err;
  EXPECT_NE(all.out.find("network.stat_size = 1500"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(AsvrunTest, ListShowsParentsAndFirstComment) {
  ScratchDir dir("asvrun_list");
  WriteRecipe(dir, kNoStageConfigs);
  const auto r = Asvrun(dir, {"list", "voxceleb/xvector"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("base             Base of the tests"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("child   < base   A child"), std::string::npos) << r.out;
}

// The direct dependencies (NEEDED entries) of an ELF executable, from `readelf -d`.
std::string NeededLibraries(const std::string& executable) {
  const auto r = testing::RunCommand({"readelf", "-d", executable}, fs::temp_directory_path());
  EXPECT_EQ(r.status, 0) << r.err;
  std::string needed;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("(NEEDED)") != std::string::npos) needed += line.substr(line.find('[')) + "\n";
  }
  return needed;
}

TEST(AsvrunTest, FrontEndLinksNoLibTorchAndHandsRunsAndInfoToAsvrunTorch) {
  // asvrun starts without loading LibTorch (show, list, runs, results, ... in milliseconds);
  // asvrun-torch beside it links LibTorch and runs configs and `info`.
  const fs::path torch = fs::path(ASV_ASVRUN).parent_path() / "asvrun-torch";
  const std::string front_needed = NeededLibraries(ASV_ASVRUN);
  const std::string torch_needed = NeededLibraries(torch.string());
  EXPECT_NE(front_needed.find("libc"), std::string::npos) << front_needed;
  EXPECT_EQ(front_needed.find("torch"), std::string::npos) << front_needed;
  EXPECT_EQ(front_needed.find("c10"), std::string::npos) << front_needed;
  EXPECT_NE(torch_needed.find("torch"), std::string::npos) << torch_needed;
  // Nor the audio decoders (FFmpeg's libraries and their codecs cost ~50 ms at start-up): the Kaldi
  // tools run in asvrun-kaldi.
  EXPECT_EQ(front_needed.find("libav"), std::string::npos) << front_needed;
  EXPECT_EQ(front_needed.find("sndfile"), std::string::npos) << front_needed;
  const std::string kaldi_needed = NeededLibraries((fs::path(ASV_ASVRUN).parent_path() / "asvrun-kaldi").string());
  EXPECT_NE(kaldi_needed.find("sndfile"), std::string::npos) << kaldi_needed;
  EXPECT_EQ(kaldi_needed.find("torch"), std::string::npos) << kaldi_needed;

  ScratchDir dir("asvrun_front_end");
  WriteRecipe(dir, kNoStageConfigs);
  const auto info = Asvrun(dir, {"info"});
  ASSERT_EQ(info.status, 0) << info.err;
  EXPECT_NE(info.out.find("LibTorch: "), std::string::npos) << info.out;

  // A copy of asvrun without asvrun-torch beside it still shows configs, and says what is
  // missing when asked to run one.
  fs::create_directories(dir / "bin");
  fs::copy_file(ASV_ASVRUN, dir / "bin/asvrun");
  const std::string copy = (dir / "bin/asvrun").string();
  const auto show = testing::RunCommand({copy, "show", "voxceleb/xvector", "child"}, dir.path());
  ASSERT_EQ(show.status, 0) << show.err;
  EXPECT_NE(show.out.find("network.frame_layer_size = 256"), std::string::npos) << show.out;
  const auto run = testing::RunCommand({copy, "voxceleb/xvector", "child"}, dir.path());
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.err.find("cannot start " + (dir / "bin/asvrun-torch").string() + ": No such file or directory"),
            std::string::npos)
      << run.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(AsvrunTest, DryRunShowsStagesAndWritesNothing) {
  ScratchDir dir("asvrun_dry");
  WriteRecipe(dir, "all\nrecipe.start_stage = 0\nrecipe.end_stage = 9\n\nnet\nrecipe.start_stage = 5\nrecipe.end_stage = 5\n");
  const auto r = Asvrun(dir, {"voxceleb/xvector", "all", "net", "--dry-run"});
  // Nothing here exists (corpus, mfcc.conf, features): the dry run says so and fails.
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("missing inputs: the run would stop at the stage that reads them"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("stage 0 prepare"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stage 9 scoring"), std::string::npos) << r.out;
  const auto net = r.out.substr(r.out.find("config net"));
  EXPECT_NE(net.find("stage 5 train"), std::string::npos);
  EXPECT_EQ(net.find("stage 0"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "out"));
}

// --dry-run checks what each stage would read, counting what earlier stages of the same run
// produce, so that a dry run that passes means no stage stops for a missing input.
TEST(AsvrunTest, DryRunChecksTheInputsOfEveryStage) {
  ScratchDir dir("asvrun_dry_inputs");
  WriteRecipe(dir,
              "all\nrecipe.start_stage = 0\nrecipe.end_stage = 9\nrecipe.preparation_datasets = ['voxceleb1']\n"
              "recipe.feature_extraction_datasets = ['voxceleb1']\nrecipe.training_datasets = ['voxceleb1']\n"
              "recipe.plda_datasets = ['voxceleb1']\nrecipe.trial_lists = {'o': 'veri_test.txt'}\n"
              "recipe.training_trial_lists = ['o']\n",
              "paths.output_folder = 'out'\npaths.datasets = {'voxceleb1': 'vox1'}\n");
  fs::copy_file(fs::path(ASV_SOURCE_DIR) / "run_configs/voxceleb/xvector/mfcc.conf",
                dir / "run_configs/voxceleb/xvector/mfcc.conf");
  auto r = Asvrun(dir, {"voxceleb/xvector", "all", "--dry-run"});
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.out.find("missing input: " + (dir / "vox1").string() + ": no such folder (paths.datasets['voxceleb1'])"),
            std::string::npos)
      << r.out;
  fs::create_directories(dir / "vox1/wav");
  r = Asvrun(dir, {"voxceleb/xvector", "all", "--dry-run"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;  // stages 1-9 read what the stages before them write
  EXPECT_EQ(r.out.find("missing input"), std::string::npos) << r.out;
  // The training step's memory is estimated (the head is not known before stage 0 lists the speakers).
  EXPECT_NE(r.out.find("    memory: stage 5 (train): about "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("64 clips of 400 frames per rank"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the head is not counted in full"), std::string::npos) << r.out;
  // A minibatch no machine holds is refused before anything runs, with the largest that fits.
  r = Asvrun(dir, {"voxceleb/xvector", "all", "--dry-run", "--set", "network.minibatch_size=1048576"});
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("1 training step would not fit in memory:\n  stage 5 (train): about "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("so lower network.minibatch_size to at most "), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out/experiments.db"));

  // From stage 7 on, the network, the features and a trial list must exist already.
  r = Asvrun(dir, {"voxceleb/xvector", "all", "--dry-run", "--set", "recipe.start_stage=7"});
  EXPECT_EQ(r.status, 3);
  const fs::path lists = dir / "out/kaldi/voxceleb1/lists";
  for (const std::string& line :
       {(dir / "out/system1/networks/epoch.1.pt").string() + ": missing: no trained network",
        (lists / "feats.scp").string() + ": missing: dataset 'voxceleb1' of recipe.plda_datasets has no features",
        lists.string() + ": no trial list of recipe.trial_lists exists"}) {
    EXPECT_NE(r.out.find("missing input: " + line), std::string::npos) << line << "\n" << r.out;
  }
  EXPECT_EQ(r.out.find("stage 9 scoring\n    missing input"), std::string::npos) << "stage 7 writes the embeddings";
  r = Asvrun(dir, {"voxceleb/xvector", "all", "--dry-run", "--set", "recipe.start_stage=9", "--set",
                   "recipe.selected_epoch=3"});
  EXPECT_NE(r.out.find("embeddings/plda.scp: missing (stage 7 writes the embeddings)"), std::string::npos) << r.out;

  dir.Write("out/system1/networks/epoch.1.pt", "x");
  dir.Write("out/kaldi/voxceleb1/lists/feats.scp", "x");
  dir.Write("out/kaldi/voxceleb1/lists/veri_test.txt", "x");
  r = Asvrun(dir, {"voxceleb/xvector", "all", "--dry-run", "--set", "recipe.start_stage=7"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  // A selected epoch that was never written is reported.
  r = Asvrun(dir, {"voxceleb/xvector", "all", "--dry-run", "--set", "recipe.start_stage=7", "--set",
                   "recipe.selected_epoch=4"});
  EXPECT_NE(r.out.find("epoch.4.pt: missing: recipe.selected_epoch = 4"), std::string::npos) << r.out;
}

// Names that become path components and paths that go into Kaldi specifiers are checked when the
// config is read (exit 2, file:line), before anything runs.
TEST(AsvrunTest, NamesAndPathsThatWouldEscapeOrBreakOutputsAreConfigErrors) {
  ScratchDir dir("asvrun_names");
  WriteRecipe(dir, "net\nrecipe.feature_extraction_datasets = ['../../victim']\n\nok\nrecipe.end_stage = 9\n");
  auto r = Asvrun(dir, {"show", "voxceleb/xvector", "net"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("run_configs:2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("recipe.feature_extraction_datasets: dataset name '../../victim' is not a plain name"),
            std::string::npos)
      << r.err;
  r = Asvrun(dir, {"voxceleb/xvector", "ok", "--dry-run", "--set", "paths.system_folder=exp,lr0.2"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--set paths.system_folder=exp,lr0.2: error: paths.system_folder 'exp,lr0.2' contains ','"),
            std::string::npos)
      << r.err;
  r = Asvrun(dir, {"show", "voxceleb/xvector", "ok", "--json", "--set", "paths.system_folder=out\377"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("not valid UTF-8 (byte 0xff at offset 3)"), std::string::npos) << r.err;
  r = Asvrun(dir, {"show", "voxceleb/xvector", "ok", "--set", "recipe.trial_lists={'o': '../veri_test.txt'}"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("trial-list name or file name '../veri_test.txt' is not a plain name"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(AsvrunTest, ASecondRunOfASystemFolderIsRefusedNamingTheFirst) {
  ScratchDir dir("asvrun_folder_lock");
  WriteRecipe(dir, kNoStageConfigs);
  // Another run holds out/system1 (the default paths.system_folder): its lock and holder text.
  fs::create_directories(dir / "out/system1");
  const int fd = ::open((dir / "out/system1/.asvrun.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  const std::string holder =
      R"({"run_id":41,"config":"other","host":"node7","pid":1,"since":"2026-11-28T10:00:00.000Z"})";
  ASSERT_EQ(::write(fd, holder.data(), holder.size()), static_cast<ssize_t>(holder.size()));
  const auto refused = Asvrun(dir, {"voxceleb/xvector", "base"});
  EXPECT_EQ(refused.status, 5);
  EXPECT_NE(refused.err.find("out/system1 is in use by run 41 (config 'other', host node7, pid 1, since "
                             "2026-11-28T10:00:00.000Z)"),
            std::string::npos)
      << refused.err;
  if (fs::exists(dir / "out/experiments.db")) {
    EXPECT_TRUE(db::Database(dir / "out/experiments.db").ListRuns().empty());  // refused before it was recorded
  }
  ::close(fd);  // the other run ends
  const auto ran = Asvrun(dir, {"voxceleb/xvector", "base"});
  EXPECT_EQ(ran.status, 0) << ran.err;
}

TEST(AsvrunTest, NonsenseMarginsAndEpochsAreConfigErrors) {
  ScratchDir dir("asvrun_margin_ranges");
  const std::string root = std::string(ASV_SOURCE_DIR) + "/run_configs";
  const auto show = [&](const std::string& set) {
    return Asvrun(dir, {"show", "voxceleb/margin", "demo", "--config-root", root, "--set", set});
  };
  ASSERT_EQ(show("recipe.final_margin=0.2").status, 0);
  for (const auto& [set, message] : std::vector<std::pair<std::string, std::string>>{
           {"recipe.final_margin=1e308", "recipe.final_margin must be in [0, 1.5707963267948966), got 1e+308"},
           {"recipe.final_margin=1.5707963267948966",
            "recipe.final_margin must be in [0, 1.5707963267948966), got 1.5707963267948966"},
           {"recipe.lm_margin=1.6", "recipe.lm_margin must be in [0, 1.5707963267948966), got 1.6"},
           {"network.embedding_size=100000", "network.embedding_size must be in [1, 8192], got 100000"},
           {"recipe.num_mel_bins=100000", "recipe.num_mel_bins must be in [8, 256], got 100000"},
           {"recipe.warm_up_epochs=17", "recipe.warm_up_epochs (17) must be <= network.max_epochs (16)"},
           {"recipe.lm_warm_up_epochs=3", "recipe.lm_warm_up_epochs (3) must be <= recipe.lm_epochs (2)"},
           {"recipe.lm_resume_epoch=-1", "recipe.lm_resume_epoch"}}) {
    const auto r = show(set);
    EXPECT_EQ(r.status, 2) << set;
    EXPECT_NE(r.err.find(message), std::string::npos) << set << "\n" << r.err;
  }
}

TEST(AsvrunTest, FailedStageMarksTheRunFailed) {
  ScratchDir dir("asvrun_fail");
  // Stage 0 cannot prepare anything here: the run must end as failed with the error recorded.
  WriteRecipe(dir, "prep\nrecipe.start_stage = 0\nrecipe.end_stage = 0\n",
              "paths.output_folder = 'out'\npaths.datasets = {'voxceleb1': 'missing/vox1'}\n");
  const auto r = Asvrun(dir, {"voxceleb/xvector", "prep"});
  EXPECT_NE(r.status, 0);
  db::Database database(dir / "out/experiments.db");
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, db::RunStatus::kFailed);
  ASSERT_TRUE(runs[0].error_text.has_value());
  const auto stages = database.Stages(runs[0].id);
  ASSERT_EQ(stages.size(), 1u);
  EXPECT_EQ(stages[0].stage, 0);
  EXPECT_EQ(stages[0].status, db::RunStatus::kFailed);
}

TEST(AsvrunTest, ResultsAndDiffReadTheDatabase) {
  ScratchDir dir("asvrun_results");
  WriteRecipe(dir, kNoStageConfigs);
  ASSERT_EQ(Asvrun(dir, {"voxceleb/xvector", "base", "child"}).status, 0);
  {
    db::Database database(dir / "out/experiments.db");
    const auto runs = database.ListRuns();
    const auto base = runs[1].id;
    const auto child = runs[0].id;
    auto result = [](int epoch, double eer) {
      db::ResultRecord r;
      r.epoch = epoch;
      r.trial_list = "vox1_original";
      r.eer = eer;
      r.min_dcf = eer / 10;
      r.p_target = 0.05;
      r.c_miss = 1;
      r.c_fa = 1;
      r.n_target = 100;
      r.n_nontarget = 200;
      return r;
    };
    database.RecordResult(base, result(1, 9.5));
    db::ResultRecord with_costs = result(2, 7.25);
    with_costs.cllr = 0.5;
    with_costs.min_cllr = 0.25;
    with_costs.costs = {{0.05, 1, 1, 0.725, 0.875}, {0.01, 1, 1, 0.8125, std::nullopt}};
    database.RecordResult(base, with_costs);
    database.RecordResult(child, result(1, 8.0));
    db::EpochRecord epoch;
    epoch.epoch = 2;
    epoch.loss = 1.25;
    epoch.accuracy = 62.5;
    epoch.learning_rate = 0.1;
    epoch.seconds = 30.25;
    epoch.frames_per_second = 27000;
    epoch.val_loss = 1.5;
    epoch.data_wait_percent = 0.625;
    database.RecordEpoch(base, epoch);
    epoch.epoch = 1;
    epoch.loss = std::numeric_limits<double>::quiet_NaN();
    epoch.val_loss.reset();
    epoch.data_wait_percent.reset();
    database.RecordEpoch(base, epoch);
  }
  const auto best = Asvrun(dir, {"results", "--best", "--format", "csv"});
  ASSERT_EQ(best.status, 0) << best.err;
  // One min_dcf and act_dcf column per operating point of the results' costs, then Cllr and
  // minCllr; empty where a result has none.
  EXPECT_EQ(best.out.substr(0, best.out.find('\n')),
            "run,recipe,config,stage,epoch,trial_list,eer_percent,min_dcf,p_target,min_dcf(0.05),min_dcf(0.01),"
            "act_dcf(0.05),act_dcf(0.01),cllr,min_cllr,targets,nontargets");
  EXPECT_NE(best.out.find("voxceleb/xvector,base,,2,vox1_original,7.2500,0.7250,0.05,0.7250,0.8125,0.8750,,0.5000,"
                          "0.2500,100,200"),
            std::string::npos)
      << best.out;
  EXPECT_NE(best.out.find("voxceleb/xvector,child,,1,vox1_original,8.0000"), std::string::npos) << best.out;
  EXPECT_EQ(best.out.find("9.5000"), std::string::npos);
  const auto json = Asvrun(dir, {"results", "--format", "json", "--config", "base"});
  ASSERT_EQ(json.status, 0) << json.err;
  const auto parsed_results = nlohmann::json::parse(json.out);
  ASSERT_EQ(parsed_results.size(), 2u);
  EXPECT_EQ(parsed_results[0]["min_cllr"], 0.25);  // newest first
  ASSERT_EQ(parsed_results[0]["costs"].size(), 2u);
  EXPECT_EQ(parsed_results[0]["costs"][1]["p_target"], 0.01);
  EXPECT_TRUE(parsed_results[0]["costs"][1]["act_dcf"].is_null());
  EXPECT_TRUE(parsed_results[1]["cllr"].is_null());
  const auto results_table = Asvrun(dir, {"results", "--config", "base"});
  ASSERT_EQ(results_table.status, 0) << results_table.err;
  EXPECT_NE(results_table.out.find("min_dcf(0.01)"), std::string::npos) << results_table.out;
  EXPECT_EQ(results_table.out.find("act_dcf"), std::string::npos) << results_table.out;  // CSV and JSON only

  const auto epochs = Asvrun(dir, {"epochs", "1", "--format", "csv"});
  ASSERT_EQ(epochs.status, 0) << epochs.err;
  EXPECT_EQ(epochs.out,
            "epoch,loss,accuracy_percent,learning_rate,seconds,frames_per_second,val_loss,val_accuracy_percent,"
            "data_wait_percent\n"
            "1,nan,62.50,0.1,30.2,27000,,,\n"
            "2,1.2500,62.50,0.1,30.2,27000,1.5000,,0.6\n");
  const auto epochs_json = Asvrun(dir, {"epochs", "1", "--format", "json"});
  ASSERT_EQ(epochs_json.status, 0) << epochs_json.err;
  const auto parsed = nlohmann::json::parse(epochs_json.out);
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_TRUE(parsed[0]["loss"].is_null());
  EXPECT_TRUE(parsed[0]["data_wait_percent"].is_null());
  EXPECT_EQ(parsed[1]["data_wait_percent"].get<double>(), 0.625);
  const auto table = Asvrun(dir, {"epochs", "1"});
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("# run 1: voxceleb/xvector base (finished)"), std::string::npos) << table.out;
  const auto missing = Asvrun(dir, {"epochs", "99"});
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.err.find("no run 99"), std::string::npos) << missing.err;

  const auto diff = Asvrun(dir, {"diff", "1", "2"});
  ASSERT_EQ(diff.status, 0) << diff.err;
  EXPECT_NE(diff.out.find("network.frame_layer_size: 512 -> 256"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("7.2500"), std::string::npos) << diff.out;
}

// `asvrun plot` through the executable, on the recipe's default database (as the other reading
// commands find it); the figures themselves are checked in tests/asvcpp/plot.
TEST(AsvrunTest, PlotDrawsDetAndTrainingCurvesOfARecordedRun) {
  ScratchDir dir("asvrun_plot");
  WriteRecipe(dir, kNoStageConfigs);
  std::string id;
  {
    db::Database database(dir / "out/experiments.db");
    db::RunInfo info;
    info.recipe = "voxceleb/xvector";
    info.config = "base";
    info.output_folder = (dir / "out").string();
    const auto run = database.BeginRun(info);
    id = std::to_string(run);
    for (int e = 1; e <= 3; ++e) {
      db::EpochRecord epoch;
      epoch.epoch = e;
      epoch.loss = 3.0 / e;
      database.RecordEpoch(run, epoch);
    }
    dir.Write("out/scores/det_vox1_o.tsv",
              "p_miss\tp_fa\tprobit_miss\tprobit_fa\tthreshold\n0.01\t0.3\t0\t0\t-1\n0.1\t0.1\t0\t0\t0\n"
              "0.3\t0.02\t0\t0\t1\n");
    db::ArtifactRecord det;
    det.kind = "det";
    det.path = "scores/det_vox1_o.tsv";  // relative to the run's output folder
    database.RecordArtifact(run, det);
    database.FinishRun(run, db::RunStatus::kFinished);
  }
  const auto det = Asvrun(dir, {"plot", "det", id, "--out", "det.svg", "--title", "DET"});
  ASSERT_EQ(det.status, 0) << det.err;
  EXPECT_NE(testing::Slurp(dir / "det.svg").find("<svg"), std::string::npos);
  const auto loss = Asvrun(dir, {"plot", "curves", id, "--metric", "loss", "--out", "loss.png"});
  ASSERT_EQ(loss.status, 0) << loss.err;
  EXPECT_EQ(testing::Slurp(dir / "loss.png").substr(0, 4), "\x89PNG");
  EXPECT_EQ(Asvrun(dir, {"plot", "det", "999", "--out", "x.png"}).status, 4);
  const auto no_list = Asvrun(dir, {"plot", "det", id, "--list", "sitw", "--out", "x.png"});
  EXPECT_EQ(no_list.status, 3);
  EXPECT_NE(no_list.err.find("'sitw'"), std::string::npos) << no_list.err;
  EXPECT_EQ(Asvrun(dir, {"plot", "det", id, "--out", "x.jpg"}).status, 2);
}

TEST(AsvrunTest, ConcurrentAsvrunProcessesShareOneDatabase) {
  ScratchDir dir("asvrun_concurrent");
  WriteRecipe(dir, kNoStageConfigs);
  // 8 asvrun processes started at once, each recording two runs in the same database (each with
  // its own system folder: one run at a time writes one).
  std::string script = "pids=''; for i in 1 2 3 4 5 6 7 8; do " + testing::ShellQuote(ASV_ASVRUN) +
                       " voxceleb/xvector base child --set network.max_epochs=$i --set paths.system_folder=s$i"
                       " >log.$i 2>&1 & pids=\"$pids $!\"; done;"
                       " status=0; for p in $pids; do wait $p || status=1; done; exit $status";
  const auto r = RunCommand({"/bin/sh", "-c", script}, dir.path());
  ASSERT_EQ(r.status, 0) << testing::Slurp(dir / "log.1");
  db::Database database(dir / "out/experiments.db");
  const auto runs = database.ListRuns();
  ASSERT_EQ(runs.size(), 16u);
  std::map<int, int> per_value;
  for (const auto& run : runs) {
    EXPECT_EQ(run.status, db::RunStatus::kFinished);
    ++per_value[nlohmann::json::parse(run.info.settings_json)["network.max_epochs"].get<int>()];
  }
  ASSERT_EQ(per_value.size(), 8u);
  for (const auto& [value, count] : per_value) EXPECT_EQ(count, 2) << value;
  EXPECT_EQ(database.IntegrityCheck(), "ok");
}

TEST(AsvrunTest, EvalComputesEerAndMinDcfOfAScoreFile) {
  ScratchDir dir("asvrun_eval");
  // 4 targets (scores 4 3 2 0.5), 4 non-targets (1 0 -1 -2): one target below one non-target.
  dir.Write("trials", "a b target\nc d target\ne f target\ng h target\n"
                      "a c nontarget\nb d nontarget\ne g nontarget\nf h nontarget\n");
  dir.Write("scores", "4\n3\n2\n0.5\n1\n0\n-1\n-2\n");
  const auto r = Asvrun(dir, {"eval", "--scores", "scores", "--trials", "trials", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // ASVtorch's definition: sorted scores -2 -1 0 0.5 1 2 3 4; at k = 4 FRR = 1/4, FAR = 1/4.
  EXPECT_DOUBLE_EQ(j["eer_percent"].get<double>(), 25.0);
  // No ties: the tie-aware EER crosses exactly at that point (rejecting <= 0.5: FRR = FAR = 1/4).
  EXPECT_DOUBLE_EQ(j["tie_aware_eer_percent"].get<double>(), 25.0);
  EXPECT_DOUBLE_EQ(j["tie_aware_eer_threshold"].get<double>(), 0.5);
  EXPECT_EQ(j["ties_decide_eer"], false);
  EXPECT_EQ(r.err.find("tied scores"), std::string::npos) << r.err;
  EXPECT_EQ(j["targets"], 4);
  EXPECT_EQ(j["nontargets"], 4);
  ASSERT_EQ(j["min_dcf"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["min_dcf"][0]["p_target"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(j["min_dcf"][1]["p_target"].get<double>(), 0.01);
  // Scores read as LLRs. PAV bins of the sorted labels 0 0 0 1 0 1 1 1: {-2}, {-1}, {0}, {0.5, 1}
  // at 1/2, {2}, {3}, {4}: only the tied bin costs log 2 per trial, minCllr = 0.25 bit.
  EXPECT_NEAR(j["min_cllr"].get<double>(), 0.25, 1e-15);
  const double cllr = (std::log1p(std::exp(-4.0)) + std::log1p(std::exp(-3.0)) + std::log1p(std::exp(-2.0)) +
                       std::log1p(std::exp(-0.5)) + std::log1p(std::exp(1.0)) + std::log1p(std::exp(0.0)) +
                       std::log1p(std::exp(-1.0)) + std::log1p(std::exp(-2.0))) /
                      4.0 / (2.0 * std::log(2.0));
  EXPECT_NEAR(j["cllr"].get<double>(), cllr, 1e-14);
  // Bayes threshold log 19 = 2.94 at 0.05: targets 2 and 0.5 missed, no false alarm.
  ASSERT_EQ(j["act_dcf"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["act_dcf"][0]["value"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["act_dcf"][1]["value"].get<double>(), 1.0);  // log 99: every target missed
  const auto three = Asvrun(dir, {"eval", "--scores", "scores", "--trials", "trials", "--json", "--p-target", "0.5",
                                  "--p-target", "0.01", "--p-target", "0.001", "--det", "det.tsv"});
  ASSERT_EQ(three.status, 0) << three.err;
  const auto j3 = nlohmann::json::parse(three.out);
  ASSERT_EQ(j3["min_dcf"].size(), 3u);
  EXPECT_DOUBLE_EQ(j3["min_dcf"][0]["p_target"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j3["act_dcf"][2]["p_target"].get<double>(), 0.001);
  // Only DET point k = 4 (FRR = FAR = 1/4) has both rates strictly between 0 and 1.
  const std::string det = asv::fs::ReadFile(dir / "det.tsv");
  EXPECT_EQ(det.substr(0, det.find('\n') + 1), "p_miss\tp_fa\tprobit_miss\tprobit_fa\tthreshold\n");
  const std::string row = "0.25\t0.25\t-0.674489750196081";  // probit(1/4) = -0.6744897501960817
  EXPECT_EQ(det.substr(det.find('\n') + 1, row.size()), row) << det;
  EXPECT_EQ(det.substr(det.size() - 5), "\t0.5\n") << det;
  EXPECT_EQ(std::count(det.begin(), det.end(), '\n'), 2) << det;
  // Every score equal: ASVtorch's EER (targets first within the tie) is 100 %, the tie-aware 50 %,
  // with a warning and both in the text output.
  dir.Write("tied", "1\n1\n1\n1\n1\n1\n1\n1\n");
  const auto tied = Asvrun(dir, {"eval", "--scores", "tied", "--trials", "trials", "--json"});
  ASSERT_EQ(tied.status, 0) << tied.err;
  const auto jt = nlohmann::json::parse(tied.out);
  EXPECT_DOUBLE_EQ(jt["eer_percent"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(jt["tie_aware_eer_percent"].get<double>(), 50.0);
  EXPECT_EQ(jt["ties_decide_eer"], true);
  EXPECT_NE(tied.err.find("tied scores decide the EER: 100.0000 %"), std::string::npos) << tied.err;
  const auto tied_text = Asvrun(dir, {"eval", "--scores", "tied", "--trials", "trials"});
  ASSERT_EQ(tied_text.status, 0) << tied_text.err;
  EXPECT_NE(tied_text.out.find("EER = 100.0000 %  (threshold 1)  tie-aware EER = 50.0000 %  "
                               "(tied scores decide the EER)"),
            std::string::npos)
      << tied_text.out;
  const auto mismatch = Asvrun(dir, {"eval", "--scores", "trials", "--trials", "trials"});
  EXPECT_NE(mismatch.status, 0);
  const auto missing = Asvrun(dir, {"eval", "--scores", "nope", "--trials", "trials"});
  EXPECT_EQ(missing.status, 3);
  EXPECT_NE(missing.err.find("nope"), std::string::npos) << missing.err;

  // VoxCeleb's own format gives the same figures; an unknown label is an error naming the line.
  dir.Write("veri_test.txt", "1 a/v/1.wav b/v/1.wav\n1 c/v/1.wav d/v/1.wav\n1 e/v/1.wav f/v/1.wav\n"
                             "1 g/v/1.wav h/v/1.wav\n0 a/v/1.wav c/v/1.wav\n0 b/v/1.wav d/v/1.wav\n"
                             "0 e/v/1.wav g/v/1.wav\n0 f/v/1.wav h/v/1.wav\n");
  const auto vox = Asvrun(dir, {"eval", "--scores", "scores", "--trials", "veri_test.txt", "--json"});
  ASSERT_EQ(vox.status, 0) << vox.err;
  EXPECT_EQ(nlohmann::json::parse(vox.out)["eer_percent"], j["eer_percent"]);
  dir.Write("odd_labels", "a b 1\nc d 2\ne f 1\ng h 1\na c 0\nb d 0\ne g 0\nf h 0\n");
  const auto odd = Asvrun(dir, {"eval", "--scores", "scores", "--trials", "odd_labels"});
  EXPECT_EQ(odd.status, 3);
  EXPECT_NE(odd.err.find("odd_labels:2: label '2' is neither a target label"), std::string::npos) << odd.err;
}

TEST(AsvrunTest, UsageErrorsExitWithStatus2) {
  ScratchDir dir("asvrun_usage");
  EXPECT_EQ(Asvrun(dir, {}).status, 2);
  EXPECT_EQ(Asvrun(dir, {"runs", "--status", "sleeping"}).status, 2);
  const auto r = Asvrun(dir, {"voxceleb/xvectr", "net"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("did you mean 'voxceleb/xvector'"), std::string::npos) << r.err;
}

TEST(AsvrunTest, EmptyAndMissingFilesAreConfigErrors) {
  ScratchDir dir("asvrun_empty");
  WriteRecipe(dir, "");
  const auto empty = Asvrun(dir, {"voxceleb/xvector", "net"});
  EXPECT_EQ(empty.status, 2);
  EXPECT_NE(empty.err.find("file is empty"), std::string::npos) << empty.err;
  const auto missing = Asvrun(dir, {"voxceleb/xvector", "net", "--run-configs", "nope/run_configs"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("nope/run_configs"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace asv
