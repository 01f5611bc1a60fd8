// asvrun with a PostgreSQL experiment database (--db postgresql://... or paths.experiment_db): a
// tiny voxceleb/xvector run on the tiny synthetic corpus (as recipe_e2e_test.cc) records its run,
// stages, epochs, results, artifacts and progress on the server and nothing in the output folder,
// and the reading commands (runs, runs --running, results, epochs, diff) read them back from
// there. The server is
// the one of the ctest fixture `postgres_server` or one this test starts
// (tests/tools/postgres/start_server.sh; tests/asvcpp/db/store_test.h). Skipped when espeak-ng or
// ffmpeg is missing, or when no PostgreSQL server can run here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "asvcpp/db/database.h"
#include "tests/asvcpp/db/store_test.h"
#include "tests/build_paths.h"
#include "tests/tools/test_util.h"
#include "tests/tools/xvector_tiny.h"

namespace asv {
namespace {

namespace fs = std::filesystem;

const std::string kConfigs =
    "# Prepare, features, training with in-training evaluation, back end and scoring\n" + testing::kTinyEveryStageBlock;
constexpr const char* kInitConfig = testing::kTinyInitConfig;

TEST(PostgresE2eTest, TinyRunRecordsIntoPostgresAndTheCommandsReadIt) {
  if (!testing::HaveDemoCorpusTools()) {
    GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
  }
  std::string skip;
  const std::string server = db::testing::PostgresServerUri(&skip);
  if (server.empty()) GTEST_SKIP() << "no PostgreSQL test server: " << skip;
  const std::string name = "asv_e2e_" + std::to_string(::getpid());
  db::testing::PostgresExec(server, "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
  ASSERT_EQ(db::testing::PostgresExec(server, "CREATE DATABASE " + name + " TEMPLATE template0"), "");
  const std::string uri = db::testing::WithDatabase(server, name);

  testing::ScratchDir dir("postgres_e2e");
  const auto corpus = testing::LinkTinyCorpus(dir.path());
  ASSERT_EQ(corpus.status, 0) << corpus.err;
  dir.Write("configs/run_configs", kConfigs);
  dir.Write("configs/init_config", kInitConfig);
  fs::copy_file(fs::path(ASV_SOURCE_DIR) / "run_configs/voxceleb/xvector/mfcc.conf", dir / "configs/mfcc.conf");

  const auto run = testing::RunCommand(
      {ASV_ASVRUN, "voxceleb/xvector", "tiny", "--run-configs", "configs/run_configs", "--db", uri}, dir.path());
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("recorded in " + uri), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(dir / "out/experiments.db"));  // the server holds everything

  {
    db::Database database(uri);
    EXPECT_EQ(database.engine(), db::Engine::kPostgres);
    const auto runs = database.ListRuns();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].status, db::RunStatus::kFinished);
    EXPECT_EQ(runs[0].info.recipe, "voxceleb/xvector");
    EXPECT_EQ(runs[0].info.config, "tiny");
    std::vector<int> numbers;
    for (const auto& stage : database.Stages(runs[0].id)) {
      numbers.push_back(stage.stage);
      EXPECT_EQ(stage.status, db::RunStatus::kFinished) << stage.name;
    }
    EXPECT_EQ(numbers, (std::vector<int>{0, 1, 2, 5, 7, 9}));
    ASSERT_EQ(database.Epochs(runs[0].id).size(), 2u);
    EXPECT_GT(database.Epochs(runs[0].id)[0].record.frames_per_second, 0);
    const auto results = database.Results({});
    ASSERT_EQ(results.size(), 3u);  // one evaluation per epoch and the final scoring
    for (const auto& r : results) {
      EXPECT_EQ(r.record.trial_list, "tiny_trials");
      EXPECT_GE(r.record.eer, 0.0);
      EXPECT_LE(r.record.eer, 100.0);
    }
    std::set<std::string> kinds;
    for (const auto& artifact : database.Artifacts(runs[0].id)) {
      kinds.insert(artifact.record.kind);
      if (artifact.record.kind == "checkpoint") {
        EXPECT_EQ(artifact.record.checksum.rfind("sha256:", 0), 0u);
      }
    }
    for (const char* kind : {"list", "features", "checkpoint", "embeddings", "scores", "results"}) {
      EXPECT_EQ(kinds.count(kind), 1u) << kind;
    }
    EXPECT_EQ(database.ProgressRows({runs[0].id}).size(), 1u);
  }

  const auto listed = testing::RunCommand({ASV_ASVRUN, "runs", "--db", uri}, dir.path());
  ASSERT_EQ(listed.status, 0) << listed.err;
  EXPECT_NE(listed.out.find("# " + uri), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("tiny"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("finished"), std::string::npos) << listed.out;
  const auto running = testing::RunCommand({ASV_ASVRUN, "runs", "--running", "--db", uri}, dir.path());
  EXPECT_EQ(running.status, 0) << running.err;
  const auto best = testing::RunCommand({ASV_ASVRUN, "results", "--db", uri, "--best"}, dir.path());
  ASSERT_EQ(best.status, 0) << best.err;
  EXPECT_NE(best.out.find("tiny_trials"), std::string::npos) << best.out;
  const auto epochs = testing::RunCommand({ASV_ASVRUN, "epochs", "1", "--db", uri, "--format", "csv"}, dir.path());
  ASSERT_EQ(epochs.status, 0) << epochs.err;
  EXPECT_EQ(std::count(epochs.out.begin(), epochs.out.end(), '\n'), 3) << epochs.out;  // header and 2 epochs
  const auto diff = testing::RunCommand({ASV_ASVRUN, "diff", "1", "1", "--db", uri}, dir.path());
  EXPECT_EQ(diff.status, 0) << diff.err;

  // paths.experiment_db in the init config instead of --db: the reading commands and a run (here
  // a dry run, which shows the database without its password) use it.
  dir.Write("configs/init_config_db", std::string(kInitConfig) + "paths.experiment_db = '" + uri + "'\n");
  const auto from_setting =
      testing::RunCommand({ASV_ASVRUN, "runs", "--init-config", "configs/init_config_db"}, dir.path());
  ASSERT_EQ(from_setting.status, 0) << from_setting.err;
  EXPECT_NE(from_setting.out.find("# " + uri), std::string::npos) << from_setting.out;
  EXPECT_NE(from_setting.out.find("finished"), std::string::npos) << from_setting.out;
  const std::string with_password = "postgresql://asv:s3cret@" + uri.substr(uri.find('@') + 1);
  const auto dry = testing::RunCommand({ASV_ASVRUN, "voxceleb/xvector", "tiny", "--run-configs", "configs/run_configs",
                                        "--dry-run", "--set", "paths.experiment_db=" + with_password},
                                       dir.path());
  ASSERT_EQ(dry.status, 0) << dry.err;
  EXPECT_NE(dry.out.find("database:      postgresql://asv:***@"), std::string::npos) << dry.out;
  EXPECT_EQ(dry.out.find("s3cret"), std::string::npos) << dry.out;

  // A database that is not there: a clear error naming the URI, exit status 4 (DbError).
  const std::string missing = db::testing::WithDatabase(server, name + "_missing");
  const auto absent = testing::RunCommand({ASV_ASVRUN, "runs", "--db", missing}, dir.path());
  EXPECT_EQ(absent.status, 4) << absent.err;
  EXPECT_NE(absent.err.find(missing), std::string::npos) << absent.err;
  EXPECT_NE(absent.err.find("does not exist"), std::string::npos) << absent.err;

  db::testing::PostgresExec(server, "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
}

}  // namespace
}  // namespace asv
