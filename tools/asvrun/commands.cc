#include "tools/asvrun/commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <filesystem>
#include <iostream>
#include <tuple>
#include <utility>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/base/progress.h"
#include "asvcpp/db/database.h"
#include "asvcpp/eval/det.h"
#include "asvcpp/eval/llr_metrics.h"
#include "asvcpp/eval/metrics.h"
#include "asvcpp/eval/score_file.h"
#include "asvcpp/recipe/config_loader.h"
#include "asvcpp/settings/dump.h"
#include "recipes/catalog.h"
#include "tools/asvrun/slurm.h"
#include "tools/asvrun/table.h"

namespace asv::tools {
namespace stdfs = std::filesystem;

namespace {

constexpr const char* kDefaultRecipe = "voxceleb/xvector";

void PrintWarnings(const Diagnostics& diags) {
  std::cerr << diags.RenderWarnings();
}

std::string RecipeName(const ConfigSource& source) {
  return source.recipe.empty() ? std::string(kDefaultRecipe) : source.recipe;
}

// The listing commands only read: they open the database read-only, so that a database of
// another user or in a read-only folder can be read, and never create, migrate or change one.
db::Database OpenForReading(const stdfs::path& path) {
  db::DatabaseOptions options;
  options.read_only = true;
  options.slurm_job_end = [](std::int64_t job_id) { return slurm::JobEnd(job_id); };
  return db::Database(path, options);
}

// "1234", or "1234_7" for task 7 of a job array; "" outside SLURM.
std::string SlurmJobText(const db::RunInfo& info) {
  if (!info.slurm_job_id) return "";
  return info.slurm_array_task_id ? fmt::format("{}_{}", *info.slurm_job_id, *info.slurm_array_task_id)
                                  : std::to_string(*info.slurm_job_id);
}

// A SLURM job that asvrun --slurm submitted and no run has taken over yet, as `asvrun runs`
// shows it: "pending" while squeue lists it pending (note: its reason), "starting" while it runs
// but has not recorded its run yet, "failed" when SLURM says it ended (note: SLURM's reason),
// else "unknown" (squeue and scontrol know nothing of it).
struct SubmittedJob {
  db::SlurmJobRecord job;
  std::string status;
  std::string note;
};

SubmittedJob DescribeSubmittedJob(const db::SlurmJobRecord& job) {
  SubmittedJob out{job, "", ""};
  const std::string queue = slurm::QueueState(job.job_id);  // e.g. "PENDING (Resources)"
  const std::string state = queue.substr(0, queue.find(' '));
  const std::string reason = queue.find(' ') == std::string::npos ? "" : queue.substr(queue.find(' ') + 1);
  if (state == "PENDING" || state == "CONFIGURING" || state == "REQUEUED" || state == "SUSPENDED") {
    out.status = "pending";
    out.note = fmt::format("SLURM: {} {}", state, reason);
  } else if (!state.empty() && state != "COMPLETED" && state != "CANCELLED" && state != "TIMEOUT" &&
             state != "FAILED" && state != "OUT_OF_MEMORY" && state != "NODE_FAIL") {
    out.status = "starting";
    out.note = fmt::format("SLURM: {}; the run is not recorded yet", state);
  } else if (const auto end = slurm::JobEnd(job.job_id)) {
    out.status = "failed";
    out.note = "ended before asvrun recorded a run: " + end->reason;
  } else {
    out.status = "unknown";
    out.note = fmt::format("SLURM knows nothing of job {} (any more) and no run recorded it; output: {}", job.job_id,
                           job.output_file);
  }
  return out;
}

std::string FirstLine(const std::string& s) {
  const auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl) + " ...";
}

std::string ShortTime(const std::string& iso) {
  // "2026-11-21T08:37:00.123Z" -> "2026-11-21 08:37:00"
  if (iso.size() < 19) return iso;
  std::string t = iso.substr(0, 19);
  t[10] = ' ';
  return t;
}

// Seconds from the UTC ISO-8601 time `iso` ("2026-11-21T08:37:00.123Z") to now; nullopt when it
// cannot be read.
std::optional<double> AgeSeconds(const std::string& iso) {
  std::tm tm{};
  int millis = 0;
  if (std::sscanf(iso.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &millis) < 6) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const auto then = std::chrono::system_clock::from_time_t(::timegm(&tm)) + std::chrono::milliseconds(millis);
  return std::chrono::duration<double>(std::chrono::system_clock::now() - then).count();
}

nlohmann::ordered_json OptionalJson(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json();
}

// `asvrun runs --running`: each running run with the progress its ranks last recorded; one table
// row per run from its lowest rank (every rank in the JSON form).
int RunningRuns(db::Database& database, db::RunFilter filter, const stdfs::path& path, bool json) {
  filter.status = db::RunStatus::kRunning;
  const auto runs = database.ListRuns(filter);
  std::vector<std::int64_t> ids;
  for (const auto& r : runs) ids.push_back(r.id);
  std::map<std::int64_t, std::vector<db::ProgressRow>> progress;
  if (!ids.empty()) {
    for (auto& row : database.ProgressRows(ids)) progress[row.run_id].push_back(std::move(row));
  }
  // A run without a progress row yet shows its running stage from the stages table.
  const auto stage_of = [&](std::int64_t run_id) {
    std::string stage;
    for (const auto& st : database.Stages(run_id)) {
      if (st.status == db::RunStatus::kRunning) stage = fmt::format("{} {}", st.stage, st.name);
    }
    return stage;
  };
  if (json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& r : runs) {
      nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
      for (const auto& p : progress[r.id]) {
        const auto& rec = p.record;
        ranks.push_back({{"rank", p.rank},
                         {"stage", rec.stage},
                         {"what", rec.what},
                         {"done", rec.done},
                         {"total", rec.total ? nlohmann::ordered_json(*rec.total) : nlohmann::ordered_json()},
                         {"unit", rec.unit},
                         {"rate", OptionalJson(rec.rate)},
                         {"eta_seconds", OptionalJson(rec.eta_seconds)},
                         {"updated_time", p.updated_time},
                         {"age_seconds", OptionalJson(AgeSeconds(p.updated_time))}});
      }
      out.push_back({{"id", r.id},
                     {"recipe", r.info.recipe},
                     {"config", r.info.config},
                     {"gpu_ids", r.info.gpu_ids},
                     {"world_size", r.info.world_size},
                     {"host", r.info.host},
                     {"pid", r.info.pid},
                     {"start_time", r.start_time},
                     {"heartbeat_time", r.heartbeat_time},
                     {"stage", progress[r.id].empty() ? stage_of(r.id) : progress[r.id].front().record.stage},
                     {"progress", ranks}});
    }
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : runs) {
    const std::string gpus = r.info.gpu_ids.empty() ? "cpu" : fmt::format("{}", fmt::join(r.info.gpu_ids, ","));
    const auto& rows_of_run = progress[r.id];
    if (rows_of_run.empty()) {
      rows.push_back({std::to_string(r.id), r.info.config, gpus, stage_of(r.id), "", "", "", "", ""});
      continue;
    }
    const auto& p = rows_of_run.front();
    const auto& rec = p.record;
    std::string done = base::Progress::FormatCount(rec.done);
    if (rec.total) {
      done += fmt::format("/{} {} ({:.1f}%)", base::Progress::FormatCount(*rec.total), rec.unit,
                          *rec.total > 0 ? 100.0 * static_cast<double>(rec.done) / static_cast<double>(*rec.total) : 0.0);
    } else {
      done += " " + rec.unit;
    }
    const std::string rate = rec.rate ? fmt::format("{} {}/s", base::Progress::FormatRate(*rec.rate), rec.unit) : "?";
    const std::string eta = rec.eta_seconds ? base::Progress::FormatDuration(*rec.eta_seconds) : "?";
    const auto age = AgeSeconds(p.updated_time);
    const std::string updated = age ? fmt::format("{} ago", base::Progress::FormatDuration(std::max(0.0, *age))) : "?";
    rows.push_back({std::to_string(r.id), r.info.config, gpus, rec.stage, rec.what, done, rate, eta, updated});
  }
  fmt::print("# {}\n", DbName(path));
  std::cout << FormatTable({"run", "config", "GPUs", "stage", "what", "done", "rate", "ETA", "updated"}, rows);
  return kExitOk;
}

}  // namespace

