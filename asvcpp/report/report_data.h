// The data of asvrun report's page, read from an experiment database: one JSON object that the
// page's script turns into tables and charts (report_html.h). Everything that grows with the
// number of results is aggregated here (in SQL), so that a database of 10,000 runs and 1,000,000
// results makes a page of a few megabytes:
//
//   runs        one row per run (columns in "columns"): recipe, config, parent chain, status
//               (crashed included), host, GPUs, world size, start, end, duration, code version
//   grid        per (recipe, config, trial list): the lowest EER and the lowest minDCF at every
//               operating point (Database::ResultSummary), with the best value of each column
//               marked ("best": the row index holding it)
//   curves      per run with epochs: loss, accuracy, learning rate, frames/s, data-wait percent,
//               and the in-training EER per trial list, against the epoch (4 significant digits)
//   det         per run: its DET artifacts (kind "det", eval::WriteDetPoints files) as probit
//               coordinates thinned to `det_points`, with the EER point and the lower end of
//               axes that show the curve ("axis_min", eval::DetAxisMin); a file that cannot be
//               read is a note on the page
//   det_axis    the standard DET ticks (eval::DetAxisTicks) as probit values with labels in
//               percent, and the axes' default range (0.1-40 %)
//   settings    per recipe a baseline (the settings of its newest run) and, per settings hash, the
//               settings that differ from it (settings::DiffJson); with `provenance`, where each
//               config's values come from: what the comparison of runs shows
//   running     runs still running: config, GPUs, host, current stage (the latest stage row still
//               running), last recorded epoch, and "progress" (see RunningJob)
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "asvcpp/db/database.h"
#include "asvcpp/report/settings_diff.h"

namespace asv::report {

/// Which runs and results a report covers (as `asvrun results`' filters); unset: all.
struct ReportFilter {
  std::optional<std::string> recipe;
  std::optional<std::string> config;
  std::optional<std::string> trial_list;  ///< Results grid, in-training EERs and DET curves.
  std::optional<int> stage;               ///< Results grid only: results of this stage.
};

/// Finds where the settings of the given (recipe, config) pairs come from (e.g. by resolving them
/// from the config files, as asvrun does); configs it cannot resolve are left out of the map.
using ProvenanceResolver =
    std::function<ProvenanceMap(const std::vector<std::pair<std::string, std::string>>& configs)>;

struct ReportOptions {
  ReportFilter filter;
  ProvenanceMap provenance;        ///< Where settings came from (settings_diff.h); may be empty.
  /// When set, called once with the distinct (recipe, config) pairs of the report's runs; its
  /// entries are added to `provenance`.
  ProvenanceResolver resolve_provenance;
  std::string title = "asvcpp experiments";
  std::size_t det_points = 120;    ///< About how many points to keep per DET curve (>= 2).
  std::string generated_time;      ///< UTC ISO-8601 shown on the page; "" = now.
};

/// Progress of a long stage of a running job, as the page shows it ("progress" of a running job;
/// null until the database records progress).
struct JobProgress {
  double done = 0;                  ///< Units done.
  std::optional<double> total;      ///< Units in all, when known.
  std::string unit;                 ///< e.g. "batches", "utterances", "trials".
  std::string what;                 ///< What is counted, e.g. "epoch 3/20".
  std::optional<double> rate;       ///< Units per second.
  std::optional<double> eta_seconds;  ///< Seconds until done at that rate.
  std::string updated_time;         ///< UTC ISO-8601 of the last update.
};

/// A run with status running, for the page's running-jobs section.
struct RunningJob {
  db::RunRow run;
  std::optional<db::StageRow> stage;  ///< The latest of its stages still running.
  std::optional<int> last_epoch;      ///< Its last recorded training epoch.
  std::optional<JobProgress> progress;  ///< Its lowest rank's row of `progress`; none before the first.
};

/// The running jobs among `runs` (reported status running), with their current stage, last
/// epoch and progress (Database::ProgressRows). Throws DbError.
std::vector<RunningJob> RunningJobs(db::Database& database, const std::vector<db::RunRow>& runs);

/// One DET curve thinned for the page (probit coordinates, eval::Probit).
struct DetCurve {
  std::string trial_list;
  std::string path;
  std::vector<double> probit_fa;    ///< x: probit of the false-alarm rate.
  std::vector<double> probit_miss;  ///< y: probit of the miss rate.
  double eer_percent = 0;           ///< Where the curve crosses p_miss = p_fa, percent.
  double axis_min = 0.001;          ///< Lower end of DET axes that show it (eval::DetAxisMin, fraction).
  std::string note;                 ///< Why the file could not be read; then no points.
};

/// Reads a DET file of eval::WriteDetPoints (`p_miss`, `p_fa`, ... columns, rates in [0, 1]),
/// keeping about `max_points` (>= 2) points spread evenly along the curve on probit axes, always
/// the first, the last and the one nearest to the EER; `axis_min` from all of its points. The
/// trial list is read from the file name (eval::TrialListOfDetFile: "det_<list>[.run<id>].tsv").
/// Never throws for a bad file: a missing or malformed file gives a curve without points and a
/// `note` that names the path and the problem.
DetCurve ReadDetCurve(const std::filesystem::path& path, std::size_t max_points);

/// The page's data for the runs and results of `database` that `options.filter` selects (see the
/// top of this file). Throws DbError.
nlohmann::ordered_json BuildReportData(db::Database& database, const ReportOptions& options);

}  // namespace asv::report
