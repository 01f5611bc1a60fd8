// The aggregate reads of the experiment database that a report of many runs needs: best figures
// per config and trial list, in-training EERs, and the epochs and artifacts of many runs in one
// query each (instead of one query per run).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "asvcpp/db/database.h"
#include "asvcpp/db/row_mappers.h"
#include "asvcpp/db/connection.h"
#include "asvcpp/db/statement.h"

namespace asv::db {
namespace {

// The aggregates below read each table once in storage order and group in memory: SQLite's GROUP
// BY over a join of a million results (or two million costs) sorts them all in a temporary B-tree,
// 5 to 10 times slower than these scans (asv_bench_report, tools/bench/README.md).

// The results that the filters select (run filters through the join with runs), in id order.
constexpr std::string_view kFilteredResultsSql = R"sql(
  SELECT r.id, r.run_id, r.trial_list, r.min_dcf, r.p_target, r.c_miss, r.c_fa
  FROM results AS r JOIN runs ON runs.id = r.run_id
  WHERE (CAST(:recipe AS TEXT) IS NULL OR runs.recipe = :recipe)
    AND (CAST(:config AS TEXT) IS NULL OR runs.config = :config)
    AND (CAST(:trial_list AS TEXT) IS NULL OR r.trial_list = :trial_list)
    AND (CAST(:run_id AS BIGINT) IS NULL OR r.run_id = :run_id)
    AND (CAST(:stage AS BIGINT) IS NULL OR r.stage = :stage)
  ORDER BY r.id)sql";

// Every cost row (a result with cost rows is judged by them alone, also where min_dcf is NULL).
constexpr std::string_view kCostsSql = "SELECT result_id, p_target, c_miss, c_fa, min_dcf FROM result_costs";

constexpr std::string_view kEpochEersSql = R"sql(
  SELECT r.run_id, r.trial_list, r.epoch, r.eer
  FROM results AS r JOIN runs ON runs.id = r.run_id
  WHERE r.epoch IS NOT NULL
    AND (CAST(:recipe AS TEXT) IS NULL OR runs.recipe = :recipe)
    AND (CAST(:config AS TEXT) IS NULL OR runs.config = :config)
    AND (CAST(:trial_list AS TEXT) IS NULL OR r.trial_list = :trial_list)
    AND (CAST(:run_id AS BIGINT) IS NULL OR r.run_id = :run_id)
    AND (CAST(:stage AS BIGINT) IS NULL OR r.stage = :stage))sql";

// Small sets of distinct values (trial lists, configs, operating points) numbered in order of
// first appearance; the last one looked up is tried first, as rows of one group come together.
template <typename T>
class Interned {
 public:
  std::size_t Index(const T& value) {
    if (last_ < values_.size() && values_[last_] == value) return last_;
    const auto found = index_.find(value);
    if (found != index_.end()) return last_ = found->second;
    index_.emplace(value, values_.size());
    values_.push_back(value);
    return last_ = values_.size() - 1;
  }
  const T& operator[](std::size_t i) const { return values_[i]; }
  std::size_t size() const { return values_.size(); }

