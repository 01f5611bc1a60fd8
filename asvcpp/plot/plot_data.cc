#include "asvcpp/plot/plot_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "asvcpp/base/checksum.h"
#include "asvcpp/base/error.h"

namespace asv::plot {

namespace stdfs = std::filesystem;

namespace {


// "det_voxceleb1_o.tsv" -> "voxceleb1_o" for prefix "det_"; nullopt when the name does not fit.
std::optional<std::string> ListOf(const std::string& path, const std::string& prefix) {
  const std::string stem = stdfs::path(path).stem().string();
  if (stem.rfind(prefix, 0) != 0 || stem.size() == prefix.size()) return std::nullopt;
  return stem.substr(prefix.size());
}

std::string RunName(const db::RunRow& run) { return fmt::format("{} (run {})", run.info.config, run.id); }

stdfs::path ArtifactPath(const db::RunRow& run, const std::string& path) {
  const stdfs::path p(path);
  return p.is_absolute() || run.info.output_folder.empty() ? p : stdfs::path(run.info.output_folder) / p;
}

}  // namespace

std::vector<DetCurve> RunDetCurves(db::Database& database, const db::RunRow& run, const std::string& list) {
  struct DetFile {
    std::string list;
    stdfs::path path;
    std::string checksum;
  };
  std::vector<DetFile> det_files;
  std::map<std::string, stdfs::path> score_files;
  std::vector<std::string> scored_lists;  // lists with a score file, in the order recorded
  for (const auto& artifact : database.Artifacts(run.id)) {
    const auto& a = artifact.record;
    if (a.kind == "det") {
      if (const auto name = eval::TrialListOfDetFile(a.path)) {
        if (std::none_of(det_files.begin(), det_files.end(), [&](const auto& d) { return d.list == *name; })) {
          det_files.push_back({*name, ArtifactPath(run, a.path), a.checksum});
        }
      }
    } else if (a.kind == "scores") {
      if (const auto name = ListOf(a.path, "scores_")) {
        if (!score_files.count(*name)) scored_lists.push_back(*name);
        score_files[*name] = ArtifactPath(run, a.path);
      }
    }
  }
  auto has_det = [&](const std::string& name) {
    return std::any_of(det_files.begin(), det_files.end(), [&](const auto& d) { return d.list == name; });
  };
  auto missing = [&](const std::string& name) {
    const auto scores = score_files.find(name);
    if (scores == score_files.end()) {
      return DataError(fmt::format("{} {}: no DET points for trial list '{}' (no det_{}.tsv artifact{})",
                                   database.location(), RunName(run), name, name,
                                   det_files.empty() ? " and no score file" : ""));
    }
    const stdfs::path det = scores->second.parent_path() / fmt::format("det_{}.tsv", name);
    return DataError(fmt::format(
        "{} {}: no DET points for trial list '{}': the run has the score file {} but no DET file; make one with "
        "`asvrun eval --scores {} --trials <trial list of {}> --det {}`",
        database.location(), RunName(run), name, scores->second.string(), scores->second.string(), name,
        det.string()));
  };
  std::vector<std::string> wanted;
  if (!list.empty()) {
    wanted.push_back(list);
  } else {
    for (const auto& d : det_files) wanted.push_back(d.list);
    for (const auto& s : scored_lists) {
      if (!has_det(s)) wanted.push_back(s);
    }
  }
  if (wanted.empty()) {
    throw DataError(fmt::format("{} {}: no DET points and no score files recorded (the run has not scored a trial "
                                "list)",
                                database.location(), RunName(run)));
  }
  std::vector<DetCurve> curves;
  for (const auto& name : wanted) {
    const auto d = std::find_if(det_files.begin(), det_files.end(), [&](const auto& f) { return f.list == name; });
    if (d == det_files.end()) throw missing(name);
    // Runs of one output folder write the same scores/det_<list>.tsv: a later run's file must not
    // be drawn as this run's curve.
    if (!d->checksum.empty() && stdfs::exists(d->path)) {
      const std::string now = asv::fs::FileChecksum(d->path);
      if (now != d->checksum) {
        throw DataError(fmt::format(
            "{} {}: the DET file {} of trial list '{}' has changed since the run wrote it (recorded {}, now {}): "
            "a later run in the same output folder has overwritten it",
            database.location(), RunName(run), d->path.string(), name, d->checksum, now));
      }
    }
    curves.push_back({fmt::format("{} {}", RunName(run), name), eval::ReadDetPoints(d->path)});
  }
  return curves;
}

const std::vector<std::string>& MetricNames() {
  static const std::vector<std::string> names = {"loss", "accuracy", "lr", "eer", "frames_per_second", "data_wait"};
  return names;
}

Metric ParseMetric(const std::string& name) {
  static const std::map<std::string, Metric> metrics = {
      {"loss", Metric::kLoss},
      {"accuracy", Metric::kAccuracy},
      {"accuracy_percent", Metric::kAccuracy},
      {"lr", Metric::kLearningRate},
      {"learning_rate", Metric::kLearningRate},
      {"eer", Metric::kEer},
      {"frames_per_second", Metric::kFramesPerSecond},
      {"data_wait", Metric::kDataWait},
      {"data_wait_percent", Metric::kDataWait},
  };
  const auto it = metrics.find(name);
  if (it == metrics.end()) {
    throw ConfigError(fmt::format("--metric {}: unknown metric; expected one of {}", name,
                                  fmt::join(MetricNames(), ", ")));
  }
  return it->second;
}

std::string MetricTitle(Metric metric) {
  switch (metric) {
    case Metric::kLoss: return "loss";
    case Metric::kAccuracy: return "accuracy (%)";
    case Metric::kLearningRate: return "learning rate";
    case Metric::kEer: return "EER (%)";
    case Metric::kFramesPerSecond: return "frames/s";
    case Metric::kDataWait: return "data wait (%)";
  }
  return "";
}

std::vector<Series> MetricSeries(db::Database& database, const db::RunRow& run, Metric metric,
                                 const std::string& list) {
  std::vector<Series> out;
  if (metric == Metric::kEer) {
    db::ResultFilter filter;
    filter.run_id = run.id;
    if (!list.empty()) filter.trial_list = list;
    auto rows = database.Results(filter);          // newest first
    std::reverse(rows.begin(), rows.end());        // first recorded first
    std::vector<std::string> lists;
    std::map<std::string, std::map<int, double>> eer;  // list -> epoch -> EER
    for (const auto& row : rows) {
      const auto& r = row.record;
      if (!r.epoch || std::isnan(r.eer)) continue;
      if (!eer.count(r.trial_list)) lists.push_back(r.trial_list);
      eer[r.trial_list].emplace(*r.epoch, r.eer);  // keeps the first of an epoch
    }
    if (lists.empty()) {
      throw DataError(fmt::format("{} {}: no in-training EER{} (results with an epoch)", database.location(),
                                  RunName(run), list.empty() ? "" : fmt::format(" on trial list '{}'", list)));
    }
    for (const auto& name : lists) {
      Series series{fmt::format("{} {}", RunName(run), name), {}};
      for (const auto& [epoch, value] : eer[name]) series.points.push_back({static_cast<double>(epoch), value});
      out.push_back(std::move(series));
    }
    return out;
  }
  Series series{RunName(run), {}};
  for (const auto& row : database.Epochs(run.id)) {
    const auto& e = row.record;
    std::optional<double> value;
    switch (metric) {
      case Metric::kLoss: value = e.loss; break;
      case Metric::kAccuracy: value = e.accuracy; break;
      case Metric::kLearningRate: value = e.learning_rate; break;
      case Metric::kFramesPerSecond: value = e.frames_per_second; break;
      case Metric::kDataWait: value = e.data_wait_percent; break;
      case Metric::kEer: break;
    }
    if (value && std::isfinite(*value)) series.points.push_back({static_cast<double>(e.epoch), *value});
  }
  if (series.points.empty()) {
    throw DataError(fmt::format("{} {}: no {} values recorded (asvrun epochs {})", database.location(),
                                RunName(run), MetricNames()[static_cast<int>(metric)], run.id));
  }
  out.push_back(std::move(series));
  return out;
}

}  // namespace asv::plot
