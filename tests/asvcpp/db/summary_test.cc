// The aggregate reads of a report: ResultSummary, EpochEers, EpochsOfRuns, ArtifactsOfKind.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/db/database.h"
#include "tests/asvcpp/db/db_test_util.h"
#include "tests/asvcpp/db/store_test.h"

namespace asv::db {
namespace {

using testing::RawDb;
using testing::SampleRunInfo;
using testing::ScopedDir;

ResultRecord SummaryResult(const std::string& list, double eer, std::optional<int> epoch, int stage,
                           std::vector<CostRecord> costs) {
  ResultRecord r;
  r.trial_list = list;
  r.eer = eer;
  r.epoch = epoch;
  r.stage = stage;
  r.costs = std::move(costs);
  if (!r.costs.empty()) {
    r.min_dcf = r.costs.front().min_dcf;
    r.p_target = r.costs.front().p_target;
  }
  return r;
}

CostRecord Cost(double p_target, double min_dcf) {
  CostRecord c;
  c.p_target = p_target;
  c.min_dcf = min_dcf;
  return c;
}

class DatabaseSummaryTest : public testing::StoreTest {};
ASV_INSTANTIATE_STORES(DatabaseSummaryTest);

TEST_P(DatabaseSummaryTest, BestEerAndBestMinDcfPerOperatingPointComeFromAnyResult) {
  Database db(location());
  const auto a = db.BeginRun(SampleRunInfo("voxceleb/xvector", "net"));
  const auto b = db.BeginRun(SampleRunInfo("voxceleb/xvector", "net"));
  const auto c = db.BeginRun(SampleRunInfo("voxceleb/xvector", "small"));
  // net on vox1_o: the lowest EER is run b's, the lowest minDCF(0.05) run a's, minDCF(0.01) run b's.
  db.RecordResult(a, SummaryResult("vox1_o", 3.0, std::nullopt, 9, {Cost(0.05, 0.20), Cost(0.01, 0.40)}));
  db.RecordResult(b, SummaryResult("vox1_o", 2.5, std::nullopt, 9, {Cost(0.05, 0.25), Cost(0.01, 0.35)}));
  db.RecordResult(a, SummaryResult("vox1_o", 4.0, 2, 5, {Cost(0.05, 0.30)}));
  db.RecordResult(c, SummaryResult("vox1_o", 5.0, std::nullopt, 9, {Cost(0.05, 0.50)}));
  db.RecordResult(c, SummaryResult("vox1_e", 6.0, std::nullopt, 9, {}));  // no costs: its own columns count
  {
    RawDb raw(location());
    raw.Exec("UPDATE results SET min_dcf = 0.6, p_target = 0.01 WHERE trial_list = 'vox1_e'");
  }

  const auto rows = db.ResultSummary();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].config, "net");
  EXPECT_EQ(rows[0].trial_list, "vox1_o");
  ASSERT_TRUE(rows[0].best_eer);
  EXPECT_DOUBLE_EQ(*rows[0].best_eer, 2.5);
  EXPECT_EQ(rows[0].best_eer_run_id, b);
  ASSERT_EQ(rows[0].best_costs.size(), 2u);
  EXPECT_DOUBLE_EQ(rows[0].best_costs[0].p_target, 0.05);  // p_target descending
  EXPECT_DOUBLE_EQ(rows[0].best_costs[0].min_dcf, 0.20);
  EXPECT_EQ(rows[0].best_costs[0].run_id, a);
  EXPECT_DOUBLE_EQ(rows[0].best_costs[1].min_dcf, 0.35);
  EXPECT_EQ(rows[0].best_costs[1].run_id, b);
  EXPECT_EQ(rows[1].config, "small");
  EXPECT_EQ(rows[1].trial_list, "vox1_e");
  ASSERT_EQ(rows[1].best_costs.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[1].best_costs[0].p_target, 0.01);
  EXPECT_DOUBLE_EQ(rows[1].best_costs[0].min_dcf, 0.6);

