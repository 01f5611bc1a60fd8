// asv::db::Statement and SqliteError: binding, NULLs, typed columns, errors and reuse.
#include "asvcpp/db/statement.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "asvcpp/base/error.h"
#include "tests/asvcpp/db/db_test_util.h"

namespace asv::db {
namespace {

// A private in-memory database with extended result codes, as Database opens its connections.
class DbStatementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    sqlite3_extended_result_codes(db_, 1);
    Exec(db_, "CREATE TABLE t (i INTEGER, r REAL, s TEXT)");
  }
  void TearDown() override { sqlite3_close(db_); }

  sqlite3* db_ = nullptr;
};

TEST_F(DbStatementTest, BindsByIndexAndReadsEachType) {
  const std::int64_t big = (std::int64_t{1} << 53) + 7;
  const std::string text("a\0b", 3);  // embedded NUL: the length comes from SQLite, not strlen
  Statement insert(db_, "INSERT INTO t (i, r, s) VALUES (?1, ?2, ?3)");
  insert.Bind(1, big).Bind(2, 2.5).Bind(3, text).Run();

  Statement select(db_, "SELECT i, r, s, typeof(i), typeof(r), typeof(s) FROM t");
  ASSERT_TRUE(select.Step());
  EXPECT_EQ(select.ColumnCount(), 6);
  EXPECT_EQ(select.Int(0), big);
  EXPECT_EQ(select.Real(1), 2.5);
  EXPECT_EQ(select.Text(2), text);
  EXPECT_EQ(select.Text(3), "integer");
  EXPECT_EQ(select.Text(4), "real");
  EXPECT_EQ(select.Text(5), "text");
  EXPECT_FALSE(select.IsNull(0));
  EXPECT_FALSE(select.Step());
}

TEST_F(DbStatementTest, NanEmptyOptionalAndNulloptBindNull) {
  Statement insert(db_, "INSERT INTO t (i, r, s) VALUES (?1, ?2, ?3)");
  insert.Bind(1, std::optional<std::int64_t>())
      .Bind(2, std::numeric_limits<double>::quiet_NaN())
      .Bind(3, std::nullopt)
      .Run();
  Statement select(db_, "SELECT i, r, s, typeof(i), typeof(r), typeof(s) FROM t");
  ASSERT_TRUE(select.Step());
  EXPECT_EQ(select.Text(3), "null");
  EXPECT_EQ(select.Text(4), "null");
  EXPECT_EQ(select.Text(5), "null");
  for (int col = 0; col < 3; ++col) EXPECT_TRUE(select.IsNull(col)) << col;
  EXPECT_EQ(select.Int(0), 0);
  EXPECT_EQ(select.OptInt(0), std::nullopt);
  EXPECT_TRUE(std::isnan(select.Real(1)));
  EXPECT_EQ(select.OptReal(1), std::nullopt);
  EXPECT_EQ(select.Text(2), "");
  EXPECT_EQ(select.OptText(2), std::nullopt);
}

TEST_F(DbStatementTest, OptionalWithValueBindsTheValue) {
  Statement insert(db_, "INSERT INTO t (i, r, s) VALUES (?1, ?2, ?3)");
  insert.Bind(1, std::optional<int>(-4))
      .Bind(2, std::optional<double>(0.25))
      .Bind(3, std::optional<std::string>("x"))
      .Run();
  Statement select(db_, "SELECT i, r, s FROM t");
  ASSERT_TRUE(select.Step());
  EXPECT_EQ(select.OptInt(0), std::optional<std::int64_t>(-4));
  EXPECT_EQ(select.OptReal(1), std::optional<double>(0.25));
  EXPECT_EQ(select.OptText(2), std::optional<std::string>("x"));
}

TEST_F(DbStatementTest, BindsByNameAndIgnoresNamesTheStatementLacks) {
  Statement insert(db_, "INSERT INTO t (i, s) VALUES (:i, :s)");
  EXPECT_EQ(insert.ParameterIndex(":i"), 1);
  EXPECT_EQ(insert.ParameterIndex(":s"), 2);
  EXPECT_EQ(insert.ParameterIndex(":unused"), 0);
  insert.Bind(":i", 7).Bind(":unused", 1.5).BindOrNull(":s", "").Run();
  insert.Reset();
  insert.Bind(":i", 8).BindOrNull(":s", "eight").Run();
  Statement select(db_, "SELECT i, s FROM t ORDER BY i");
  ASSERT_TRUE(select.Step());
  EXPECT_EQ(select.Int(0), 7);
  EXPECT_EQ(select.OptText(1), std::nullopt);  // BindOrNull("") is NULL
  ASSERT_TRUE(select.Step());
  EXPECT_EQ(select.Int(0), 8);
  EXPECT_EQ(select.OptText(1), std::optional<std::string>("eight"));
  EXPECT_FALSE(select.Step());
}