 private:
  std::vector<T> values_;
  std::map<T, std::size_t> index_;
  std::size_t last_ = static_cast<std::size_t>(-1);
};

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
    // The selected results in id order: their group (config, trial list) and own minDCF.
    struct Selected {
      std::int64_t id;
      std::int64_t run_id;
      std::size_t config;
      std::size_t list;
      double min_dcf;
      std::tuple<double, double, double> point;
      bool has_costs;
    };
    Interned<std::pair<std::string, std::string>> configs;
    std::unordered_map<std::int64_t, std::size_t> config_of;  // run -> its config in `configs`
    {
      Statement stmt(*conn_, "SELECT id, recipe, config FROM runs");
      while (stmt.Step()) config_of[stmt.Int(0)] = configs.Index({stmt.Text(1), stmt.Text(2)});
    }
    Interned<std::string> lists;
    std::vector<Selected> selected;
    {
      Statement stmt(*conn_, kFilteredResultsSql);
      BindResultFilter(stmt, filter);
      std::int64_t run = -1;
      std::size_t config = 0;
      while (stmt.Step()) {
        if (stmt.Int(1) != run) {
          run = stmt.Int(1);
          config = config_of.at(run);
        }
        selected.push_back({stmt.Int(0), run, config, lists.Index(stmt.Text(2)), stmt.Real(3),
                            {stmt.Real(4), stmt.Real(5), stmt.Real(6)}, false});
      }
    }
    // Lowest minDCF and its run per (config, trial list, operating point); ties keep the first.
    Interned<std::tuple<double, double, double>> points;
    std::map<std::tuple<std::size_t, std::size_t, std::size_t>, std::pair<double, std::int64_t>> lowest;
    const auto offer = [&](const Selected& result, const std::tuple<double, double, double>& point, double min_dcf) {
      const auto key = std::make_tuple(result.config, result.list, points.Index(point));
      const auto [it, added] = lowest.try_emplace(key, min_dcf, result.run_id);
      if (!added && min_dcf < it->second.first) it->second = {min_dcf, result.run_id};
    };
    {
      Statement stmt(*conn_, kCostsSql);
      auto hint = selected.begin();
      while (stmt.Step()) {
        const std::int64_t id = stmt.Int(0);
        // Costs follow their results' order as a rule: try the last result first.
        if (hint == selected.end() || hint->id != id) {
          hint = std::lower_bound(selected.begin(), selected.end(), id,
                                  [](const Selected& r, std::int64_t v) { return r.id < v; });
          if (hint == selected.end() || hint->id != id) continue;  // a result the filters leave out
        }
        hint->has_costs = true;
        const double min_dcf = stmt.Real(4);  // NaN: NULL (SQLite stores no NaN)
        if (!std::isnan(min_dcf)) offer(*hint, {stmt.Real(1), stmt.Real(2), stmt.Real(3)}, min_dcf);
      }
    }
    // Results recorded before result_costs existed: their own minDCF at their own p_target (an
    // operating point with a NULL part is left out).
    for (const Selected& result : selected) {
      const auto& [p_target, c_miss, c_fa] = result.point;
      if (!result.has_costs && !std::isnan(result.min_dcf) && !std::isnan(p_target) && !std::isnan(c_miss) &&
          !std::isnan(c_fa)) {
        offer(result, result.point, result.min_dcf);
      }
    }
    for (const auto& [key, value] : lowest) {
      const auto& [config, list, point] = key;
      ResultSummaryRow& out = groups[{configs[config].first, configs[config].second, lists[list]}];
      if (out.recipe.empty()) {
        out.recipe = configs[config].first;
        out.config = configs[config].second;
        out.trial_list = lists[list];
      }
      const auto& [p_target, c_miss, c_fa] = points[point];
      out.best_costs.push_back({p_target, c_miss, c_fa, value.first, value.second});
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
    struct Row {
      std::int64_t run;
      std::size_t list;  // into `lists`
      int epoch;
      double eer;
    };
    Interned<std::string> lists;
    std::vector<Row> all;
    Statement stmt(*conn_, kEpochEersSql);
    BindResultFilter(stmt, filter);
    while (stmt.Step()) {
      all.push_back({stmt.Int(0), lists.Index(stmt.Text(1)), static_cast<int>(stmt.Int(2)), stmt.Real(3)});
    }
    // Ordered by run, trial list (by name) and epoch; the lowest EER of each (NaN: recorded as NaN,
    // and only when every EER of the epoch is).
    std::vector<std::size_t> rank(lists.size());
    {
      std::vector<std::size_t> order(lists.size());
      for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return lists[a] < lists[b]; });
      for (std::size_t k = 0; k < order.size(); ++k) rank[order[k]] = k;
    }
    std::sort(all.begin(), all.end(), [&](const Row& a, const Row& b) {
      return std::make_tuple(a.run, rank[a.list], a.epoch) < std::make_tuple(b.run, rank[b.list], b.epoch);
    });
    for (const Row& row : all) {
      if (rows.empty() || rows.back().run_id != row.run || rows.back().epoch != row.epoch ||
          rows.back().trial_list != lists[row.list]) {
        rows.push_back({row.run, lists[row.list], row.epoch, row.eer});
      } else if (row.eer < rows.back().eer || std::isnan(rows.back().eer)) {
        rows.back().eer = row.eer;
      }
    }
  });
  return rows;
}

// The runs of RunFilter's recipe and config, for `run_id IN (...)`.
constexpr std::string_view kRunsOfFilter =
    "SELECT id FROM runs WHERE (CAST(:recipe AS TEXT) IS NULL OR recipe = :recipe) "
    "AND (CAST(:config AS TEXT) IS NULL OR config = :config)";

std::vector<EpochRow> Database::EpochsOfRuns(const RunFilter& filter) {
  std::vector<EpochRow> rows;
  Read("EpochsOfRuns", [&] {
    rows.clear();
    Statement stmt(*conn_, fmt::format("SELECT {} FROM epochs WHERE run_id IN ({}) ORDER BY run_id, epoch",
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
    Statement stmt(*conn_,
                   fmt::format("SELECT {} FROM artifacts WHERE kind = :kind AND run_id IN ({}) ORDER BY run_id, id",
                                    kArtifactColumns, kRunsOfFilter));
    stmt.Bind(":kind", kind).Bind(":recipe", filter.recipe).Bind(":config", filter.config);
    while (stmt.Step()) rows.push_back(ReadArtifactRow(stmt));
  });
  return rows;
}

}  // namespace asv::db