std::string DbName(const stdfs::path& path) { return db::RedactPassword(path.string()); }

stdfs::path SelectDatabase(const DbSelection& selection) {
  if (!selection.db.empty()) {
    if (db::IsPostgresUri(selection.db)) return selection.db;  // the server says whether it exists
    if (!stdfs::exists(selection.db)) throw DbError(fmt::format("{}: no such experiment database", selection.db));
    return selection.db;
  }
  ConfigSource source = selection.source;
  source.recipe = RecipeName(source);
  const auto& recipe = recipes::FindRecipe(source.recipe);
  Diagnostics diags;
  recipe::ConfigSet set(recipe, Locate(source), std::vector<std::string>{}, diags);  // The init config only.
  const auto settings = set.InitSettings(diags);
  diags.ThrowIfErrors();
  const stdfs::path path = ExperimentDb("", *settings);
  if (db::IsPostgresUri(path.string())) return path;
  return stdfs::exists(path) ? path : stdfs::path();
}

std::vector<fs::NamedPath> DatabaseFiles(const stdfs::path& path) {
  if (db::IsPostgresUri(path.string())) return {};  // no file of this machine
  std::vector<fs::NamedPath> files{{"--db", path}};
  for (const char* suffix : {"-wal", "-shm", "-journal"}) files.push_back({"--db", stdfs::path(path.string() + suffix)});
  return files;
}

