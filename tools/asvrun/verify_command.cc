// `asvrun verify` (commands.h): trials of audio files and stored utterances scored with a model's
// system exactly as its run's stage 9 scored its trial lists (recipes/shared/verification.h), the
// audio embedded as `asvrun embed` embeds it (loaded_model.h). Linked into asvrun-torch only.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iostream>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "asvcpp/base/enum_names.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "recipes/shared/verification.h"
#include "tools/asvrun/commands.h"
#include "tools/asvrun/loaded_model.h"
#include "tools/asvrun/table.h"

namespace asv::tools {
namespace stdfs = std::filesystem;

namespace {

// One trial as asked: the enrollment side's inputs (averaged) and the test input.
struct Trial {
  std::vector<std::string> enrollment;
  std::string test;
};

std::string Join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

std::vector<std::string> SplitEnrollment(const std::string& side, const std::string& where) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto comma = side.find(kEnrollmentSeparator, start);
    parts.push_back(side.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (parts.back().empty()) {
      throw DataError(fmt::format("{}: '{}': an empty enrollment input (inputs are joined by '{}')", where, side,
                                  kEnrollmentSeparator));
    }
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

// The trials of `options`: the --trials file's lines, or the enrollment inputs against each --test.
std::vector<Trial> TrialsOf(const VerifyOptions& options) {
  std::vector<Trial> trials;
  if (!options.trials.empty()) {
    if (!options.enrollment.empty() || !options.tests.empty()) {
      throw ConfigError("asvrun verify: give either --trials FILE or enrollment inputs with --test, not both");
    }
    std::ifstream in(options.trials);
    if (!in) throw DataError(fmt::format("{}: cannot read the trial file", options.trials));
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      std::istringstream words(line);
      std::string enrollment, test;
      if (!(words >> enrollment)) continue;
      if (enrollment[0] == '#') continue;
      const std::string where = fmt::format("{}:{}", options.trials, number);
      if (!(words >> test)) throw DataError(fmt::format("{}: expected 'enrollment test', got '{}'", where, line));
      if (test.find(kEnrollmentSeparator) != std::string::npos) {
        throw DataError(fmt::format("{}: test side '{}': a test side is one audio file or utterance id", where, test));
      }
      trials.push_back({SplitEnrollment(enrollment, where), test});
    }
    if (trials.empty()) throw DataError(fmt::format("{}: no trials", options.trials));
    return trials;
  }
  if (options.enrollment.empty() || options.tests.empty()) {
    throw ConfigError("asvrun verify: give enrollment inputs and at least one --test, or --trials FILE");
  }
  for (const auto& test : options.tests) trials.push_back({options.enrollment, test});
  return trials;
}

// Whether some input of `trials` is an audio file (Inputs takes a file before a stored id).
bool AnyAudioFile(const std::vector<Trial>& trials) {
  std::error_code ec;
  for (const auto& t : trials) {
    if (stdfs::is_regular_file(t.test, ec)) return true;
    for (const auto& input : t.enrollment) {
      if (stdfs::is_regular_file(input, ec)) return true;
    }
  }
  return false;
}

// Embeddings of every input, each an audio file or an utterance id of the system's stored embeddings.
class Inputs {
 public:
  Inputs(const LoadedModel& model, const std::vector<Trial>& trials, int threads) {
    std::vector<std::string> order;
    std::set<std::string> seen;
    for (const auto& t : trials) {
      for (const auto& input : t.enrollment) {
        if (seen.insert(input).second) order.push_back(input);
      }
      if (seen.insert(t.test).second) order.push_back(t.test);
    }
    std::vector<data::PcmStoreEntry> audio;
    std::set<std::string> ids;
    std::vector<std::string> unknown;
    for (const auto& input : order) {
      std::error_code ec;
      if (stdfs::is_regular_file(input, ec)) {
        // The id names the utterance in messages (and seeds an x-vector run's dither): the file's
        // stem, numbered when two files share it.
        std::string id = stdfs::path(input).stem().string();
        std::replace_if(
            id.begin(), id.end(), [](unsigned char c) { return std::isspace(c); }, '_');
        if (id.empty()) id = "audio";
        const std::string stem = id;
        for (int n = 2; !ids.insert(id).second; ++n) id = fmt::format("{}.{}", stem, n);
        audio.push_back({id, stdfs::absolute(input).string()});
        id_of_[input] = id;
        from_audio_.insert(input);
        continue;
      }
      if (const auto row = Stored(model, input)) {
        rows_[input] = *row;
      } else {
        unknown.push_back(input);
      }
    }
    if (!unknown.empty()) {
      std::string names;
      for (std::size_t i = 0; i < unknown.size() && i < 5; ++i) names += (i ? ", " : "") + unknown[i];
      if (unknown.size() > 5) names += fmt::format(" and {} more", unknown.size() - 5);
      const std::string stored =
          model.system ? fmt::format(" nor an utterance id of the system's stored embeddings ({}.scp, {}.scp)",
                                     (model.system->folder / "embeddings/trial").string(),
                                     (model.system->folder / "embeddings/plda").string())
                       : std::string(" (a WeSpeaker model has no stored embeddings to take utterance ids from)");
      throw DataError(fmt::format("{}: neither an audio file{}", names, stored));
    }
    if (audio.empty()) return;
    const stdfs::path scratch = stdfs::temp_directory_path() / fmt::format("asvrun_verify_{}", ::getpid());
    auto embedded = EmbedAudio(model, audio, scratch, threads);
    if (!embedded.skipped.empty()) {
      std::string reasons;
      for (const auto& s : embedded.skipped)
        reasons += fmt::format("\n  {}: {}", SourceOf(audio, s.utterance), s.reason);
      throw DataError(fmt::format("{} audio file{} gave no embedding, so no trial with {} can be scored:{}",
                                  embedded.skipped.size(), embedded.skipped.size() == 1 ? "" : "s",
                                  embedded.skipped.size() == 1 ? "it" : "them", reasons));
    }
    embedded_ = std::move(embedded.embeddings);
    std::map<std::string, std::int64_t> row_of;
    for (std::size_t i = 0; i < embedded_.ids.size(); ++i) row_of[embedded_.ids[i]] = static_cast<std::int64_t>(i);
    for (const auto& [input, id] : id_of_) rows_[input] = Row{&embedded_, row_of.at(id)};
  }

