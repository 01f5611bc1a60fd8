// `asvrun db copy FROM TO`: an experiment database from an SQLite file to PostgreSQL and back, with
// what the reading commands show and the artifact checksums unchanged; a non-empty target refused
// unless --replace; a missing source and a copy onto itself refused. The commands run in this
// process (asv_asvrun_cli, no LibTorch). The PostgreSQL databases are fresh ones on the test
// server (tests/asvcpp/db/store_test.h); the test skips when there is none.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "asvcpp/db/database.h"
#include "tests/asvcpp/db/db_test_util.h"
#include "tests/asvcpp/db/store_test.h"
#include "tests/tools/asvrun_in_process.h"
#include "tools/asvrun/cli.h"

namespace asv {
namespace {

using testing::Asvrun;

constexpr const char* kChecksum = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae";

// A finished run with an epoch, a result and a checkpoint, and a failed run.
void Populate(const std::string& location) {
  db::Database database(location);
  db::RunInfo info = db::testing::SampleRunInfo("voxceleb/xvector", "base");
  const auto base = database.BeginRun(info);
  db::EpochRecord epoch;
  epoch.epoch = 1;
  epoch.loss = 2.75;
  database.RecordEpoch(base, epoch);
  db::ResultRecord result;
  result.trial_list = "vox1_o";
  result.eer = 4.125;
  database.RecordResult(base, result);
  db::ArtifactRecord artifact;
  artifact.path = "system/nnet/final.pt";
  artifact.kind = "checkpoint";
  artifact.checksum = kChecksum;
  artifact.bytes = 4096;
  database.RecordArtifact(base, artifact);
  database.FinishRun(base, db::RunStatus::kFinished);
  info.config = "small";
  database.FinishRun(database.BeginRun(info), db::RunStatus::kFailed, "diverged");
}

// What the reading commands print, with the database's name replaced by "DB".
std::string Shown(const std::string& location) {
  std::string shown;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"runs", "--db", location, "--json"}, {"results", "--db", location, "--format", "csv"},
        {"epochs", "1", "--db", location, "--format", "csv"}}) {
    const auto outcome = Asvrun(args);
    EXPECT_EQ(outcome.status, 0) << args[0] << ": " << outcome.err;
    std::string out = outcome.out;
    for (std::size_t at; (at = out.find(location)) != std::string::npos;) out.replace(at, location.size(), "DB");
    shown += out;
  }
  return shown;
}

class AsvrunDbCopyTest : public db::testing::StoreTest {};
INSTANTIATE_TEST_SUITE_P(Postgres, AsvrunDbCopyTest, ::testing::Values(db::testing::Store::kPostgres),
                         db::testing::StoreName);

TEST_P(AsvrunDbCopyTest, SqliteToPostgresAndBackKeepsWhatTheCommandsShow) {
  const std::string file = (dir().path() / "experiments.db").string();
  const std::string postgres = location();
  const std::string back = (dir().path() / "back" / "experiments.db").string();
  Populate(file);
  const std::string before = Shown(file);
  ASSERT_NE(before.find("4.1250"), std::string::npos) << before;

  const auto to_postgres = Asvrun({"db", "copy", file, postgres});
  ASSERT_EQ(to_postgres.status, 0) << to_postgres.err;
  EXPECT_NE(to_postgres.out.find("# " + file + " -> " + postgres), std::string::npos) << to_postgres.out;
  EXPECT_NE(to_postgres.out.find("runs"), std::string::npos) << to_postgres.out;
  EXPECT_EQ(Shown(postgres), before);
  const auto to_sqlite = Asvrun({"db", "copy", postgres, back});
  ASSERT_EQ(to_sqlite.status, 0) << to_sqlite.err;
  EXPECT_EQ(Shown(back), before);
  for (const std::string& copy : {postgres, back}) {
    EXPECT_EQ(db::Database(copy).RecordedChecksum("system/nnet/final.pt"), std::optional<std::string>(kChecksum));
  }
}

TEST_P(AsvrunDbCopyTest, RefusesANonEmptyTargetAMissingSourceAndItself) {
  const std::string file = (dir().path() / "experiments.db").string();
  const std::string postgres = location();
  Populate(file);
  Populate(postgres);
  const auto refused = Asvrun({"db", "copy", file, postgres});
  EXPECT_EQ(refused.status, 4) << refused.err;
  EXPECT_NE(refused.err.find("not empty (2 runs"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--replace"), std::string::npos) << refused.err;
  EXPECT_EQ(db::Database(postgres).ListRuns().size(), 2u);
  const auto replaced = Asvrun({"db", "copy", file, postgres, "--replace"});
  EXPECT_EQ(replaced.status, 0) << replaced.err;
  EXPECT_EQ(Shown(postgres), Shown(file));

  const std::string missing = (dir().path() / "missing.db").string();
  const auto absent = Asvrun({"db", "copy", missing, postgres});
  EXPECT_EQ(absent.status, 4);
  EXPECT_NE(absent.err.find(missing + ": no such experiment database"), std::string::npos) << absent.err;
  EXPECT_FALSE(std::filesystem::exists(missing));
  const auto itself = Asvrun({"db", "copy", postgres, postgres});
  EXPECT_EQ(itself.status, 4);
  EXPECT_NE(itself.err.find("is both source and target"), std::string::npos) << itself.err;
}

}  // namespace
}  // namespace asv