TEST_F(DbStatementTest, ResetRunsTheStatementAgainWithNewOrKeptBindings) {
  Statement insert(db_, "INSERT INTO t (i, s) VALUES (?1, ?2)");
  insert.Bind(1, 1).Bind(2, "one").Run();
  insert.Reset();
  insert.Bind(1, 2).Run();  // ?2 keeps "one"
  insert.Reset();
  insert.ClearBindings();
  insert.Bind(1, 3).Run();  // ?2 is NULL again
  Statement select(db_, "SELECT i, s FROM t ORDER BY i");
  std::vector<std::pair<std::int64_t, std::optional<std::string>>> rows;
  while (select.Step()) rows.emplace_back(select.Int(0), select.OptText(1));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], std::make_pair(std::int64_t{1}, std::optional<std::string>("one")));
  EXPECT_EQ(rows[1], std::make_pair(std::int64_t{2}, std::optional<std::string>("one")));
  // Field by field: GCC 12 at -O1 with the sanitizers warns (maybe-uninitialized) about a
  // temporary pair holding an empty optional<string>.
  EXPECT_EQ(rows[2].first, 3);
  EXPECT_FALSE(rows[2].second.has_value());

  // A query reset halfway starts again from its first row.
  select.Reset();
  ASSERT_TRUE(select.Step());
  EXPECT_EQ(select.Int(0), 1);
  ASSERT_TRUE(select.Step());
  EXPECT_EQ(select.Int(0), 2);
  select.Reset();
  ASSERT_TRUE(select.Step());
  EXPECT_EQ(select.Int(0), 1);
}

TEST_F(DbStatementTest, MovedStatementKeepsWorking) {
  Statement a(db_, "SELECT ?1 * 2");
  Statement b = std::move(a);
  b.Bind(1, 21);
  ASSERT_TRUE(b.Step());
  EXPECT_EQ(b.Int(0), 42);
  Statement c(db_, "SELECT 0");
  c = std::move(b);
  c.Reset();
  ASSERT_TRUE(c.Step());
  EXPECT_EQ(c.Int(0), 42);
  EXPECT_EQ(c.sql(), "SELECT ?1 * 2");
}

TEST_F(DbStatementTest, PrepareErrorNamesTheSqlAndKeepsTheCode) {
  try {
    Statement stmt(db_, "SELECT i\n   FROM no_such_table\n  WHERE i = 1");
    FAIL() << "prepared a query of a missing table";
  } catch (const SqliteError& e) {
    EXPECT_EQ(e.sqlite_code(), SQLITE_ERROR);
    EXPECT_FALSE(e.busy());
    EXPECT_FALSE(e.full());
    EXPECT_EQ(e.code(), kExitDbError);  // a DbError for every caller
    const std::string what = e.what();
    EXPECT_NE(what.find("no such table: no_such_table"), std::string::npos) << what;
    EXPECT_NE(what.find("SQL: SELECT i FROM no_such_table WHERE i = 1"), std::string::npos) << what;
    EXPECT_EQ(e.detail().find("SQL:"), std::string::npos) << e.detail();
  }
  // A syntax error, thrown as the DbError it is.
  ASV_EXPECT_THROW_CONTAINS(Statement(db_, "SELEKT 1"), DbError, "syntax error", "SQL: SELEKT 1");
}

TEST_F(DbStatementTest, ErrorsCutLongSql) {
  std::string sql = "SELECT no_such_column";
  for (int i = 0; i < 100; ++i) sql += ", " + std::to_string(i);
  try {
    Statement stmt(db_, sql);
    FAIL() << "prepared a query of a missing column";
  } catch (const SqliteError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("SQL: SELECT no_such_column, 0, 1"), std::string::npos) << what;
    EXPECT_NE(what.find(" ..."), std::string::npos) << what;
    EXPECT_LT(what.size(), e.detail().size() + kSqlInErrorBytes + 20) << what;
  }
}