  /// The embeddings of `inputs` as one table (ids: the inputs), with durations when all have them.
  backend::Embeddings Table(const std::vector<std::string>& inputs) const {
    backend::Embeddings out;
    const std::int64_t dim = rows_.at(inputs.front()).table->vectors.cols();
    out.vectors = Matrix(static_cast<std::int64_t>(inputs.size()), dim);
    bool durations = true;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Row& row = rows_.at(inputs[i]);
      if (row.table->vectors.cols() != dim) {
        throw DataError(fmt::format("'{}' and '{}' have embeddings of dimensions {} and {}", inputs.front(), inputs[i],
                                    dim, row.table->vectors.cols()));
      }
      for (std::int64_t c = 0; c < dim; ++c)
        out.vectors(static_cast<std::int64_t>(i), c) = row.table->vectors(row.index, c);
      out.ids.push_back(inputs[i]);
      durations = durations && !row.table->durations.empty();
      if (durations) out.durations.push_back(row.table->durations[static_cast<std::size_t>(row.index)]);
    }
    if (!durations) out.durations.clear();
    return out;
  }

  Inputs(const Inputs&) = delete;
  Inputs& operator=(const Inputs&) = delete;

  /// True for an input embedded from its audio, false for one of the stored embeddings.
  bool FromAudio(const std::string& input) const { return from_audio_.count(input) > 0; }

 private:
  struct Row {
    const backend::Embeddings* table = nullptr;
    std::int64_t index = 0;
  };

  std::optional<Row> Stored(const LoadedModel& model, const std::string& id) {
    if (!model.system) return std::nullopt;
    if (!stored_loaded_) {
      stored_loaded_ = true;
      for (const char* name : {"trial", "plda"}) {
        const stdfs::path stem = model.system->folder / "embeddings" / name;
        if (!stdfs::exists(stem.string() + ".scp")) continue;
        stored_.push_back(backend::ReadEmbeddings(stem));
      }
    }
    for (const auto& table : stored_) {
      const auto it = std::find(table.ids.begin(), table.ids.end(), id);
      if (it != table.ids.end()) return Row{&table, it - table.ids.begin()};
    }
    return std::nullopt;
  }

