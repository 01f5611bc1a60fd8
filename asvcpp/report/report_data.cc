#include "asvcpp/report/report_data.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "asvcpp/base/checksum.h"
#include "asvcpp/base/error.h"
#include "asvcpp/db/timestamp.h"
#include "asvcpp/eval/det.h"
#include "asvcpp/settings/dump.h"

namespace asv::report {
namespace stdfs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

// `v` rounded to `digits` significant digits (nlohmann::json writes the shortest form that reads
// back the same, so the page carries "0.2381" instead of "0.23810413266931301"); null for NaN and
// infinities, which JSON cannot hold.
// Scaled by an exact power of ten, rounded to an integer and scaled back (one rounding: the double
// nearest to the decimal, as reading "0.2381" gives; fmt and strtod per number took seconds for
// the million numbers of a large database).
Json Rounded(double v, int digits = 4) {
  if (!std::isfinite(v)) return Json();
  if (v == 0) return 0.0;
  static const double kPowers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const int shift = digits - 1 - static_cast<int>(std::floor(std::log10(std::abs(v))));
  if (shift >= 0 && shift <= 22) return std::round(v * kPowers[shift]) / kPowers[shift];
  if (shift < 0 && shift >= -22) return std::round(v / kPowers[-shift]) * kPowers[-shift];
  return std::stod(fmt::format("{:.{}g}", v, digits));  // beyond 1e22 either way: rare
}

Json Rounded(const std::optional<double>& v, int digits = 4) { return v ? Rounded(*v, digits) : Json(); }

std::string Join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

std::string FirstLine(const std::optional<std::string>& text) {
  if (!text) return "";
  const auto nl = text->find('\n');
  return nl == std::string::npos ? *text : text->substr(0, nl) + " ...";
}

db::RunFilter RunFilterOf(const ReportFilter& filter) {
  db::RunFilter runs;
  runs.recipe = filter.recipe;
  runs.config = filter.config;
  return runs;
}

db::ResultFilter ResultFilterOf(const ReportFilter& filter) {
  db::ResultFilter results;
  results.recipe = filter.recipe;
  results.config = filter.config;
  results.trial_list = filter.trial_list;
  results.stage = filter.stage;
  return results;
}

Json RunsJson(const std::vector<db::RunRow>& runs) {
  Json rows = Json::array();
  for (const auto& r : runs) {
    std::vector<std::string> gpus;
    for (int g : r.info.gpu_ids) gpus.push_back(std::to_string(g));
    std::vector<std::string> chain(r.info.parent_chain.rbegin(), r.info.parent_chain.rend());
    rows.push_back(Json::array({r.id, r.info.recipe, r.info.config, Join(chain, " < "), std::string(db::ToString(r.status)),
                                r.info.host, Join(gpus, ","), r.info.world_size, r.start_time,
                                r.end_time ? Json(*r.end_time) : Json(), r.heartbeat_time, r.info.code_version,
                                FirstLine(r.error_text), r.info.settings_hash}));
  }
  return Json{{"columns", {"id", "recipe", "config", "parents", "status", "host", "gpus", "world_size", "start",
                           "end", "heartbeat", "code_version", "error", "settings_hash"}},
              {"rows", std::move(rows)}};
}

// The results grid: one row per (recipe, config), per trial list the lowest EER and minDCF at
// every operating point; "best" names, per column, the row with the lowest value.
Json GridJson(const std::vector<db::ResultSummaryRow>& summary) {
  std::vector<std::string> lists;
  std::vector<std::tuple<double, double, double>> points;
  for (const auto& s : summary) {
    if (std::find(lists.begin(), lists.end(), s.trial_list) == lists.end()) lists.push_back(s.trial_list);
    for (const auto& c : s.best_costs) {
      const auto point = std::make_tuple(c.p_target, c.c_miss, c.c_fa);
      if (std::find(points.begin(), points.end(), point) == points.end()) points.push_back(point);
    }
  }
  std::sort(lists.begin(), lists.end());
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(-std::get<0>(a), std::get<1>(a), std::get<2>(a)) <
           std::make_tuple(-std::get<0>(b), std::get<1>(b), std::get<2>(b));
  });
  // Columns: per trial list, EER then minDCF at each point.
  Json columns = Json::array();
  for (const auto& list : lists) {
    columns.push_back({{"trial_list", list}, {"metric", "eer"}, {"label", "EER %"}});
    for (const auto& [p, c_miss, c_fa] : points) {
      const std::string name = c_miss == 1 && c_fa == 1 ? fmt::format("{:g}", p) : fmt::format("{:g},{:g},{:g}", p, c_miss, c_fa);
      columns.push_back({{"trial_list", list},
                         {"metric", "min_dcf"},
                         {"p_target", p},
                         {"c_miss", c_miss},
                         {"c_fa", c_fa},
                         {"label", fmt::format("minDCF({})", name)}});
    }
  }
  const std::size_t per_list = 1 + points.size();
  std::map<std::pair<std::string, std::string>, std::size_t> row_of;
  std::vector<std::pair<std::string, std::string>> keys;
  for (const auto& s : summary) {
    const auto key = std::make_pair(s.recipe, s.config);
    if (row_of.emplace(key, keys.size()).second) keys.push_back(key);
  }
  // cells[row][column] = {value, run}
  std::vector<std::vector<std::pair<double, std::int64_t>>> cells(
      keys.size(), std::vector<std::pair<double, std::int64_t>>(columns.size(), {NAN, 0}));
  for (const auto& s : summary) {
    const std::size_t row = row_of.at({s.recipe, s.config});
    const std::size_t base =
        per_list * static_cast<std::size_t>(std::find(lists.begin(), lists.end(), s.trial_list) - lists.begin());
    if (s.best_eer) cells[row][base] = {*s.best_eer, s.best_eer_run_id};
    for (const auto& c : s.best_costs) {
      const auto point = std::make_tuple(c.p_target, c.c_miss, c.c_fa);
      const std::size_t k = static_cast<std::size_t>(std::find(points.begin(), points.end(), point) - points.begin());
      cells[row][base + 1 + k] = {c.min_dcf, c.run_id};
    }
  }
  Json best = Json::array();
  for (std::size_t col = 0; col < columns.size(); ++col) {
    std::optional<std::size_t> arg;
    for (std::size_t row = 0; row < keys.size(); ++row) {
      const double v = cells[row][col].first;
      if (!std::isnan(v) && (!arg || v < cells[*arg][col].first)) arg = row;
    }
    best.push_back(arg ? Json(*arg) : Json());
  }
  Json rows = Json::array();
  for (std::size_t row = 0; row < keys.size(); ++row) {
    Json values = Json::array();
    Json runs = Json::array();
    for (const auto& [value, run] : cells[row]) {
      values.push_back(Rounded(value, 5));
      runs.push_back(std::isnan(value) ? Json() : Json(run));
    }
    rows.push_back({{"recipe", keys[row].first}, {"config", keys[row].second}, {"values", std::move(values)},
                    {"runs", std::move(runs)}});
  }
  return Json{{"trial_lists", lists}, {"columns", std::move(columns)}, {"rows", std::move(rows)}, {"best", std::move(best)}};
}

