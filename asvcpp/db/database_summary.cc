// The aggregate reads of the experiment database that a report of many runs needs: best figures
// per config and trial list, in-training EERs, and the epochs and artifacts of many runs in one
// query each (instead of one query per run).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "asvcpp/db/database.h"
#include "asvcpp/db/row_mappers.h"
#include "asvcpp/db/statement.h"

namespace asv::db {
namespace {

// The lowest minDCF per (recipe, config, trial list, operating point): from result_costs, and for
// results without costs (recorded before schema version 6) from their own columns.
constexpr std::string_view kBestCostsSql = R"sql(
  SELECT runs.recipe, runs.config, r.trial_list, c.p_target, c.c_miss, c.c_fa, MIN(c.min_dcf), r.run_id
  FROM result_costs AS c JOIN results AS r ON r.id = c.result_id JOIN runs ON runs.id = r.run_id
  WHERE c.min_dcf IS NOT NULL
    AND (:recipe IS NULL OR runs.recipe = :recipe)
    AND (:config IS NULL OR runs.config = :config)
    AND (:trial_list IS NULL OR r.trial_list = :trial_list)
    AND (:run_id IS NULL OR r.run_id = :run_id)
    AND (:stage IS NULL OR r.stage = :stage)
  GROUP BY runs.recipe, runs.config, r.trial_list, c.p_target, c.c_miss, c.c_fa
  UNION ALL
  SELECT runs.recipe, runs.config, r.trial_list, r.p_target, r.c_miss, r.c_fa, MIN(r.min_dcf), r.run_id
  FROM results AS r JOIN runs ON runs.id = r.run_id
  WHERE r.min_dcf IS NOT NULL AND r.p_target IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM result_costs AS c WHERE c.result_id = r.id)
    AND (:recipe IS NULL OR runs.recipe = :recipe)
    AND (:config IS NULL OR runs.config = :config)
    AND (:trial_list IS NULL OR r.trial_list = :trial_list)
    AND (:run_id IS NULL OR r.run_id = :run_id)
    AND (:stage IS NULL OR r.stage = :stage)
  GROUP BY runs.recipe, runs.config, r.trial_list, r.p_target, r.c_miss, r.c_fa)sql";

constexpr std::string_view kEpochEersSql = R"sql(
  SELECT r.run_id, r.trial_list, r.epoch, MIN(r.eer)
  FROM results AS r JOIN runs ON runs.id = r.run_id
  WHERE r.epoch IS NOT NULL
    AND (:recipe IS NULL OR runs.recipe = :recipe)
    AND (:config IS NULL OR runs.config = :config)
    AND (:trial_list IS NULL OR r.trial_list = :trial_list)
    AND (:run_id IS NULL OR r.run_id = :run_id)
    AND (:stage IS NULL OR r.stage = :stage)
  GROUP BY r.run_id, r.trial_list, r.epoch
  ORDER BY r.run_id, r.trial_list, r.epoch)sql";

void BindResultFilter(Statement& stmt, const ResultFilter& filter) {
  stmt.Bind(":recipe", filter.recipe)
      .Bind(":config", filter.config)
      .Bind(":trial_list", filter.trial_list)
      .Bind(":run_id", filter.run_id)
      .Bind(":stage", filter.stage);
}

using GroupKey = std::tuple<std::string, std::string, std::string>;

}  // namespace

std::vector<ResultSummaryRow> Database::ResultSummary(const ResultFilter& filter) {
  ResultFilter best = filter;
  best.best_per_config = true;
  best.limit = 0;
  std::map<GroupKey, ResultSummaryRow> groups;
  for (const ResultRow& row : Results(best)) {
    ResultSummaryRow& out = groups[{row.recipe, row.config, row.record.trial_list}];
    out.recipe = row.recipe;
    out.config = row.config;
    out.trial_list = row.record.trial_list;
    if (!std::isnan(row.record.eer)) out.best_eer = row.record.eer;
    out.best_eer_run_id = row.run_id;
    out.best_eer_result_id = row.id;
  }
  Read("ResultSummary", [&] {
    for (auto& [key, row] : groups) row.best_costs.clear();
    Statement stmt(db_, kBestCostsSql);
    BindResultFilter(stmt, filter);
    while (stmt.Step()) {
      ResultSummaryRow& out = groups[{stmt.Text(0), stmt.Text(1), stmt.Text(2)}];
      if (out.recipe.empty()) {
        out.recipe = stmt.Text(0);
        out.config = stmt.Text(1);
        out.trial_list = stmt.Text(2);
      }
      BestCost cost{stmt.Real(3), stmt.Real(4), stmt.Real(5), stmt.Real(6), stmt.Int(7)};
      // The same operating point from both halves of the query: keep the lower.
      auto same = std::find_if(out.best_costs.begin(), out.best_costs.end(), [&](const BestCost& c) {
        return c.p_target == cost.p_target && c.c_miss == cost.c_miss && c.c_fa == cost.c_fa;
      });
      if (same == out.best_costs.end()) {
        out.best_costs.push_back(cost);
      } else if (cost.min_dcf < same->min_dcf) {
        *same = cost;
      }
    }
  });
  std::vector<ResultSummaryRow> rows;
  rows.reserve(groups.size());
  for (auto& [key, row] : groups) {
    std::sort(row.best_costs.begin(), row.best_costs.end(), [](const BestCost& a, const BestCost& b) {
      return std::make_tuple(-a.p_target, a.c_miss, a.c_fa) < std::make_tuple(-b.p_target, b.c_miss, b.c_fa);
    });
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<EpochEer> Database::EpochEers(const ResultFilter& filter) {
  std::vector<EpochEer> rows;
  Read("EpochEers", [&] {
    rows.clear();
    Statement stmt(db_, kEpochEersSql);
    BindResultFilter(stmt, filter);
    while (stmt.Step()) {
      rows.push_back({stmt.Int(0), stmt.Text(1), static_cast<int>(stmt.Int(2)), stmt.Real(3)});
    }
  });
  return rows;
}

// The runs of RunFilter's recipe and config, for `run_id IN (...)`.
constexpr std::string_view kRunsOfFilter =
    "SELECT id FROM runs WHERE (:recipe IS NULL OR recipe = :recipe) AND (:config IS NULL OR config = :config)";

std::vector<EpochRow> Database::EpochsOfRuns(const RunFilter& filter) {
  std::vector<EpochRow> rows;
  Read("EpochsOfRuns", [&] {
    rows.clear();
    Statement stmt(db_, fmt::format("SELECT {} FROM epochs WHERE run_id IN ({}) ORDER BY run_id, epoch",
                                    kEpochColumns, kRunsOfFilter));
    stmt.Bind(":recipe", filter.recipe).Bind(":config", filter.config);
    while (stmt.Step()) rows.push_back(ReadEpochRow(stmt));
  });
  return rows;
}

std::vector<ArtifactRow> Database::ArtifactsOfKind(const std::string& kind, const RunFilter& filter) {
  std::vector<ArtifactRow> rows;
  Read("ArtifactsOfKind", [&] {
    rows.clear();
    Statement stmt(db_, fmt::format("SELECT {} FROM artifacts WHERE kind = :kind AND run_id IN ({}) ORDER BY run_id, id",
                                    kArtifactColumns, kRunsOfFilter));
    stmt.Bind(":kind", kind).Bind(":recipe", filter.recipe).Bind(":config", filter.config);
    while (stmt.Step()) rows.push_back(ReadArtifactRow(stmt));
  });
  return rows;
}

}  // namespace asv::db
