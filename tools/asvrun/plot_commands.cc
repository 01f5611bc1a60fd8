// `asvrun plot det` and `asvrun plot curves`: figures of runs in the experiment database
// (asvcpp/plot), written as PNG or SVG.
#include <fmt/format.h>

#include <iostream>
#include <stdexcept>

#include "asvcpp/base/error.h"
#include "asvcpp/db/database.h"
#include "asvcpp/plot/figure.h"
#include "asvcpp/plot/plot_data.h"
#include "asvcpp/plot/render.h"
#include "tools/asvrun/commands.h"

namespace asv::tools {

namespace {

// The runs asked for, in order; DbError (as `asvrun diff`) for an id with no run.
std::vector<db::RunRow> GetRuns(db::Database& database, const std::vector<std::int64_t>& ids) {
  std::vector<db::RunRow> runs;
  for (const auto id : ids) {
    auto run = database.GetRun(id);
    if (!run) throw DbError(fmt::format("{}: no run {}", database.location(), id));
    runs.push_back(std::move(*run));
  }
  return runs;
}

void Write(const plot::Figure& figure, const PlotOptions& options) {
  plot::RenderOptions render;
  render.width = options.width;
  render.height = options.height;
  try {
    plot::Draw(figure, render);  // checks the size before anything is written
  } catch (const std::invalid_argument& e) {
    throw ConfigError(fmt::format("--width {} --height {}: {} with {} legend entries; make the figure larger",
                                  options.width, options.height, e.what(), figure.series.size()));
  }
  plot::RenderFile(figure, options.out, render);
  std::cerr << fmt::format("asvrun: wrote {}\n", options.out);
}

}  // namespace

int PlotDet(const PlotOptions& options) {
  db::Database database = OpenDatabaseForReading(options.selection);
  fs::CheckOutputIsNotInput({"--out", options.out}, DatabaseFiles(database.path()));
  std::vector<plot::DetCurve> curves;
  for (const auto& run : GetRuns(database, options.runs)) {
    for (auto& curve : plot::RunDetCurves(database, run, options.list)) curves.push_back(std::move(curve));
  }
  Write(plot::DetFigure(curves, options.title), options);
  return kExitOk;
}

int PlotCurves(const PlotOptions& options) {
  const plot::Metric metric = plot::ParseMetric(options.metric);
  if (!options.list.empty() && metric != plot::Metric::kEer) {
    throw ConfigError(fmt::format("--list {}: only --metric eer has trial lists", options.list));
  }
  db::Database database = OpenDatabaseForReading(options.selection);
  fs::CheckOutputIsNotInput({"--out", options.out}, DatabaseFiles(database.path()));
  std::vector<plot::Series> series;
  for (const auto& run : GetRuns(database, options.runs)) {
    for (auto& s : plot::MetricSeries(database, run, metric, options.list)) series.push_back(std::move(s));
  }
  Write(plot::CurvesFigure(series, plot::MetricTitle(metric), options.title), options);
  return kExitOk;
}

}  // namespace asv::tools