// nlohmann::ordered_json finds an object's key by a linear search: per-run entries are collected in
// std::maps first (10,000 runs, a million in-training EERs) and become JSON objects once.
// The keys are distinct, so they are appended without the linear search of operator[] (which made
// this quadratic: 10,000 runs, 50 million key comparisons).
Json ObjectOf(std::map<std::int64_t, Json>&& entries) {
  Json out = Json::object();
  auto& object = out.get_ref<Json::object_t&>();
  using Entries = std::vector<Json::object_t::value_type, Json::object_t::allocator_type>;
  static_cast<Entries&>(object).reserve(entries.size());
  for (auto& [id, value] : entries) static_cast<Entries&>(object).emplace_back(std::to_string(id), std::move(value));
  return out;
}

// Epochs that follow each other (1, 2, 3, ...: the rule) as {"first", "count"}; others as they are.
Json EpochsJson(Json epochs) {
  if (epochs.empty()) return epochs;
  const auto first = epochs.front().get<std::int64_t>();
  for (std::size_t i = 0; i < epochs.size(); ++i) {
    if (epochs[i].get<std::int64_t>() != first + static_cast<std::int64_t>(i)) return epochs;
  }
  return Json{{"first", first}, {"count", epochs.size()}};
}

// A run's curves as the page reads them: epoch lists compacted (EpochsJson), figures never
// recorded (every value null, e.g. val_loss without validation) left out.
void Compact(Json& curve) {
  for (auto it = curve.begin(); it != curve.end();) {
    const bool empty = it.value().is_array() && it.key() != "epoch" &&
                       std::all_of(it.value().begin(), it.value().end(), [](const Json& v) { return v.is_null(); });
    it = empty ? curve.erase(it) : std::next(it);
  }
  if (curve.contains("epoch")) curve["epoch"] = EpochsJson(std::move(curve["epoch"]));
  if (curve.contains("eer")) {
    for (auto& list : curve["eer"]) list["epoch"] = EpochsJson(std::move(list["epoch"]));
  }
}