  static std::string SourceOf(const std::vector<data::PcmStoreEntry>& audio, const std::string& id) {
    for (const auto& e : audio) {
      if (e.id == id) return e.source;
    }
    return id;
  }

  bool stored_loaded_ = false;
  std::list<backend::Embeddings> stored_;  // stable addresses for Row::table
  backend::Embeddings embedded_;
  std::map<std::string, std::string> id_of_;  // audio input -> its id in embedded_
  std::set<std::string> from_audio_;
  std::map<std::string, Row> rows_;
};

// The cosine of the mean of the enrollment rows (in double, as VerifyTrials averages) and the test.
double Cosine(const backend::Embeddings& enrollment, const backend::Embeddings& test) {
  const std::int64_t dim = enrollment.vectors.cols();
  double dot = 0, ee = 0, tt = 0;
  for (std::int64_t c = 0; c < dim; ++c) {
    double sum = 0;
    for (std::int64_t r = 0; r < enrollment.vectors.rows(); ++r) sum += enrollment.vectors(r, c);
    const double e = static_cast<float>(sum / static_cast<double>(enrollment.vectors.rows()));
    const double t = test.vectors(0, c);
    dot += e * t;
    ee += e * e;
    tt += t * t;
  }
  if (ee == 0 || tt == 0) throw DataError("an embedding of all zeros has no cosine");
  return dot / std::sqrt(ee * tt);
}

nlohmann::ordered_json DecisionJson(const recipes::shared::Decision& d, bool with_accept) {
  nlohmann::ordered_json j{{"kind", d.kind}};
  if (d.kind == "bayes") j["p_target"] = d.p_target;
  if (d.kind == "eer") j["list"] = d.list;
  j["threshold"] = d.threshold;
  if (with_accept) j["accept"] = d.accept;
  return j;
}

std::string DecisionName(const recipes::shared::Decision& d) {
  return d.kind == "bayes" ? fmt::format("p_target={:g}", d.p_target) : fmt::format("eer({})", d.list);
}

}  // namespace