TEST_F(DbStatementTest, BindOfAMissingIndexNamesTheSql) {
  Statement stmt(db_, "SELECT ?1, ?2");
  try {
    stmt.Bind(3, 1);
    FAIL() << "bound parameter 3 of 2";
  } catch (const SqliteError& e) {
    EXPECT_EQ(e.sqlite_code(), SQLITE_RANGE);
    EXPECT_NE(std::string(e.what()).find("SQL: SELECT ?1, ?2"), std::string::npos) << e.what();
  }
}

TEST_F(DbStatementTest, StepErrorKeepsTheExtendedCode) {
  Exec(db_, "CREATE TABLE u (k TEXT PRIMARY KEY NOT NULL)");
  Statement insert(db_, "INSERT INTO u (k) VALUES (?1)");
  insert.Bind(1, "a").Run();
  insert.Reset();
  try {
    insert.Run();
    FAIL() << "inserted a duplicate key";
  } catch (const SqliteError& e) {
    EXPECT_EQ(e.sqlite_code(), SQLITE_CONSTRAINT_PRIMARYKEY);
    EXPECT_NE(std::string(e.what()).find("UNIQUE constraint failed: u.k"), std::string::npos)
        << e.what();
  }
  // After the failure the statement can run again with other values.
  insert.Reset();
  insert.Bind(1, "b").Run();
  Statement count(db_, "SELECT count(*) FROM u");
  ASSERT_TRUE(count.Step());
  EXPECT_EQ(count.Int(0), 2);
}

TEST_F(DbStatementTest, FullDatabaseIsReportedAsFull) {
  Statement pages(db_, "PRAGMA page_count");
  ASSERT_TRUE(pages.Step());
  Exec(db_, "PRAGMA max_page_count = " + std::to_string(pages.Int(0)));
  Statement insert(db_, "INSERT INTO t (s) VALUES (?1)");
  try {
    insert.Bind(1, std::string(100000, 'x')).Run();
    FAIL() << "a 100 kB row fit into a database limited to its current pages";
  } catch (const SqliteError& e) {
    EXPECT_TRUE(e.full()) << e.what();
    EXPECT_FALSE(e.busy());
  }
}

TEST(DbStatementFileTest, LockedDatabaseIsReportedAsBusy) {
  const testing::ScopedDir dir("statement_busy");
  const auto path = dir / "locked.db";
  testing::RawDb holder(path);
  holder.Exec("CREATE TABLE t (i INTEGER); BEGIN IMMEDIATE; INSERT INTO t VALUES (1)");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, 0);
  try {
    Exec(db, "BEGIN IMMEDIATE");
    ADD_FAILURE() << "took the write lock another connection holds";
  } catch (const SqliteError& e) {
    EXPECT_TRUE(e.busy()) << e.what();
    EXPECT_NE(std::string(e.what()).find("SQL: BEGIN IMMEDIATE"), std::string::npos) << e.what();
  }
  sqlite3_close(db);
  holder.Exec("COMMIT");
}

TEST_F(DbStatementTest, ExecRunsSeveralStatementsAndNamesTheSqlOnFailure) {
  Exec(db_, "INSERT INTO t (i) VALUES (1); INSERT INTO t (i) VALUES (2);");
  Statement count(db_, "SELECT count(*), sum(i) FROM t");
  ASSERT_TRUE(count.Step());
  EXPECT_EQ(count.Int(0), 2);
  EXPECT_EQ(count.Int(1), 3);
  ASV_EXPECT_THROW_CONTAINS(Exec(db_, "DROP TABLE missing"), SqliteError, "no such table: missing",
                            "SQL: DROP TABLE missing");
}

TEST(DbStatementDescribeTest, DescribeAddsTheGenericTextOnlyWhenItDiffers) {
  EXPECT_EQ(DescribeSqlite("database is locked", SQLITE_BUSY), "database is locked");
  EXPECT_EQ(DescribeSqlite("UNIQUE constraint failed: u.k", SQLITE_CONSTRAINT_UNIQUE),
            "UNIQUE constraint failed: u.k (constraint failed)");
}

}  // namespace
}  // namespace asv::db