Json CurvesJson(const std::vector<db::EpochRow>& epochs, const std::vector<db::EpochEer>& eers,
                const std::set<std::int64_t>& runs) {
  std::map<std::int64_t, Json> curves;
  for (const auto& e : epochs) {
    if (!runs.count(e.run_id)) continue;
    Json& c = curves[e.run_id];
    if (c.is_null()) {
      c = Json{{"epoch", Json::array()}, {"loss", Json::array()},    {"accuracy", Json::array()},
               {"lr", Json::array()},    {"fps", Json::array()},     {"wait", Json::array()},
               {"val_loss", Json::array()}, {"eer", Json::object()}};
    }
    const auto& x = e.record;
    c["epoch"].push_back(x.epoch);
    c["loss"].push_back(Rounded(x.loss));
    c["accuracy"].push_back(Rounded(x.accuracy));
    c["lr"].push_back(Rounded(x.learning_rate));
    c["fps"].push_back(Rounded(x.frames_per_second));
    c["wait"].push_back(Rounded(x.data_wait_percent, 3));
    c["val_loss"].push_back(Rounded(x.val_loss));
  }
  // EpochEers is ordered by run and trial list: one list's points follow each other.
  Json* list = nullptr;
  std::int64_t list_run = -1;
  std::string list_name;
  for (const auto& e : eers) {
    if (!runs.count(e.run_id)) continue;
    if (list == nullptr || e.run_id != list_run || e.trial_list != list_name) {
      Json& c = curves[e.run_id];
      if (c.is_null()) c = Json{{"epoch", Json::array()}, {"eer", Json::object()}};
      list = &c["eer"][e.trial_list];
      if (list->is_null()) *list = Json{{"epoch", Json::array()}, {"eer", Json::array()}};
      list_run = e.run_id;
      list_name = e.trial_list;
    }
    (*list)["epoch"].push_back(e.epoch);
    (*list)["eer"].push_back(Rounded(e.eer));
  }
  for (auto& [run, curve] : curves) Compact(curve);
  return ObjectOf(std::move(curves));
}

// Relative artifact paths are relative to the run's output folder.
Json DetJson(const std::vector<db::ArtifactRow>& artifacts, const std::map<std::int64_t, stdfs::path>& output_folders,
             const ReportOptions& options) {
  std::map<std::int64_t, Json> det;
  for (const auto& a : artifacts) {
    const auto folder = output_folders.find(a.run_id);
    if (folder == output_folders.end()) continue;
    stdfs::path path = a.record.path;
    if (path.is_relative()) path = folder->second / path;
    DetCurve curve = ReadDetCurve(path, options.det_points);
    // A file that a later run in the same output folder overwrote (before DET files were named
    // per run) is not this run's curve.
    if (curve.note.empty() && !a.record.checksum.empty() && asv::fs::FileChecksum(path) != a.record.checksum) {
      curve.probit_fa.clear();
      curve.probit_miss.clear();
      curve.note = fmt::format(
          "{}: changed since the run wrote it (a later run in the same output folder overwrote it)", path.string());
    }
    if (options.filter.trial_list && curve.trial_list != *options.filter.trial_list) continue;
    Json entry{{"trial_list", curve.trial_list}, {"path", curve.path}};
    if (!curve.note.empty()) {
      entry["note"] = curve.note;
    } else {
      Json x = Json::array();
      Json y = Json::array();
      for (std::size_t i = 0; i < curve.probit_fa.size(); ++i) {
        x.push_back(std::round(curve.probit_fa[i] * 1000) / 1000);
        y.push_back(std::round(curve.probit_miss[i] * 1000) / 1000);
      }
      entry["x"] = std::move(x);
      entry["y"] = std::move(y);
      entry["eer"] = Rounded(curve.eer_percent);
      entry["eer_probit"] = std::round(eval::Probit(curve.eer_percent / 100) * 1000) / 1000;
      entry["axis_min"] = std::round(eval::Probit(curve.axis_min) * 1000) / 1000;
    }
    det[a.run_id].push_back(std::move(entry));
  }
  return ObjectOf(std::move(det));
}

