// A small experiment database for the report's tests: four runs of two recipes with epochs,
// in-training and final results, DET artifacts (one file written, one missing) and a running job.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "asvcpp/db/database.h"
#include "asvcpp/eval/det.h"

namespace asv::report::testing {

struct TestDb {
  std::filesystem::path path;
  std::int64_t net = 0;      ///< voxceleb/xvector net < fe, finished: EER 2.5 on vox1_o; DET of vox1_o, vox1_h
  std::int64_t small = 0;    ///< voxceleb/xvector small, finished: EER 3.5, best minDCF(0.05); DET missing
  std::int64_t running = 0;  ///< voxceleb/xvector net, running (this process): stage 5 "train", epoch 2
  std::int64_t margin = 0;   ///< voxceleb/margin demo, failed, no results
};

inline db::CostRecord Cost(double p_target, double min_dcf) {
  db::CostRecord c;
  c.p_target = p_target;
  c.min_dcf = min_dcf;
  return c;
}

inline db::ResultRecord Result(const std::string& list, double eer, std::optional<int> epoch, int stage,
                               std::vector<db::CostRecord> costs = {}) {
  db::ResultRecord r;
  r.trial_list = list;
  r.eer = eer;
  r.epoch = epoch;
  r.stage = stage;
  r.costs = std::move(costs);
  // Without costs (as recorded before result_costs existed) the result's own minDCF counts.
  r.min_dcf = r.costs.empty() ? eer / 10 : r.costs.front().min_dcf;
  r.p_target = r.costs.empty() ? 0.05 : r.costs.front().p_target;
  r.n_target = 10;
  r.n_nontarget = 100;
  return r;
}

inline db::RunInfo Info(const std::string& recipe, const std::string& config, const std::string& settings,
                        const std::string& hash, const std::filesystem::path& output) {
  db::RunInfo info;
  info.recipe = recipe;
  info.config = config;
  info.settings_json = settings;
  info.settings_hash = hash;
  db::FillCurrentProcess(&info);
  info.gpu_ids = {0, 1};
  info.world_size = 2;
  info.code_version = "0.1.0 (test)";
  info.output_folder = output.string();
  return info;
}

inline void AddEpochs(db::Database& db, std::int64_t run, int n) {
  for (int e = 1; e <= n; ++e) {
    db::EpochRecord epoch;
    epoch.epoch = e;
    epoch.loss = 4.0 / e;
    epoch.accuracy = 20.0 * e;
    epoch.learning_rate = 0.1;
    epoch.frames_per_second = 1000 + e;
    epoch.data_wait_percent = 2.0;
    db.RecordEpoch(run, epoch);
  }
}

/// Makes the database in `folder` (experiments.db; the DET file under folder/out/scores).
inline TestDb MakeTestDb(const std::filesystem::path& folder) {
  TestDb t;
  t.path = folder / "experiments.db";
  const auto output = folder / "out";
  // A DET curve of two Gaussian score distributions one unit apart: EER = Phi(-0.5) = 30.85 %.
  std::vector<eval::DetPoint> points;
  for (int i = 0; i <= 400; ++i) {
    const double threshold = -4 + 0.02 * i;
    eval::DetPoint p;
    p.p_miss = 0.5 * std::erfc(-(threshold - 0.5) / std::sqrt(2.0));
    p.p_fa = 0.5 * std::erfc((threshold + 0.5) / std::sqrt(2.0));
    p.threshold = threshold;
    points.push_back(p);
  }
  eval::WriteDetPoints(output / "scores" / "det_vox1_o.tsv", points);
  // Two distributions 3.6 apart (EER Phi(-1.8) = 3.6 %): inside the 40 % square the curve goes down
  // to p = Phi(-3.3) = 0.048 % (threshold 1.5), so its DET axes start at 0.02 %.
  points.clear();
  for (int i = 0; i <= 80; ++i) {
    const double threshold = -4 + 0.1 * i;
    eval::DetPoint p;
    p.p_miss = 0.5 * std::erfc(-(threshold - 1.8) / std::sqrt(2.0));
    p.p_fa = 0.5 * std::erfc((threshold + 1.8) / std::sqrt(2.0));
    p.threshold = threshold;
    points.push_back(p);
  }
  eval::WriteDetPoints(output / "scores" / "det_vox1_h.tsv", points);

  db::Database db(t.path);
  const std::string net_settings = R"({"network.epochs":3,"network.lr":0.1,"paths.output_folder":"out"})";
  auto info = Info("voxceleb/xvector", "net", net_settings, "h-net", output);
  info.parent_chain = {"fe"};
  t.net = db.BeginRun(info);
  AddEpochs(db, t.net, 3);
  for (int e = 1; e <= 3; ++e) db.RecordResult(t.net, Result("vox1_o", 6.0 - e, e, 5));
  db.RecordResult(t.net, Result("vox1_o", 2.5, std::nullopt, 9, {Cost(0.05, 0.2), Cost(0.01, 0.4)}));
  db::ArtifactRecord det;
  det.kind = "det";
  det.path = "scores/det_vox1_o.tsv";  // relative to the run's output folder
  db.RecordArtifact(t.net, det);
  det.path = "scores/det_vox1_h.tsv";
  db.RecordArtifact(t.net, det);
  db.FinishRun(t.net, db::RunStatus::kFinished);

  t.small = db.BeginRun(Info("voxceleb/xvector", "small",
                             R"({"network.epochs":5,"network.lr":0.1,"paths.output_folder":"out"})", "h-small", output));
  AddEpochs(db, t.small, 2);
  db.RecordResult(t.small, Result("vox1_o", 3.5, std::nullopt, 9, {Cost(0.05, 0.15), Cost(0.01, 0.5)}));
  det.path = (folder / "gone" / "det_vox1_o.tsv").string();
  db.RecordArtifact(t.small, det);
  db.FinishRun(t.small, db::RunStatus::kFinished);

  t.running = db.BeginRun(Info("voxceleb/xvector", "net", net_settings, "h-net", output));
  db.FinishStage(db.BeginStage(t.running, 1, "features"), db::RunStatus::kFinished);
  db.BeginStage(t.running, 5, "train");
  AddEpochs(db, t.running, 2);

  t.margin = db.BeginRun(Info("voxceleb/margin", "demo", R"({"recipe.lm_epochs":2})", "h-margin", output));
  db.FinishRun(t.margin, db::RunStatus::kFailed, "stage 5 failed: out of memory\nmore detail");
  return t;
}

}  // namespace asv::report::testing