db::Database OpenDatabaseForReading(const DbSelection& selection) {
  const stdfs::path path = SelectDatabase(selection);
  if (path.empty()) throw DbError("no experiment database yet: no run has been recorded");
  return OpenForReading(path);
}

recipe::RecipeFiles Locate(const ConfigSource& source) {
  recipe::LocateOptions options;
  if (!source.init_config.empty()) options.init_config = stdfs::path(source.init_config);
  if (!source.run_configs.empty()) options.run_configs = stdfs::path(source.run_configs);
  if (!source.config_root.empty()) options.config_root = stdfs::path(source.config_root);
  return recipe::LocateRecipeFiles(source.recipe, options);
}

stdfs::path OutputFolder(const recipe::RecipeSettings& settings) {
  return stdfs::weakly_canonical(stdfs::absolute(settings.common().paths.output_folder));
}

stdfs::path ExperimentDb(const std::string& db_option, const recipe::RecipeSettings& settings) {
  const std::string& chosen = db_option.empty() ? settings.common().paths.experiment_db : db_option;
  if (chosen.empty()) return db::Database::DefaultPath(OutputFolder(settings));
  if (db::IsPostgresUri(chosen)) return stdfs::path(chosen);
  return stdfs::absolute(stdfs::path(chosen));
}

std::string Lineage(const recipe::LoadedConfig& config) {
  std::string out = config.name;
  for (auto it = config.parents.rbegin(); it != config.parents.rend(); ++it) out += " < " + *it;
  return out;
}

int Show(const ShowOptions& options) {
  const auto& recipe = recipes::FindRecipe(options.source.recipe);
  std::string warnings;
  auto loaded = recipe::LoadConfigs(recipe, Locate(options.source), {options.config}, options.overrides, &warnings);
  std::cerr << warnings;
  const auto& config = loaded.front();
  const auto& tree = config.settings->tree();
  if (options.json) {
    std::cout << settings::ToJson(tree).dump(2) << "\n";
    return kExitOk;
  }
  fmt::print("# {} {}\n", recipe.name(), Lineage(config));
  settings::TextOptions text;
  text.only_non_default = !options.all;
  text.explain = options.explain;
  std::cout << settings::ToText(tree, text);
  return kExitOk;
}

