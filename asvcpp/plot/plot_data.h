// The data of asvrun's plots from an experiment database: DET points of a run's scored trial
// lists (the `det` artifacts, files written by eval::WriteDetPoints) and per-epoch training
// figures (the epochs table; in-training EERs from results rows with an epoch).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "asvcpp/db/database.h"
#include "asvcpp/eval/det.h"
#include "asvcpp/plot/figure.h"

namespace asv::plot {

/// The DET curves of one run: one per trial list that has a `det` artifact (det_<list>.tsv), in
/// the order recorded, or only `list` when not empty. A relative artifact path is taken relative
/// to the run's output folder. Curve names: "CONFIG (run ID) LIST". Throws DataError naming the run
/// and the list when a wanted list has no DET file (with the score file and the `asvrun eval ...
/// --det` command that makes one when the run recorded a `scores` artifact for it), when the run
/// has neither, when a DET file cannot be read, or when its checksum differs from the one the
/// artifact recorded (a later run in the same output folder overwrote it).
std::vector<DetCurve> RunDetCurves(db::Database& database, const db::RunRow& run, const std::string& list = "");

/// The figures `asvrun plot curves --metric` can plot, named as the columns of `asvrun epochs`
/// (with short aliases).
enum class Metric {
  kLoss,             ///< "loss": mean training loss.
  kAccuracy,         ///< "accuracy" or "accuracy_percent": training accuracy, percent.
  kLearningRate,     ///< "lr" or "learning_rate".
  kEer,              ///< "eer": in-training EER per trial list, percent (results with an epoch).
  kFramesPerSecond,  ///< "frames_per_second".
  kDataWait,         ///< "data_wait" or "data_wait_percent": percent of time waiting for data.
};

/// The names ParseMetric accepts, in the order of Metric.
const std::vector<std::string>& MetricNames();

/// The Metric called `name` (see Metric). Throws ConfigError listing the valid names.
Metric ParseMetric(const std::string& name);

/// Axis title of a metric, e.g. "EER (%)".
std::string MetricTitle(Metric metric);

/// Points (epoch, value) of `metric` for one run, in epoch order; one series per trial list for
/// kEer (only `list` when not empty; of several results of one list and epoch the first recorded),
/// one series otherwise. Epochs without the value (a NaN loss, data wait not measured) are left
/// out. Series names: "CONFIG (run ID)" plus " LIST" for kEer. Throws DataError naming the run when
/// it has no value of the metric at all (and for kEer naming the list).
std::vector<Series> MetricSeries(db::Database& database, const db::RunRow& run, Metric metric,
                                 const std::string& list = "");

}  // namespace asv::plot
