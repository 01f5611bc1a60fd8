// "Best EER per config": Database::Results with ResultFilter::best_per_config (the seek-based
// query over index results_run_trial_list_eer of schema version 4) against known values and
// against a brute-force computation.
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <tuple>

#include <gtest/gtest.h>

#include "asvcpp/db/database.h"
#include "tests/asvcpp/db/db_test_util.h"
#include "tests/asvcpp/db/store_test.h"

namespace asv::db {
namespace {

using testing::SampleRunInfo;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

class DbBestPerConfigTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (IsSkipped()) return;
    db_ = std::make_unique<Database>(location());
  }
  void TearDown() override {
    db_.reset();
    StoreTest::TearDown();
  }

  std::int64_t Add(std::int64_t run, const std::string& trial_list, double eer, std::optional<int> stage = 5) {
    ResultRecord r;
    r.trial_list = trial_list;
    r.eer = eer;
    r.stage = stage;
    return db_->RecordResult(run, r);
  }

  std::vector<std::int64_t> BestIds(ResultFilter filter) {
    filter.best_per_config = true;
    std::vector<std::int64_t> ids;
    for (const auto& row : db_->Results(filter)) ids.push_back(row.id);
    return ids;
  }

  std::unique_ptr<Database> db_;
};
ASV_INSTANTIATE_STORES(DbBestPerConfigTest);

using Ids = std::vector<std::int64_t>;

TEST_P(DbBestPerConfigTest, EmptyDatabaseAndRunsWithoutResults) {
  EXPECT_TRUE(BestIds({}).empty());
  db_->BeginRun(SampleRunInfo("r", "a"));
  EXPECT_TRUE(BestIds({}).empty());
  ResultFilter list;
  list.trial_list = "voxceleb1_o";
  EXPECT_TRUE(BestIds(list).empty());
}

TEST_P(DbBestPerConfigTest, KnownValuesWithTiesListsAndRunStatuses) {
  // Config a: two runs; config b: one failed run and one crashed; config c: still running.
  const std::int64_t a1 = db_->BeginRun(SampleRunInfo("r", "a"));
  const std::int64_t a2 = db_->BeginRun(SampleRunInfo("r", "a"));
  const std::int64_t b1 = db_->BeginRun(SampleRunInfo("r", "b"));
  const std::int64_t b2 = db_->BeginRun(SampleRunInfo("r", "b"));
  const std::int64_t c1 = db_->BeginRun(SampleRunInfo("r", "c"));
  const std::int64_t o_a1 = Add(a1, "o", 3.0);
  const std::int64_t o_a1_tie = Add(a1, "o", 2.0);
  Add(a1, "o", 4.0);
  const std::int64_t e_a1 = Add(a1, "e", 6.0);
  const std::int64_t o_a2_tie = Add(a2, "o", 2.0);  // Ties a1's 2.0 across runs: latest wins.
  const std::int64_t h_a2 = Add(a2, "h", 9.0);
  const std::int64_t e_a2 = Add(a2, "e", 7.0);
  const std::int64_t o_a1_late_tie = Add(a1, "o", 2.0);  // Within run a1, after o_a2_tie.
  const std::int64_t o_b1 = Add(b1, "o", 1.5);           // Best of b, in a run that failed.
  Add(b2, "o", 1.75);
  const std::int64_t e_b2_nan = Add(b2, "e", kNaN);  // NaN only: reported since nothing else.
  Add(c1, "o", kNaN);
  const std::int64_t o_c1 = Add(c1, "o", 8.0);  // A NaN never beats a number.
  Add(c1, "o", kNaN);
  db_->FinishRun(a1, RunStatus::kFinished);
  db_->FinishRun(a2, RunStatus::kFinished);
  db_->FinishRun(b1, RunStatus::kFailed, "stage 9 failed");
  db_->FinishRun(b2, RunStatus::kCrashed);
  static_cast<void>(o_a1);
  static_cast<void>(o_a1_tie);

  const auto rows = [&] {
    ResultFilter best;
    best.best_per_config = true;
    return db_->Results(best);
  }();
  // Ordered by recipe, config, trial list ("e" < "h" < "o").
  ASSERT_EQ(rows.size(), 6u);
  const std::vector<std::tuple<std::string, std::string, std::int64_t>> expected = {
      {"a", "e", e_a1},     {"a", "h", h_a2}, {"a", "o", o_a1_late_tie},
      {"b", "e", e_b2_nan}, {"b", "o", o_b1}, {"c", "o", o_c1}};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].config, std::get<0>(expected[i])) << i;
    EXPECT_EQ(rows[i].record.trial_list, std::get<1>(expected[i])) << i;
    EXPECT_EQ(rows[i].id, std::get<2>(expected[i])) << i;
    EXPECT_EQ(rows[i].recipe, "r");
  }
  EXPECT_EQ(rows[2].record.eer, 2.0);
  EXPECT_EQ(rows[2].run_id, a1);
  EXPECT_TRUE(std::isnan(rows[3].record.eer));
  EXPECT_EQ(rows[4].run_id, b1);
  EXPECT_EQ(rows[4].record.eer, 1.5);

  ResultFilter list;
  list.trial_list = "o";
  EXPECT_EQ(BestIds(list), (Ids{o_a1_late_tie, o_b1, o_c1}));
  ResultFilter config;
  config.config = "a";
  EXPECT_EQ(BestIds(config), (Ids{e_a1, h_a2, o_a1_late_tie}));
  ResultFilter run;
  run.run_id = a2;
  EXPECT_EQ(BestIds(run), (Ids{e_a2, h_a2, o_a2_tie}));
  ResultFilter limited;
  limited.limit = 2;
  EXPECT_EQ(BestIds(limited), (Ids{e_a1, h_a2}));
  ResultFilter other_recipe;
  other_recipe.recipe = "other";
  EXPECT_TRUE(BestIds(other_recipe).empty());
}