int Verify(const VerifyOptions& options) {
  const std::vector<Trial> trials = TrialsOf(options);
  const LoadedModel model = LoadModel(options.model);
  // The system before the inputs: one that cannot score fails before any audio is embedded.
  recipes::shared::SystemThresholds thresholds;
  std::optional<recipes::shared::SystemBackend> system;
  if (model.system) {
    thresholds = recipes::shared::ReadThresholds(model.system->folder);
    system.emplace(recipes::shared::BuildSystemBackend(
        model.system->folder, model.system->backend,
        [&](const backend::Embeddings& plda, const std::vector<std::string>& speakers) {
          return recipes::shared::StoredSpeakerCohort(model.system->folder, plda, speakers);
        }));
    if (model.epoch && system->epoch && *model.epoch != *system->epoch && AnyAudioFile(trials)) {
      throw DataError(fmt::format(
          "{}: the system's stored embeddings are of the network of epoch {}, the model loaded is of epoch {}: "
          "audio embedded with it would not score against them as the run scored (set recipe.selected_epoch "
          "or extract again with stage 7)",
          (model.system->folder / "embeddings/info.json").string(), *system->epoch, *model.epoch));
    }
  }
  const Inputs inputs(model, trials, options.threads);

  std::vector<double> scores(trials.size());
  std::vector<std::vector<recipes::shared::Decision>> decisions(trials.size());
  if (system) {
    // One call per enrollment side with all its tests: each side is prepared once.
    std::map<std::vector<std::string>, std::vector<std::size_t>> by_side;
    for (std::size_t k = 0; k < trials.size(); ++k) by_side[trials[k].enrollment].push_back(k);
    for (const auto& [side, positions] : by_side) {
      std::vector<std::string> tests;
      for (const std::size_t k : positions) tests.push_back(trials[k].test);
      const auto results = recipes::shared::VerifyTrials(
          *system, thresholds, {recipes::shared::EnrollmentSide{inputs.Table(side)}}, inputs.Table(tests));
      for (std::size_t i = 0; i < positions.size(); ++i) {
        scores[positions[i]] = results[i].score;
        decisions[positions[i]] = results[i].decisions;
      }
    }
  } else {
    for (std::size_t k = 0; k < trials.size(); ++k) {
      scores[k] = Cosine(inputs.Table(trials[k].enrollment), inputs.Table({trials[k].test}));
    }
  }
  const std::vector<recipes::shared::Decision>& used = thresholds.calibrated ? thresholds.bayes : thresholds.eer;

  if (options.json) {
    nlohmann::ordered_json out;
    out["model"] = model.description;
    if (model.system) {
      const auto& b = model.system->backend;
      out["system"] = model.system->folder.string();
      out["run"] = model.system->run_id;
      out["back_end"] = {
          {"processing", b.processing},
          {"scoring", std::string(EnumToName(b.scoring))},
          {"score_norm", b.score_norm ? nlohmann::ordered_json(std::string(EnumToName(b.score_norm_method)))
                                      : nlohmann::ordered_json(nullptr)},
          {"calibration", std::string(EnumToName(b.calibration))}};
    } else {
      out["system"] = nullptr;
      out["back_end"] = nullptr;
      out["note"] =
          "a WeSpeaker model has no back end: the score is the cosine of the raw embeddings, and there is "
          "no decision threshold";
    }
    out["calibrated"] = thresholds.calibrated;
    out["thresholds"] = nlohmann::ordered_json::array();
    for (const auto& d : used) out["thresholds"].push_back(DecisionJson(d, false));
    out["trials"] = nlohmann::ordered_json::array();
    for (std::size_t k = 0; k < trials.size(); ++k) {
      nlohmann::ordered_json t{{"enrollment", trials[k].enrollment}, {"test", trials[k].test}, {"score", scores[k]}};
      t["decisions"] = nlohmann::ordered_json::array();
      for (const auto& d : decisions[k]) t["decisions"].push_back(DecisionJson(d, true));
      out["trials"].push_back(std::move(t));
    }
    out["inputs"] = nlohmann::ordered_json::array();
    std::set<std::string> listed;
    for (const auto& t : trials) {
      auto sides = t.enrollment;
      sides.push_back(t.test);
      for (const auto& input : sides) {
        if (!listed.insert(input).second) continue;
        out["inputs"].push_back({{"input", input}, {"from", inputs.FromAudio(input) ? "audio" : "stored embedding"}});
      }
    }
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }

  fmt::print("# model: {}\n", model.description);
  if (model.system) {
    const auto& b = model.system->backend;
    fmt::print(
        "# back end: {} ('{}' processing, {} scoring{}{}){}\n", model.system->folder.string(), b.processing,
        EnumToName(b.scoring), b.score_norm ? fmt::format(", {}", EnumToName(b.score_norm_method)) : "",
        b.calibration != backend::Calibration::kNone ? fmt::format(", {} calibration", EnumToName(b.calibration)) : "",
        thresholds.calibrated ? ": scores are calibrated log-likelihood ratios" : ": scores are not calibrated");
    for (const auto& d : used) {
      fmt::print("# threshold {}: {:.6g}{}\n", DecisionName(d), d.threshold,
                 d.kind == "bayes" ? " (Bayes decision at this prior)" : " (the score at the list's EER)");
    }
  } else {
    fmt::print("# no back end (a WeSpeaker model): cosine of the raw embeddings, no decision threshold\n");
  }
  std::vector<std::string> header{"enrollment", "test", "score"};
  for (const auto& d : used) header.push_back(DecisionName(d));
  std::vector<std::vector<std::string>> rows;
  for (std::size_t k = 0; k < trials.size(); ++k) {
    std::vector<std::string> row{Join(trials[k].enrollment, ","), trials[k].test, fmt::format("{:.6f}", scores[k])};
    for (const auto& d : decisions[k]) row.push_back(d.accept ? "accept" : "reject");
    rows.push_back(std::move(row));
  }
  fmt::print("{}", FormatTable(header, rows));
  return kExitOk;
}

}  // namespace asv::tools