int List(const ConfigSource& source) {
  if (source.recipe.empty()) {
    for (const auto* r : recipes::AllRecipes()) {
      fmt::print("{}\n", r->name());
      for (const auto& stage : r->stages()) fmt::print("  stage {} {:<13}{}\n", stage.number, stage.name, stage.description);
    }
    return kExitOk;
  }
  const auto& recipe = recipes::FindRecipe(source.recipe);
  Diagnostics diags;
  recipe::ConfigSet set(recipe, Locate(source), diags);
  if (!diags.has_errors()) PrintWarnings(diags);  // Else the ConfigError's message holds them.
  diags.ThrowIfErrors();
  std::vector<std::vector<std::string>> rows;
  for (const auto& block : set.run_configs().blocks) {
    rows.push_back({block.name, block.parents.empty() ? "" : fmt::format("< {}", fmt::join(block.parents, " < ")),
                    block.comment});
  }
  fmt::print("# {} ({})\n", recipe.name(), set.files().run_configs.string());
  std::cout << FormatTable({"config", "parents", "description"}, rows);
  return kExitOk;
}

int HelpSettings(const ConfigSource& source) {
  const auto& recipe = recipes::FindRecipe(RecipeName(source));
  const auto settings = recipe.NewSettings();
  std::cout << settings::HelpText(settings->tree());
  return kExitOk;
}

int Runs(const RunsOptions& options) {
  const stdfs::path path = SelectDatabase(options.selection);
  if (path.empty()) {
    fmt::print(stderr, "no experiment database yet: no run has been recorded\n");
    return kExitOk;
  }
  db::Database database = OpenForReading(path);
  db::RunFilter filter;
  if (options.selection.recipe_given) filter.recipe = options.selection.source.recipe;
  if (!options.config.empty()) filter.config = options.config;
  const bool only_pending = options.status == "pending";
  if (!options.status.empty() && !only_pending) filter.status = db::ParseRunStatus(options.status);
  filter.limit = options.limit;
  if (options.running) return RunningRuns(database, filter, path, options.json);
  std::vector<db::RunRow> runs;
  if (!only_pending) runs = database.ListRuns(filter);
  // Jobs submitted with --slurm that no run has taken over: listed first (the newest), status
  // from squeue and scontrol.
  std::vector<SubmittedJob> submitted;
  if (options.status.empty() || only_pending || options.status == "failed") {
    for (const auto& job : database.UnclaimedSlurmJobs()) {
      if (filter.recipe && job.recipe != *filter.recipe) continue;
      if (filter.config && job.config != *filter.config) continue;
      auto described = DescribeSubmittedJob(job);
      if (!options.status.empty() && described.status != options.status) continue;
      submitted.push_back(std::move(described));
    }
  }
  if (options.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& r : runs) {
      out.push_back({{"id", r.id},
                     {"recipe", r.info.recipe},
                     {"config", r.info.config},
                     {"parents", r.info.parent_chain},
                     {"status", std::string(db::ToString(r.status))},
                     {"start_time", r.start_time},
                     {"end_time", r.end_time ? nlohmann::ordered_json(*r.end_time) : nlohmann::ordered_json()},
                     {"host", r.info.host},
                     {"pid", r.info.pid},
                     {"settings_hash", r.info.settings_hash},
                     {"command_line", r.info.command_line},
                     {"slurm_job_id", r.info.slurm_job_id ? nlohmann::ordered_json(*r.info.slurm_job_id)
                                                           : nlohmann::ordered_json()},
                     {"slurm_array_task_id", r.info.slurm_array_task_id
                                                 ? nlohmann::ordered_json(*r.info.slurm_array_task_id)
                                                 : nlohmann::ordered_json()},
                     {"error", r.error_text ? nlohmann::ordered_json(*r.error_text) : nlohmann::ordered_json()}});
    }
    for (const auto& s : submitted) {
      out.push_back({{"id", nullptr},
                     {"recipe", s.job.recipe},
                     {"config", s.job.config},
                     {"status", s.status},
                     {"submit_time", s.job.submit_time},
                     {"slurm_job_id", s.job.job_id},
                     {"output_file", s.job.output_file},
                     {"command_line", s.job.command_line},
                     {"note", s.note}});
    }
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : submitted) {
    rows.push_back({"-", s.status, s.job.recipe, s.job.config, "submitted " + ShortTime(s.job.submit_time), "",
                    std::to_string(s.job.job_id), "", s.note});
  }
  for (const auto& r : runs) {
    rows.push_back({std::to_string(r.id), std::string(db::ToString(r.status)), r.info.recipe, r.info.config,
                    ShortTime(r.start_time), r.end_time ? ShortTime(*r.end_time) : "", SlurmJobText(r.info),
                    fmt::format("{}:{}", r.info.host, r.info.pid), r.error_text ? FirstLine(*r.error_text) : ""});
  }
  fmt::print("# {}\n", DbName(path));
  std::cout << FormatTable(
      {"run", "status", "recipe", "config", "started (UTC)", "ended (UTC)", "job", "host:pid", "error"}, rows);
  return kExitOk;
}

