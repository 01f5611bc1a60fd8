// Compares asv::eval metrics with values computed by ASVtorch's own eval_metrics.py.
// Golden file: tests/asvcpp/eval/golden/metrics_golden.json, made by
// tools/golden/make_metric_golden.py (its docstring has the command, ASVtorch commit and package
// versions). Every value must match EXACTLY (bit for bit): same sort order, same float operations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "asvcpp/eval/metrics.h"
#include "tests/asvcpp/eval/golden_scores.h"
#include "tests/build_paths.h"

namespace asv::eval {
namespace {

using nlohmann::json;
using testing::Generate;

const json& Golden() {
  static const json doc = [] {
    std::ifstream in(std::string(ASV_SOURCE_DIR) + "/tests/asvcpp/eval/golden/metrics_golden.json");
    if (!in) throw std::runtime_error("cannot open metrics_golden.json");
    return json::parse(in);
  }();
  return doc;
}

TEST(MetricsGolden, ProvenanceIsRecorded) {
  const json& p = Golden().at("provenance");
  EXPECT_EQ(p.at("tool"), "tools/golden/make_metric_golden.py");
  EXPECT_EQ(p.at("asvtorch_commit").get<std::string>().substr(0, 7), "9c656dd");
  EXPECT_GE(Golden().at("cases").size(), 10u);
}

TEST(MetricsGolden, MatchesAsvtorchExactly) {
  for (const json& c : Golden().at("cases")) {
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    std::vector<double> tar, non;
    Metrics labelled;
    bool has_labels = false;
    if (c.contains("generator")) {
      Generate(c.at("generator"), &tar, &non);
      const auto first_tar = c.at("first_target_scores").get<std::vector<double>>();
      const auto first_non = c.at("first_nontarget_scores").get<std::vector<double>>();
      ASSERT_EQ(std::vector<double>(tar.begin(), tar.begin() + first_tar.size()), first_tar);
      ASSERT_EQ(std::vector<double>(non.begin(), non.begin() + first_non.size()), first_non);
    } else if (c.contains("labels")) {
      const auto scores = c.at("scores").get<std::vector<double>>();
      const auto labels = c.at("labels").get<std::vector<std::string>>();
      labelled = ComputeMetrics(scores, labels);
      has_labels = true;
      SplitScores(scores, ClassifyLabels(labels), &tar, &non);
      EXPECT_EQ(c.at("asvtorch_printed"),
                std::to_string(labelled.counts.n_target) + " target and " +
                    std::to_string(labelled.counts.n_nontarget) + " non-target scores");
      EXPECT_EQ(labelled.counts.n_other, 3);
    } else {
      tar = c.at("target_scores").get<std::vector<double>>();
      non = c.at("nontarget_scores").get<std::vector<double>>();
    }
    ASSERT_EQ(static_cast<std::int64_t>(tar.size()), c.at("n_target").get<std::int64_t>());
    ASSERT_EQ(static_cast<std::int64_t>(non.size()), c.at("n_nontarget").get<std::int64_t>());

    const SortedScores sorted(tar, non);
    const EerResult eer = sorted.Eer();
    EXPECT_EQ(eer.eer, c.at("eer").get<double>());
    EXPECT_EQ(eer.threshold, c.at("eer_threshold").get<double>());
    if (has_labels) {
      EXPECT_EQ(labelled.eer.eer, eer.eer);
      EXPECT_EQ(labelled.min_dcf.min_dcf, c.at("min_dcf").at(0).at("min_dcf").get<double>());
    }
    for (const json& d : c.at("min_dcf")) {
      const DcfParams p{d.at("p_target").get<double>(), d.at("c_miss").get<double>(), d.at("c_fa").get<double>()};
      SCOPED_TRACE(p.p_target);
      const MinDcfResult r = sorted.MinDcf(p);
      EXPECT_EQ(r.min_dcf, d.at("min_dcf").get<double>());
      EXPECT_EQ(r.threshold, d.at("threshold").get<double>());
    }
    if (c.contains("det_curve")) {
      const DetCurve curve = sorted.Curve();
      EXPECT_EQ(curve.frr, c.at("det_curve").at("frr").get<std::vector<double>>());
      EXPECT_EQ(curve.far, c.at("det_curve").at("far").get<std::vector<double>>());
      EXPECT_EQ(curve.thresholds, c.at("det_curve").at("thresholds").get<std::vector<double>>());
    }
  }
}

}  // namespace
}  // namespace asv::eval
