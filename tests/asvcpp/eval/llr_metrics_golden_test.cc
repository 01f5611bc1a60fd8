// Compares asv::eval's Cllr, minCllr and actDCF with an independent NumPy transcription of their
// definitions. Golden file: tests/asvcpp/eval/golden/llr_metrics_golden.json, made by
// tools/golden/make_llr_metric_golden.py (its docstring has the command and versions).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "asvcpp/eval/llr_metrics.h"
#include "tests/asvcpp/eval/golden_scores.h"
#include "tests/build_paths.h"

namespace asv::eval {
namespace {

using nlohmann::json;

const json& LlrGolden() {
  static const json doc = [] {
    std::ifstream in(std::string(ASV_SOURCE_DIR) + "/tests/asvcpp/eval/golden/llr_metrics_golden.json");
    if (!in) throw std::runtime_error("cannot open llr_metrics_golden.json");
    return json::parse(in);
  }();
  return doc;
}

void ScoresOf(const json& c, std::vector<double>* tar, std::vector<double>* non) {
  if (c.contains("generator")) {
    testing::Generate(c.at("generator"), tar, non);
    const auto first_tar = c.at("first_target_scores").get<std::vector<double>>();
    const auto first_non = c.at("first_nontarget_scores").get<std::vector<double>>();
    ASSERT_EQ(std::vector<double>(tar->begin(), tar->begin() + first_tar.size()), first_tar);
    ASSERT_EQ(std::vector<double>(non->begin(), non->begin() + first_non.size()), first_non);
  } else {
    *tar = c.at("target_scores").get<std::vector<double>>();
    *non = c.at("nontarget_scores").get<std::vector<double>>();
  }
}

TEST(LlrMetricsGolden, MatchesTheNumpyTranscription) {
  ASSERT_GE(LlrGolden().at("cases").size(), 9u);
  for (const json& c : LlrGolden().at("cases")) {
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    std::vector<double> tar, non;
    ScoresOf(c, &tar, &non);
    ASSERT_EQ(tar.size(), c.at("n_target").get<std::size_t>());
    ASSERT_EQ(non.size(), c.at("n_nontarget").get<std::size_t>());

    std::vector<DcfParams> points;
    for (const json& a : c.at("act_dcf")) {
      points.push_back({a.at("p_target").get<double>(), a.at("c_miss").get<double>(), a.at("c_fa").get<double>()});
    }
    const LlrMetrics m = ComputeLlrMetrics(tar, non, points);
    EXPECT_NEAR(m.cllr, c.at("cllr").get<double>(), 1e-12 * std::max(1.0, m.cllr));
    EXPECT_NEAR(m.min_cllr, c.at("min_cllr").get<double>(), 1e-12);

    std::vector<double> tar_llrs, non_llrs;
    OptimalLlrs(tar, non, &tar_llrs, &non_llrs);
    for (std::size_t i = 0; i < points.size(); ++i) {
      const json& a = c.at("act_dcf")[i];
      SCOPED_TRACE(points[i].p_target);
      EXPECT_NEAR(m.act_dcf[i].threshold, a.at("threshold").get<double>(), 1e-13);
      EXPECT_DOUBLE_EQ(m.act_dcf[i].p_miss, a.at("p_miss").get<double>());
      EXPECT_DOUBLE_EQ(m.act_dcf[i].p_fa, a.at("p_fa").get<double>());
      EXPECT_NEAR(m.act_dcf[i].act_dcf, a.at("act_dcf").get<double>(), 1e-12 * std::max(1.0, m.act_dcf[i].act_dcf));
      EXPECT_NEAR(ComputeActDcf(tar_llrs, non_llrs, points[i]).act_dcf, c.at("optimal_act_dcf")[i].get<double>(),
                  1e-12);
    }
  }
}

}  // namespace
}  // namespace asv::eval