TEST_P(DbBestPerConfigTest, StageFilterChoosesAmongThatStageOnly) {
  const std::int64_t run = db_->BeginRun(SampleRunInfo("r", "a"));
  Add(run, "o", 1.0, 5);  // Evaluation during training: lower, but not stage 9.
  const std::int64_t final_o = Add(run, "o", 2.5, 9);
  Add(run, "o", 3.0, 9);
  const std::int64_t old_row = Add(run, "e", 0.5, std::nullopt);  // Before schema v3: no stage.
  const std::int64_t final_nan = Add(run, "h", kNaN, 9);
  Add(run, "h", 4.0, 5);
  ResultFilter final_only;
  final_only.stage = 9;
  EXPECT_EQ(BestIds(final_only), (Ids{final_nan, final_o}));
  ResultFilter any;
  EXPECT_EQ(BestIds(any), (Ids{old_row, final_nan + 1, final_o - 1}));
}

// Random results with many ties, NaNs and several stages, compared with a brute force over
// Results() (all rows) for every filter combination used by asvrun. Fixed seed.
TEST_P(DbBestPerConfigTest, MatchesBruteForceOnRandomResults) {
  std::mt19937 rng(20260101);
  const std::vector<std::string> configs = {"a", "b", "c"};
  const std::vector<std::string> lists = {"demo", "voxceleb1_e", "voxceleb1_o"};
  std::vector<std::int64_t> runs;
  for (int i = 0; i < 8; ++i) {
    runs.push_back(db_->BeginRun(SampleRunInfo(i % 4 == 3 ? "r2" : "r", configs[i % 3])));
  }
  for (int i = 0; i < 400; ++i) {
    const std::int64_t run = runs[rng() % runs.size()];
    const std::string& list = lists[rng() % lists.size()];
    const double eer = rng() % 10 == 0 ? kNaN : 1.0 + static_cast<double>(rng() % 6) * 0.5;
    const unsigned s = rng() % 3;
    Add(run, list, eer, s == 0 ? std::optional<int>() : std::optional<int>(s == 1 ? 5 : 9));
  }
  db_->FinishRun(runs[1], RunStatus::kFailed, "x");

  // Brute force: the rule of ResultFilter::best_per_config over the plain listing.
  const auto brute = [&](const ResultFilter& filter) {
    std::map<std::tuple<std::string, std::string, std::string>, ResultRow> best;
    for (const auto& row : db_->Results(filter)) {
      const auto key = std::make_tuple(row.recipe, row.config, row.record.trial_list);
      const auto it = best.find(key);
      const auto better = [](const ResultRow& x, const ResultRow& y) {
        const bool x_nan = std::isnan(x.record.eer);
        const bool y_nan = std::isnan(y.record.eer);
        if (x_nan != y_nan) return y_nan;
        if (!x_nan && x.record.eer != y.record.eer) return x.record.eer < y.record.eer;
        return x.id > y.id;
      };
      if (it == best.end() || better(row, it->second)) best[key] = row;
    }
    Ids ids;
    for (const auto& [key, row] : best) ids.push_back(row.id);
    return ids;
  };
  int checked = 0;
  using OptText = std::optional<std::string>;
  for (const OptText& recipe : {OptText(), OptText("r")}) {
    for (const OptText& list : {OptText(), OptText("demo")}) {
      for (const std::optional<int> stage : {std::optional<int>(), std::optional<int>(9)}) {
        for (const auto run : {std::optional<std::int64_t>(), std::optional<std::int64_t>(runs[4])}) {
          ResultFilter filter;
          filter.recipe = recipe;
          filter.trial_list = list;
          filter.stage = stage;
          filter.run_id = run;
          const Ids expected = brute(filter);
          EXPECT_EQ(BestIds(filter), expected) << "recipe " << recipe.value_or("*") << " list " << list.value_or("*")
                                               << " stage " << stage.value_or(-1) << " run " << run.value_or(-1);
          checked += static_cast<int>(expected.size());
        }
      }
    }
  }
  EXPECT_GE(checked, 50);  // The filters leave plenty of groups to compare (80 with this seed).
}

}  // namespace
}  // namespace asv::db
