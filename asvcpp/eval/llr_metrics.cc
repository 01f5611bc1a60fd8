#include "asvcpp/eval/llr_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::eval {
namespace {

void CheckScores(const std::vector<double>& target, const std::vector<double>& nontarget, const char* what) {
  if (target.empty() || nontarget.empty()) {
    throw DataError(fmt::format("{} need at least one target and one non-target trial, got {} target and {} "
                                "non-target",
                                what, target.size(), nontarget.size()));
  }
  const auto has_nan = [](const std::vector<double>& v) {
    return std::any_of(v.begin(), v.end(), [](double x) { return std::isnan(x); });
  };
  if (has_nan(target) || has_nan(nontarget)) throw DataError(fmt::format("{}: a score is NaN", what));
}

double MeanSoftplus(const std::vector<double>& values, double sign) {
  double sum = 0.0;
  for (double v : values) sum += Softplus(sign * v);
  return sum / static_cast<double>(values.size());
}

}  // namespace

double Softplus(double x) {
  return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));
}

double BayesThreshold(const DcfParams& params) {
  params.Validate();
  return std::log(params.c_fa * (1.0 - params.p_target)) - std::log(params.c_miss * params.p_target);
}

double Cllr(const std::vector<double>& target_llrs, const std::vector<double>& nontarget_llrs) {
  CheckScores(target_llrs, nontarget_llrs, "Cllr");
  return (MeanSoftplus(target_llrs, -1.0) + MeanSoftplus(nontarget_llrs, 1.0)) / (2.0 * std::log(2.0));
}

void OptimalLlrs(const std::vector<double>& target_scores, const std::vector<double>& nontarget_scores,
                 std::vector<double>* target_llrs, std::vector<double>* nontarget_llrs) {
  CheckScores(target_scores, nontarget_scores, "minCllr");
  const std::size_t n_tar = target_scores.size();
  const std::size_t n = n_tar + nontarget_scores.size();
  const auto score = [&](std::size_t i) { return i < n_tar ? target_scores[i] : nontarget_scores[i - n_tar]; };
  // Indices [0, n_tar) are targets; ascending by score, targets first within a tie (index order).
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return score(a) < score(b); });

  // Pool adjacent violators over the 0/1 labels: blocks of (targets, trials), means non-decreasing.
  // Block means are compared exactly by cross-multiplying the integer counts.
  struct Block {
    std::int64_t targets;
    std::int64_t trials;
  };
  std::vector<Block> blocks;
  std::vector<std::size_t> first_of_block;
  blocks.reserve(n);
  first_of_block.reserve(n);
  for (std::size_t k = 0; k < n; ++k) {
    blocks.push_back({order[k] < n_tar ? 1 : 0, 1});
    first_of_block.push_back(k);
    while (blocks.size() > 1) {
      const Block& top = blocks.back();
      const Block& prev = blocks[blocks.size() - 2];
      // prev.targets / prev.trials > top.targets / top.trials: a violation, merge.
      if (prev.targets * top.trials <= top.targets * prev.trials) break;
      const Block merged{prev.targets + top.targets, prev.trials + top.trials};
      blocks.pop_back();
      first_of_block.pop_back();
      blocks.back() = merged;
    }
  }

  const double log_prior_odds =
      std::log(static_cast<double>(n_tar)) - std::log(static_cast<double>(nontarget_scores.size()));
  target_llrs->assign(n_tar, 0.0);
  nontarget_llrs->assign(nontarget_scores.size(), 0.0);
  first_of_block.push_back(n);
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const auto targets = static_cast<double>(blocks[b].targets);
    const auto nontargets = static_cast<double>(blocks[b].trials - blocks[b].targets);
    // log(p / (1 - p)) with p = targets / trials; -inf / +inf for pure blocks.
    const double llr = std::log(targets) - std::log(nontargets) - log_prior_odds;
    for (std::size_t k = first_of_block[b]; k < first_of_block[b + 1]; ++k) {
      const std::size_t i = order[k];
      if (i < n_tar) {
        (*target_llrs)[i] = llr;
      } else {
        (*nontarget_llrs)[i - n_tar] = llr;
      }
    }
  }
}

double MinCllr(const std::vector<double>& target_scores, const std::vector<double>& nontarget_scores) {
  std::vector<double> target_llrs, nontarget_llrs;
  OptimalLlrs(target_scores, nontarget_scores, &target_llrs, &nontarget_llrs);
  return Cllr(target_llrs, nontarget_llrs);
}

ActDcfResult ComputeActDcf(const std::vector<double>& target_llrs, const std::vector<double>& nontarget_llrs,
                           const DcfParams& params) {
  CheckScores(target_llrs, nontarget_llrs, "actDCF");
  ActDcfResult result;
  result.params = params;
  result.threshold = BayesThreshold(params);
  const double theta = result.threshold;
  const auto misses = std::count_if(target_llrs.begin(), target_llrs.end(), [&](double x) { return x < theta; });
  const auto false_alarms =
      std::count_if(nontarget_llrs.begin(), nontarget_llrs.end(), [&](double x) { return x >= theta; });
  result.p_miss = static_cast<double>(misses) / static_cast<double>(target_llrs.size());
  result.p_fa = static_cast<double>(false_alarms) / static_cast<double>(nontarget_llrs.size());
  const double c_default = std::min(params.c_miss * params.p_target, params.c_fa * (1.0 - params.p_target));
  result.act_dcf = (params.c_miss * params.p_target * result.p_miss +
                    params.c_fa * (1.0 - params.p_target) * result.p_fa) /
                   c_default;
  return result;
}

LlrMetrics ComputeLlrMetrics(const std::vector<double>& target_llrs, const std::vector<double>& nontarget_llrs,
                             const std::vector<DcfParams>& operating_points) {
  LlrMetrics metrics;
  metrics.cllr = Cllr(target_llrs, nontarget_llrs);
  metrics.min_cllr = MinCllr(target_llrs, nontarget_llrs);
  for (const DcfParams& params : operating_points) {
    metrics.act_dcf.push_back(ComputeActDcf(target_llrs, nontarget_llrs, params));
  }
  return metrics;
}

}  // namespace asv::eval