// Per recipe the settings of its newest run as the baseline, and per settings hash what differs
// from it, so that the page can compare any runs without carrying every run's settings.
Json SettingsJson(const std::vector<db::RunRow>& runs, const ProvenanceMap& provenance) {
  Json baselines = Json::object();
  std::map<std::string, Json> baseline_of;  // recipe -> its parsed baseline
  Json deltas = Json::object();
  std::set<std::string> seen;
  for (const auto& r : runs) {  // newest first
    if (r.info.settings_json.empty()) continue;
    auto base = baseline_of.find(r.info.recipe);
    if (base == baseline_of.end()) {
      Json settings = SettingsOf(r);
      Json flat = Json::object();
      for (auto it = settings.begin(); it != settings.end(); ++it) flat[it.key()] = it.value().dump();
      baselines[r.info.recipe] = std::move(flat);
      base = baseline_of.emplace(r.info.recipe, std::move(settings)).first;
    }
    const std::string id = r.info.recipe + "|" + r.info.settings_hash;
    if (!seen.insert(id).second) continue;
    Json delta = Json::object();
    for (const auto& d : settings::DiffJson(base->second, SettingsOf(r))) delta[d.key] = d.b ? Json(*d.b) : Json();
    deltas[id] = std::move(delta);
  }
  Json sources = Json::object();
  std::set<std::string> configs;
  for (const auto& r : runs) configs.insert(ConfigKey(r.info.recipe, r.info.config));
  for (const auto& config : configs) {
    const auto found = provenance.find(config);
    if (found == provenance.end()) continue;
    Json keys = Json::object();
    for (const auto& [key, source] : found->second) keys[key] = Json::array({source.origin, source.value_json});
    sources[config] = std::move(keys);
  }
  return Json{{"baselines", std::move(baselines)}, {"deltas", std::move(deltas)}, {"provenance", std::move(sources)}};
}

Json RunningJson(const std::vector<RunningJob>& jobs) {
  Json out = Json::array();
  for (const auto& job : jobs) {
    std::vector<std::string> gpus;
    for (int g : job.run.info.gpu_ids) gpus.push_back(std::to_string(g));
    Json progress;
    if (job.progress) {
      const auto& p = *job.progress;
      progress = Json{{"done", p.done},           {"total", Rounded(p.total, 8)},       {"unit", p.unit},
                      {"what", p.what},           {"rate", Rounded(p.rate)},
                      {"eta_s", Rounded(p.eta_seconds)}, {"updated", p.updated_time}};
    }
    out.push_back({{"run", job.run.id},
                   {"recipe", job.run.info.recipe},
                   {"config", job.run.info.config},
                   {"host", job.run.info.host},
                   {"gpus", Join(gpus, ",")},
                   {"world_size", job.run.info.world_size},
                   {"start", job.run.start_time},
                   {"heartbeat", job.run.heartbeat_time},
                   {"stage", job.stage ? Json(job.stage->stage) : Json()},
                   {"stage_name", job.stage ? Json(job.stage->name) : Json()},
                   {"stage_start", job.stage ? Json(job.stage->start_time) : Json()},
                   {"epoch", job.last_epoch ? Json(*job.last_epoch) : Json()},
                   {"progress", std::move(progress)}});
  }
  return out;
}

// Probit positions of the DET axes' ticks (percent) and the axes' default range; a chart starts
// at the lowest "axis_min" of its curves.
Json DetAxisJson() {
  Json ticks = Json::array();
  for (double p : eval::DetAxisTicks()) {
    ticks.push_back({{"value", std::round(eval::Probit(p) * 1000) / 1000}, {"label", fmt::format("{:g}", p * 100)}});
  }
  const auto probit = [](double p) { return std::round(eval::Probit(p) * 1000) / 1000; };
  return Json{{"ticks", std::move(ticks)}, {"min", probit(0.001)}, {"max", probit(eval::DetAxisTicks().back())}};
}

}  // namespace

std::vector<RunningJob> RunningJobs(db::Database& database, const std::vector<db::RunRow>& runs) {
  std::vector<std::int64_t> running;
  for (const auto& r : runs) {
    if (r.status == db::RunStatus::kRunning) running.push_back(r.id);
  }
  std::map<std::int64_t, db::ProgressRow> progress;  // the lowest rank's row of each run
  if (!running.empty()) {
    for (auto& row : database.ProgressRows(running)) {
      const auto it = progress.find(row.run_id);
      if (it == progress.end() || row.rank < it->second.rank) progress[row.run_id] = std::move(row);
    }
  }
  std::vector<RunningJob> jobs;
  for (const auto& r : runs) {
    if (r.status != db::RunStatus::kRunning) continue;
    RunningJob job;
    job.run = r;
    if (const auto it = progress.find(r.id); it != progress.end()) {
      const auto& p = it->second.record;
      JobProgress jp;
      jp.done = static_cast<double>(p.done);
      if (p.total) jp.total = static_cast<double>(*p.total);
      jp.unit = p.unit;
      jp.what = p.what;
      jp.rate = p.rate;
      jp.eta_seconds = p.eta_seconds;
      jp.updated_time = it->second.updated_time;
      job.progress = jp;
    }
    for (const auto& stage : database.Stages(r.id)) {
      if (stage.status == db::RunStatus::kRunning) job.stage = stage;  // in start order: the latest wins
    }
    const auto epochs = database.Epochs(r.id);
    if (!epochs.empty()) job.last_epoch = epochs.back().record.epoch;
    jobs.push_back(std::move(job));
  }
  return jobs;
}