int Results(const ResultsOptions& options) {
  const stdfs::path path = SelectDatabase(options.selection);
  if (path.empty()) {
    fmt::print(stderr, "no experiment database yet: no run has been recorded\n");
    return kExitOk;
  }
  db::Database database = OpenForReading(path);
  db::ResultFilter filter;
  if (options.selection.recipe_given) filter.recipe = options.selection.source.recipe;
  if (!options.config.empty()) filter.config = options.config;
  if (!options.trial_list.empty()) filter.trial_list = options.trial_list;
  if (options.stage >= 0) filter.stage = options.stage;
  filter.best_per_config = options.best;
  const auto results = database.Results(filter);
  // The operating points of the results' costs, in order of first appearance: one min_dcf column
  // each (and act_dcf in CSV), beside ASVtorch's min_dcf at p_target.
  std::vector<std::tuple<double, double, double>> points;
  for (const auto& r : results) {
    for (const auto& c : r.record.costs) {
      const auto point = std::make_tuple(c.p_target, c.c_miss, c.c_fa);
      if (std::find(points.begin(), points.end(), point) == points.end()) points.push_back(point);
    }
  }
  const auto point_name = [](const std::tuple<double, double, double>& point) {
    const auto [p, c_miss, c_fa] = point;
    return c_miss == 1 && c_fa == 1 ? fmt::format("{:g}", p) : fmt::format("{:g},{:g},{:g}", p, c_miss, c_fa);
  };
  const bool csv = options.format == "csv";
  std::vector<std::string> header = {"run", "recipe", "config", "stage", "epoch", "trial_list",
                                     "eer_percent", "min_dcf", "p_target"};
  for (const auto& point : points) header.push_back(fmt::format("min_dcf({})", point_name(point)));
  if (csv) {
    for (const auto& point : points) header.push_back(fmt::format("act_dcf({})", point_name(point)));
  }
  for (const char* name : {"cllr", "min_cllr", "targets", "nontargets"}) header.emplace_back(name);
  const auto optional = [](const std::optional<double>& v) { return v ? fmt::format("{:.4f}", *v) : std::string(); };
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : results) {
    const auto& x = r.record;
    std::vector<std::string> row = {std::to_string(r.run_id), r.recipe, r.config,
                                    x.stage ? std::to_string(*x.stage) : "", x.epoch ? std::to_string(*x.epoch) : "",
                                    x.trial_list, fmt::format("{:.4f}", x.eer), fmt::format("{:.4f}", x.min_dcf),
                                    fmt::format("{:g}", x.p_target)};
    const auto cost_at = [&x](const std::tuple<double, double, double>& point) -> const db::CostRecord* {
      for (const auto& c : x.costs) {
        if (std::make_tuple(c.p_target, c.c_miss, c.c_fa) == point) return &c;
      }
      return nullptr;
    };
    for (const auto& point : points) {
      const db::CostRecord* c = cost_at(point);
      row.push_back(c ? fmt::format("{:.4f}", c->min_dcf) : "");
    }
    if (csv) {
      for (const auto& point : points) {
        const db::CostRecord* c = cost_at(point);
        row.push_back(c ? optional(c->act_dcf) : "");
      }
    }
    row.insert(row.end(), {optional(x.cllr), optional(x.min_cllr), std::to_string(x.n_target),
                           std::to_string(x.n_nontarget)});
    rows.push_back(std::move(row));
  }
  if (csv) {
    std::cout << FormatCsv(header, rows);
  } else if (options.format == "json") {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& r : results) {
      const auto& x = r.record;
      out.push_back({{"run", r.run_id}, {"recipe", r.recipe}, {"config", r.config},
                     {"stage", x.stage ? nlohmann::ordered_json(*x.stage) : nlohmann::ordered_json()},
                     {"epoch", x.epoch ? nlohmann::ordered_json(*x.epoch) : nlohmann::ordered_json()},
                     {"trial_list", x.trial_list}, {"eer_percent", x.eer}, {"min_dcf", x.min_dcf},
                     {"p_target", x.p_target}, {"targets", x.n_target}, {"nontargets", x.n_nontarget}});
      auto& entry = out.back();
      entry["cllr"] = x.cllr ? nlohmann::ordered_json(*x.cllr) : nlohmann::ordered_json();
      entry["min_cllr"] = x.min_cllr ? nlohmann::ordered_json(*x.min_cllr) : nlohmann::ordered_json();
      entry["costs"] = nlohmann::ordered_json::array();
      for (const auto& c : x.costs) {
        entry["costs"].push_back(
            {{"p_target", c.p_target}, {"c_miss", c.c_miss}, {"c_fa", c.c_fa},
             {"min_dcf", std::isnan(c.min_dcf) ? nlohmann::ordered_json() : nlohmann::ordered_json(c.min_dcf)},
             {"act_dcf", c.act_dcf ? nlohmann::ordered_json(*c.act_dcf) : nlohmann::ordered_json()}});
      }
    }
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    fmt::print("# {}\n", DbName(path));
    std::cout << FormatTable(header, rows);
  }
  return kExitOk;
}

