#include "recipes/shared/verification.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/eval/score_file.h"

namespace asv::recipes::shared {

SystemThresholds ReadThresholds(const std::filesystem::path& system_folder) {
  const std::filesystem::path file = ThresholdsFile(system_folder);
  if (!std::filesystem::exists(file)) {
    throw DataError(fmt::format("{}: missing: run stage 9 (scoring) of this system with this asvcpp first",
                                file.string()));
  }
  SystemThresholds t;
  try {
    const auto json = nlohmann::json::parse(asv::fs::ReadFile(file));
    t.calibrated = json.at("calibrated").get<bool>();
    for (const auto& b : json.at("bayes")) {
      t.bayes.push_back({"bayes", b.at("p_target").get<double>(), "", b.at("threshold").get<double>(), false});
    }
    for (const auto& [name, list] : json.at("lists").items()) {
      t.eer.push_back({"eer", 0.0, name, list.at("eer_threshold").get<double>(), false});
    }
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("{}: not a thresholds file of asvcpp: {}", file.string(), e.what()));
  }
  return t;
}

std::vector<VerificationResult> VerifyTrials(const SystemBackend& system, const SystemThresholds& thresholds,
                                             const std::vector<EnrollmentSide>& enrollments,
                                             const backend::Embeddings& tests) {
  const std::int64_t dim = system.plda.vectors.cols();
  const auto check = [&](const backend::Embeddings& e, const std::string& what) {
    if (e.ids.empty()) throw DataError(fmt::format("{}: no embeddings", what));
    if (e.vectors.cols() != dim) {
      throw DataError(fmt::format("{}: embeddings of dimension {}, the system's back end takes {}", what,
                                  e.vectors.cols(), dim));
    }
  };
  check(tests, "test side");
  // One table of raw sides: the averaged enrollments, then the tests; ids made unique by prefix.
  const std::size_t n_sides = enrollments.size() + tests.ids.size();
  backend::Embeddings sides;
  sides.vectors = asv::Matrix(static_cast<std::int64_t>(n_sides), dim);
  bool durations = !tests.durations.empty();
  for (const auto& e : enrollments) durations = durations && !e.files.durations.empty();
  std::vector<std::string> enrollment_names;
  for (std::size_t i = 0; i < enrollments.size(); ++i) {
    const auto& files = enrollments[i].files;
    check(files, fmt::format("enrollment {}", i + 1));
    std::string name;
    double seconds = 0;
    for (std::int64_t r = 0; r < files.vectors.rows(); ++r) {
      name += (r ? "+" : "") + files.ids[static_cast<std::size_t>(r)];
      if (durations) seconds += files.durations[static_cast<std::size_t>(r)];
    }
    // The mean in double precision, as backend::SpeakerMeans computes a speaker's.
    for (std::int64_t c = 0; c < dim; ++c) {
      double sum = 0;
      for (std::int64_t r = 0; r < files.vectors.rows(); ++r) sum += files.vectors(r, c);
      sides.vectors(static_cast<std::int64_t>(i), c) = static_cast<float>(sum / static_cast<double>(files.vectors.rows()));
    }
    enrollment_names.push_back(name);
    sides.ids.push_back(fmt::format("e{}", i));
    if (durations) sides.durations.push_back(seconds);
  }
  for (std::size_t j = 0; j < tests.ids.size(); ++j) {
    const auto row = static_cast<std::int64_t>(enrollments.size() + j);
    for (std::int64_t c = 0; c < dim; ++c) sides.vectors(row, c) = tests.vectors(static_cast<std::int64_t>(j), c);
    sides.ids.push_back(fmt::format("t{}", j));
    if (durations) sides.durations.push_back(tests.durations[j]);
  }
  eval::TrialList trials;
  for (std::size_t i = 0; i < enrollments.size(); ++i) {
    for (std::size_t j = 0; j < tests.ids.size(); ++j) {
      trials.left.push_back(fmt::format("e{}", i));
      trials.right.push_back(fmt::format("t{}", j));
      trials.label.push_back("unknown");
      trials.line.push_back(static_cast<std::int64_t>(trials.left.size()));
    }
  }
  const auto prepared = system.backend->Prepare(sides);
  const std::vector<double> scores = system.backend->Score(prepared, trials);
  std::vector<VerificationResult> results;
  for (std::size_t k = 0; k < scores.size(); ++k) {
    VerificationResult r;
    r.enrollment = enrollment_names[k / tests.ids.size()];
    r.test = tests.ids[k % tests.ids.size()];
    r.score = scores[k];
    r.calibrated = thresholds.calibrated;
    for (Decision d : thresholds.calibrated ? thresholds.bayes : thresholds.eer) {
      d.accept = r.score >= d.threshold;
      r.decisions.push_back(d);
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace asv::recipes::shared