DetCurve ReadDetCurve(const stdfs::path& path, std::size_t max_points) {
  DetCurve curve;
  curve.path = path.string();
  curve.trial_list = eval::TrialListOfDetFile(path).value_or(path.stem().string());
  std::error_code ec;
  if (!stdfs::exists(path, ec)) {
    curve.note = fmt::format("{}: cannot be read (moved or deleted?)", path.string());
    return curve;
  }
  std::vector<eval::DetPoint> points;
  try {
    points = eval::ReadDetPoints(path);
  } catch (const DataError& e) {
    curve.note = e.what();
    return curve;
  }
  // The EER point: where the curve is closest to the diagonal p_miss = p_fa.
  std::size_t eer = points.size();
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    if (!(p.p_miss > 0 && p.p_miss < 1 && p.p_fa > 0 && p.p_fa < 1)) continue;  // off the probit axes
    const bool closer =
        eer == points.size() || std::abs(p.p_miss - p.p_fa) < std::abs(points[eer].p_miss - points[eer].p_fa);
    if (closer) eer = i;
  }
  if (eer == points.size()) {
    curve.note = fmt::format("{}: no DET points", path.string());
    return curve;
  }
  curve.eer_percent = 50 * (points[eer].p_miss + points[eer].p_fa);
  curve.axis_min = eval::DetAxisMin(points);
  for (const auto& p : eval::ThinDetPoints(points, std::max<std::size_t>(max_points, 2), eer)) {
    curve.probit_fa.push_back(eval::Probit(p.p_fa));
    curve.probit_miss.push_back(eval::Probit(p.p_miss));
  }
  return curve;
}

nlohmann::ordered_json BuildReportData(db::Database& database, const ReportOptions& options) {
  const auto runs = database.ListRuns(RunFilterOf(options.filter));
  std::set<std::int64_t> run_ids;
  std::map<std::int64_t, stdfs::path> output_folders;
  for (const auto& r : runs) {
    run_ids.insert(r.id);
    output_folders[r.id] = r.info.output_folder;
  }
  db::ResultFilter results = ResultFilterOf(options.filter);
  const auto summary = database.ResultSummary(results);
  results.stage.reset();  // the in-training EERs are those of every stage that records an epoch
  const auto eers = database.EpochEers(results);
  const auto epochs = database.EpochsOfRuns(RunFilterOf(options.filter));
  const auto det = database.ArtifactsOfKind("det", RunFilterOf(options.filter));
  ProvenanceMap provenance = options.provenance;
  if (options.resolve_provenance) {
    std::set<std::pair<std::string, std::string>> distinct;
    for (const auto& r : runs) distinct.emplace(r.info.recipe, r.info.config);
    for (auto& [key, sources] : options.resolve_provenance({distinct.begin(), distinct.end()})) {
      provenance.emplace(key, std::move(sources));
    }
  }
  Json filter = Json::object();
  if (options.filter.recipe) filter["recipe"] = *options.filter.recipe;
  if (options.filter.config) filter["config"] = *options.filter.config;
  if (options.filter.trial_list) filter["trial_list"] = *options.filter.trial_list;
  if (options.filter.stage) filter["stage"] = *options.filter.stage;
  return Json{{"title", options.title},
              {"database", database.location()},
              {"generated", options.generated_time.empty() ? db::NowUtc() : options.generated_time},
              {"filter", std::move(filter)},
              {"runs", RunsJson(runs)},
              {"grid", GridJson(summary)},
              {"curves", CurvesJson(epochs, eers, run_ids)},
              {"det", DetJson(det, output_folders, options)},
              {"det_axis", DetAxisJson()},
              {"settings", SettingsJson(runs, provenance)},
              {"running", RunningJson(RunningJobs(database, runs))}};
}

}  // namespace asv::report