int Epochs(const EpochsOptions& options) {
  const stdfs::path path = SelectDatabase(options.selection);
  if (path.empty()) throw DbError("no experiment database yet: no run has been recorded");
  db::Database database = OpenForReading(path);
  const auto run = database.GetRun(options.run);
  if (!run) throw DbError(fmt::format("{}: no run {}", DbName(path), options.run));
  const auto epochs = database.Epochs(options.run);
  auto optional = [](const std::optional<double>& v, int decimals) {
    return v ? fmt::format("{:.{}f}", *v, decimals) : std::string();
  };
  auto json_of = [](const std::optional<double>& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json();
  };
  const std::vector<std::string> header = {"epoch",     "loss",     "accuracy_percent", "learning_rate",
                                           "seconds",   "frames_per_second", "val_loss", "val_accuracy_percent",
                                           "data_wait_percent"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : epochs) {
    const auto& x = e.record;
    rows.push_back({std::to_string(x.epoch), fmt::format("{:.4f}", x.loss), fmt::format("{:.2f}", x.accuracy),
                    fmt::format("{:g}", x.learning_rate), fmt::format("{:.1f}", x.seconds),
                    fmt::format("{:.0f}", x.frames_per_second), optional(x.val_loss, 4),
                    optional(x.val_accuracy, 2), optional(x.data_wait_percent, 1)});
  }
  if (options.format == "csv") {
    std::cout << FormatCsv(header, rows);
  } else if (options.format == "json") {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& e : epochs) {
      const auto& x = e.record;
      // NaN (a diverged loss) has no JSON form: null, as the database stores it.
      out.push_back({{"epoch", x.epoch}, {"loss", std::isnan(x.loss) ? nlohmann::ordered_json() : nlohmann::ordered_json(x.loss)},
                     {"accuracy_percent", x.accuracy}, {"learning_rate", x.learning_rate}, {"seconds", x.seconds},
                     {"frames_per_second", x.frames_per_second}, {"val_loss", json_of(x.val_loss)},
                     {"val_accuracy_percent", json_of(x.val_accuracy)},
                     {"data_wait_percent", json_of(x.data_wait_percent)}, {"recorded_time", e.recorded_time}});
    }
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    fmt::print("# {}\n# run {}: {} {} ({})\n", DbName(path), run->id, run->info.recipe, run->info.config,
               db::ToString(run->status));
    std::cout << FormatTable(header, rows);
  }
  return kExitOk;
}