  // Filters combine as for Results: stage 5 only leaves the in-training result of net.
  ResultFilter stage5;
  stage5.stage = 5;
  const auto in_training = db.ResultSummary(stage5);
  ASSERT_EQ(in_training.size(), 1u);
  EXPECT_DOUBLE_EQ(*in_training[0].best_eer, 4.0);
  ASSERT_EQ(in_training[0].best_costs.size(), 1u);
  EXPECT_DOUBLE_EQ(in_training[0].best_costs[0].min_dcf, 0.30);
  ResultFilter small;
  small.config = "small";
  small.trial_list = "vox1_o";
  const auto only = db.ResultSummary(small);
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0].best_eer_run_id, c);
}

// ResultSummary's minDCFs and EpochEers group in memory; on varied data (trial lists and epochs
// out of order, NaN EERs, results with and without cost rows, cost rows without minDCF) they
// give what SQL's GROUP BY gives.
TEST_P(DatabaseSummaryTest, AggregatesAgreeWithGroupByInSql) {
  Database db(location());
  std::vector<std::int64_t> runs;
  for (int r = 0; r < 12; ++r) {
    runs.push_back(db.BeginRun(SampleRunInfo(r % 3 ? "voxceleb/xvector" : "voxceleb/margin", "c" + std::to_string(r % 4))));
  }
  const char* lists[] = {"vox1_o", "demo", "vox1_e"};
  std::uint32_t state = 7;
  const auto next = [&] { return (state = state * 1664525u + 1013904223u) >> 8 & 0xffff; };
  for (int i = 0; i < 400; ++i) {
    std::vector<CostRecord> costs;
    if (next() % 4 != 0) {  // a quarter without cost rows: their own columns count
      for (double p : {0.05, 0.01}) costs.push_back(Cost(p, 0.01 * static_cast<double>(next() % 1000)));
    }
    const double eer = next() % 17 == 0 ? NAN : 0.01 * static_cast<double>(next() % 2000);
    ResultRecord r =
        SummaryResult(lists[next() % 3], eer, next() % 5 ? std::optional<int>(1 + next() % 6) : std::nullopt,
                      next() % 2 ? 5 : 9, costs);
    if (costs.empty()) {
      r.min_dcf = 0.01 * static_cast<double>(next() % 1000);
      r.p_target = next() % 2 ? 0.05 : 0.01;
    }
    db.RecordResult(runs[next() % runs.size()], r);
  }
  RawDb raw(location());
  raw.Exec("UPDATE result_costs SET min_dcf = NULL WHERE id % 11 = 0");

  for (const std::optional<int> stage : {std::optional<int>(), std::optional<int>(5)}) {
    ResultFilter filter;
    filter.stage = stage;
    const std::string where = stage ? " AND r.stage = 5" : "";
    std::vector<std::string> expected = raw.Query(
        "SELECT recipe, config, trial_list, p, MIN(m) FROM ("
        " SELECT runs.recipe, runs.config, r.trial_list, c.p_target AS p, c.min_dcf AS m"
        " FROM result_costs AS c JOIN results AS r ON r.id = c.result_id JOIN runs ON runs.id = r.run_id"
        " WHERE c.min_dcf IS NOT NULL" + where +
        " UNION ALL SELECT runs.recipe, runs.config, r.trial_list, r.p_target, r.min_dcf"
        " FROM results AS r JOIN runs ON runs.id = r.run_id WHERE r.min_dcf IS NOT NULL" + where +
        " AND NOT EXISTS (SELECT 1 FROM result_costs AS c WHERE c.result_id = r.id)) AS m"
        " GROUP BY recipe, config, trial_list, p ORDER BY recipe, config, trial_list, p DESC");
    std::vector<std::string> got;
    for (const auto& row : db.ResultSummary(filter)) {
      for (const auto& c : row.best_costs) {
        got.push_back(fmt::format("{}|{}|{}|{}|{}", row.recipe, row.config, row.trial_list, c.p_target, c.min_dcf));
        // The run named holds a result with that minDCF.
        EXPECT_FALSE(raw.Query(fmt::format("SELECT 1 FROM results AS r LEFT JOIN result_costs AS c ON c.result_id = r.id "
                                           "WHERE r.run_id = {} AND (c.min_dcf = {} OR r.min_dcf = {})",
                                           c.run_id, c.min_dcf, c.min_dcf))
                         .empty());
      }
    }
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      const auto cut = expected[i].rfind('|');
      EXPECT_EQ(got[i].substr(0, got[i].rfind('|')), expected[i].substr(0, cut).substr(0, got[i].rfind('|')));
      EXPECT_NEAR(std::stod(got[i].substr(got[i].rfind('|') + 1)), std::stod(expected[i].substr(cut + 1)), 1e-12);
    }

    const auto eers = db.EpochEers(filter);
    const auto reference = raw.Query(
        "SELECT r.run_id, r.trial_list, r.epoch, MIN(r.eer) FROM results AS r WHERE r.epoch IS NOT NULL" + where +
        " GROUP BY r.run_id, r.trial_list, r.epoch ORDER BY r.run_id, r.trial_list, r.epoch");
    ASSERT_EQ(eers.size(), reference.size());
    for (std::size_t i = 0; i < eers.size(); ++i) {
      const auto& e = eers[i];
      const std::string eer = std::isnan(e.eer) ? "NULL" : fmt::format("{}", e.eer);
      const std::string key = fmt::format("{}|{}|{}|", e.run_id, e.trial_list, e.epoch);
      EXPECT_EQ(reference[i].substr(0, key.size()), key);
      const std::string want = reference[i].substr(key.size());
      if (want == "NULL" || eer == "NULL") {
        EXPECT_EQ(eer, want);
      } else {
        EXPECT_NEAR(e.eer, std::stod(want), 1e-12);
      }
    }
  }
}

