// A PostgreSQL experiment database whose server goes away in the middle of a run: every write
// then fails with a DbError naming the database (its URI without the password) and saying that
// the server is gone, nothing is half-written, and once the server is back the same Database
// object carries on. The server is this program's own (tests/tools/postgres/start_server.sh),
// since the test stops it; skipped when none can run here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "asvcpp/base/error.h"
#include "asvcpp/db/database.h"
#include "tests/asvcpp/db/db_test_util.h"
#include "tests/asvcpp/db/store_test.h"
#include "tests/build_paths.h"

namespace asv::db {
namespace {

class DbPostgresServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string start = std::string(ASV_SOURCE_DIR) + "/tests/tools/postgres/start_server.sh 2>&1";
    FILE* pipe = ::popen(start.c_str(), "r");
    std::string out;
    char buffer[4096];
    for (std::size_t n; pipe && (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
    const int status = pipe ? ::pclose(pipe) : -1;
    const int code = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code != 0) {
      skip_ = code == 77 ? out : "start_server.sh failed: " + out;
      return;
    }
    folder_ = out.substr(0, out.find('\n'));
    const std::string rest = out.substr(out.find('\n') + 1);
    uri_ = rest.substr(0, rest.find('\n'));
  }
  static void TearDownTestSuite() {
    if (folder_.empty()) return;
    Script("stop_server.sh '" + folder_ + "'");
  }
  void SetUp() override {
    if (uri_.empty()) GTEST_SKIP() << "no PostgreSQL server: " << skip_;
  }

  static int Script(const std::string& command) {
    return std::system((std::string(ASV_SOURCE_DIR) + "/tests/tools/postgres/" + command).c_str());
  }

  static inline std::string folder_;
  static inline std::string uri_;
  static inline std::string skip_;
};

TEST_F(DbPostgresServerTest, StoppedServerGivesAClearErrorLosesNoRowAndComesBack) {
  const std::string uri = testing::WithDatabase(uri_, "stopped");
  ASSERT_EQ(testing::PostgresExec(uri_, "CREATE DATABASE stopped"), "");
  Database db(uri);
  const std::int64_t run = db.BeginRun(testing::SampleRunInfo());
  EpochRecord epoch;
  epoch.epoch = 1;
  epoch.loss = 3.5;
  db.RecordEpoch(run, epoch);

  ASSERT_EQ(Script("pg_ctl.sh '" + folder_ + "' stop"), 0);
  epoch.epoch = 2;
  epoch.loss = 2.5;
  ASV_EXPECT_THROW_CONTAINS(db.RecordEpoch(run, epoch), DbError, "experiment database " + uri, "RecordEpoch",
                            "PostgreSQL server");
  // Still down: every write fails the same way, none is queued or dropped silently.
  ASV_EXPECT_THROW_CONTAINS(db.FinishRun(run, RunStatus::kFinished), DbError, uri, "FinishRun",
                            "PostgreSQL server");
  // A new connection says so too, naming the URI.
  ASV_EXPECT_THROW_CONTAINS(Database again(uri), DbError, uri, "cannot connect to the PostgreSQL server");

  ASSERT_EQ(Script("pg_ctl.sh '" + folder_ + "' start"), 0);
  // What was recorded before the stop is there, the failed writes are not.
  ASSERT_EQ(db.Epochs(run).size(), 1u);
  EXPECT_EQ(db.Epochs(run)[0].record.loss, 3.5);
  EXPECT_EQ(db.GetRun(run)->status, RunStatus::kRunning);
  // The same object reconnects at its next transaction.
  db.RecordEpoch(run, epoch);
  db.FinishRun(run, RunStatus::kFinished);
  EXPECT_EQ(db.Epochs(run).size(), 2u);
  EXPECT_EQ(Database(uri).GetRun(run)->status, RunStatus::kFinished);
}

TEST_F(DbPostgresServerTest, PasswordIsNeverInAMessage) {
  const std::string uri = testing::WithDatabase(uri_, "absent");
  const std::string with_password = "postgresql://asv:s3cret@" + uri.substr(uri.find('@') + 1);
  ASV_EXPECT_THROW_CONTAINS(Database db(with_password), DbError, "postgresql://asv:***@", "absent",
                            "does not exist");
  try {
    Database db(with_password);
  } catch (const DbError& e) {
    EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace asv::db