int Diff(const DbSelection& selection, std::int64_t run_a, std::int64_t run_b) {
  const stdfs::path path = SelectDatabase(selection);
  if (path.empty()) throw DbError("no experiment database yet: no run has been recorded");
  db::Database database = OpenForReading(path);
  const auto a = database.GetRun(run_a);
  const auto b = database.GetRun(run_b);
  if (!a) throw DbError(fmt::format("{}: no run {}", DbName(path), run_a));
  if (!b) throw DbError(fmt::format("{}: no run {}", DbName(path), run_b));
  fmt::print("run {}: {} {} ({})\nrun {}: {} {} ({})\n\n", a->id, a->info.recipe, a->info.config,
             db::ToString(a->status), b->id, b->info.recipe, b->info.config, db::ToString(b->status));
  const auto stored = [&path](const db::RunRow& run) {
    auto json = nlohmann::ordered_json::parse(run.info.settings_json, nullptr, false);
    if (json.is_discarded() || !json.is_object()) {
      throw DbError(fmt::format("{}: the stored settings of run {} (runs.settings_json) are not a JSON object; the "
                                "database was edited or damaged",
                                DbName(path), run.id));
    }
    return json;
  };
  const auto diffs = settings::DiffJson(stored(*a), stored(*b));
  if (diffs.empty()) {
    fmt::print("settings: identical (hash {})\n", a->info.settings_hash);
  } else {
    fmt::print("settings that differ (run {} | run {}):\n{}", a->id, b->id, settings::FormatDiff(diffs));
  }
  db::ResultFilter fa;
  fa.run_id = run_a;
  db::ResultFilter fb;
  fb.run_id = run_b;
  const auto ra = database.Results(fa);
  const auto rb = database.Results(fb);
  if (ra.empty() && rb.empty()) {
    fmt::print("\nresults: none recorded for either run\n");
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  auto add = [&](const std::vector<db::ResultRow>& results) {
    for (const auto& r : results) {
      rows.push_back({std::to_string(r.run_id), r.record.epoch ? std::to_string(*r.record.epoch) : "",
                      r.record.trial_list, fmt::format("{:.4f}", r.record.eer), fmt::format("{:.4f}", r.record.min_dcf)});
    }
  };
  add(ra);
  add(rb);
  fmt::print("\nresults:\n");
  std::cout << FormatTable({"run", "epoch", "trial_list", "eer_percent", "min_dcf"}, rows);
  return kExitOk;
}

int Eval(const EvalOptions& options) {
  fs::CheckOutputIsNotInput({"--det", options.det}, {{"--scores", options.scores}, {"--trials", options.trials}});
  const auto trials = eval::ReadTrialList(options.trials);
  const auto scores = eval::ReadScoreFile(options.scores, &trials);
  eval::LabelCounts counts;
  std::vector<double> target_scores;
  std::vector<double> nontarget_scores;
  eval::SplitScores(scores, trials.Classify(eval::LabelVocabulary::Default(), &counts), &target_scores,
                    &nontarget_scores);
  std::vector<eval::DcfParams> points;
  for (double p : options.p_targets) {
    eval::DcfParams params;
    params.p_target = p;
    params.Validate();
    points.push_back(params);
  }
  const eval::LlrMetrics llr = eval::ComputeLlrMetrics(target_scores, nontarget_scores, points);
  const eval::SortedScores sorted(std::move(target_scores), std::move(nontarget_scores));
  const auto eer = sorted.Eer();
  const auto tie_aware = sorted.TieAwareEer();
  const bool ties_decide = eval::TiesDecideEer(eer, tie_aware);
  if (ties_decide) ASV_LOG(Warning, "{}: {}", options.scores, eval::DescribeTiedEer(eer, tie_aware));
  std::vector<eval::MinDcfResult> dcfs;
  for (const auto& params : points) dcfs.push_back(sorted.MinDcf(params));
  if (!options.det.empty()) eval::WriteDetPoints(options.det, eval::DetPoints(sorted, options.det_points));
  if (options.json) {
    nlohmann::ordered_json out;
    out["eer_percent"] = eer.percent();
    out["eer_threshold"] = eer.threshold;
    out["tie_aware_eer_percent"] = tie_aware.percent();
    out["tie_aware_eer_threshold"] = tie_aware.threshold;
    out["ties_decide_eer"] = ties_decide;
    out["min_dcf"] = nlohmann::ordered_json::array();
    for (const auto& d : dcfs) {
      out["min_dcf"].push_back({{"p_target", d.params.p_target}, {"c_miss", d.params.c_miss},
                                {"c_fa", d.params.c_fa}, {"value", d.min_dcf}, {"threshold", d.threshold}});
    }
    out["cllr"] = llr.cllr;
    out["min_cllr"] = llr.min_cllr;
    out["act_dcf"] = nlohmann::ordered_json::array();
    for (const auto& a : llr.act_dcf) {
      out["act_dcf"].push_back({{"p_target", a.params.p_target}, {"c_miss", a.params.c_miss}, {"c_fa", a.params.c_fa},
                                {"value", a.act_dcf}, {"threshold", a.threshold}, {"p_miss", a.p_miss},
                                {"p_fa", a.p_fa}});
    }
    out["targets"] = counts.n_target;
    out["nontargets"] = counts.n_nontarget;
    out["other"] = counts.n_other;
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  fmt::print("trials: {}\n", counts.Describe());
  fmt::print("EER = {:.4f} %  (threshold {:.6g})  tie-aware EER = {:.4f} %{}\n", eer.percent(), eer.threshold,
             tie_aware.percent(), ties_decide ? "  (tied scores decide the EER)" : "");
  for (const auto& d : dcfs) {
    fmt::print("minDCF(p_target={:g}, c_miss={:g}, c_fa={:g}) = {:.4f}  (threshold {:.6g})\n", d.params.p_target,
               d.params.c_miss, d.params.c_fa, d.min_dcf, d.threshold);
  }
  fmt::print("scores read as log-likelihood ratios: Cllr = {:.4f} bits, minCllr = {:.4f} bits\n", llr.cllr,
             llr.min_cllr);
  for (const auto& a : llr.act_dcf) {
    fmt::print("actDCF(p_target={:g}) = {:.4f}  (Bayes threshold {:.6g})\n", a.params.p_target, a.act_dcf,
               a.threshold);
  }
  if (!options.det.empty()) fmt::print("DET points written to {}\n", options.det);
  return kExitOk;
}

int DbCopy(const DbCopyOptions& options) {
  const auto same = [&] {
    if (db::IsPostgresUri(options.from) || db::IsPostgresUri(options.to)) return options.from == options.to;
    std::error_code ec;
    return stdfs::equivalent(options.from, options.to, ec);
  };
  if (same()) throw DbError(fmt::format("asvrun db copy: {} is both source and target", DbName(options.from)));
  if (!db::IsPostgresUri(options.from) && !stdfs::exists(options.from)) {
    throw DbError(fmt::format("{}: no such experiment database", options.from));
  }
  db::DatabaseOptions read_only;
  read_only.read_only = true;
  db::Database source(options.from, read_only);
  db::Database target(options.to);
  const auto copied = target.CopyFrom(source, options.replace);
  std::vector<std::vector<std::string>> rows;
  for (const auto& [table, count] : copied) rows.push_back({table, std::to_string(count)});
  fmt::print("# {} -> {}\n", DbName(options.from), DbName(options.to));
  std::cout << FormatTable({"table", "rows"}, rows);
  return kExitOk;
}

}  // namespace asv::tools