TEST_P(DatabaseSummaryTest, EpochEersEpochsAndArtifactsOfManyRuns) {
  Database db(location());
  const auto a = db.BeginRun(SampleRunInfo("voxceleb/xvector", "net"));
  const auto b = db.BeginRun(SampleRunInfo("voxceleb/margin", "demo"));
  for (int e : {2, 1}) {
    EpochRecord epoch;
    epoch.epoch = e;
    epoch.loss = 1.0 / e;
    db.RecordEpoch(a, epoch);
    db.RecordEpoch(b, epoch);
  }
  db.RecordResult(a, SummaryResult("vox1_o", 5.0, 1, 5, {}));
  db.RecordResult(a, SummaryResult("vox1_o", 4.0, 1, 5, {}));  // the same epoch twice: the lower counts
  db.RecordResult(a, SummaryResult("vox1_o", 3.0, 2, 5, {}));
  db.RecordResult(a, SummaryResult("vox1_o", 2.0, std::nullopt, 9, {}));  // no epoch: not a curve point
  db.RecordResult(b, SummaryResult("demo", 7.0, 1, 7, {}));
  ArtifactRecord det;
  det.path = "scores/det_vox1_o.tsv";
  det.kind = "det";
  db.RecordArtifact(b, det);
  det.kind = "scores";
  db.RecordArtifact(a, det);

  const auto eers = db.EpochEers();
  ASSERT_EQ(eers.size(), 3u);
  EXPECT_EQ(eers[0].run_id, a);
  EXPECT_EQ(eers[0].epoch, 1);
  EXPECT_DOUBLE_EQ(eers[0].eer, 4.0);
  EXPECT_EQ(eers[1].epoch, 2);
  EXPECT_EQ(eers[2].run_id, b);
  ResultFilter margin;
  margin.recipe = "voxceleb/margin";
  EXPECT_EQ(db.EpochEers(margin).size(), 1u);

  const auto epochs = db.EpochsOfRuns();
  ASSERT_EQ(epochs.size(), 4u);
  EXPECT_EQ(epochs[0].run_id, a);
  EXPECT_EQ(epochs[0].record.epoch, 1);
  EXPECT_EQ(epochs[1].record.epoch, 2);
  EXPECT_EQ(epochs[2].run_id, b);
  RunFilter net;
  net.config = "net";
  EXPECT_EQ(db.EpochsOfRuns(net).size(), 2u);

  const auto dets = db.ArtifactsOfKind("det");
  ASSERT_EQ(dets.size(), 1u);
  EXPECT_EQ(dets[0].run_id, b);
  EXPECT_EQ(dets[0].record.path, "scores/det_vox1_o.tsv");
  EXPECT_TRUE(db.ArtifactsOfKind("det", net).empty());
}

}  // namespace
}  // namespace asv::db
