#include "asvcpp/backend/evaluation.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "asvcpp/backend/plda.h"
#include "asvcpp/backend/score_norm.h"
#include "asvcpp/backend/scoring.h"
#include "asvcpp/base/checksum.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/table.h"
#include "asvcpp/features/kaldi_io.h"

namespace asv::backend {
namespace stdfs = std::filesystem;

Embeddings CollectEmbeddings(const asv::Matrix& embeddings, const std::vector<std::size_t>& skipped,
                             const std::vector<std::string>& ids, const std::string& what,
                             const std::vector<double>& durations) {
  if (!durations.empty() && durations.size() != ids.size()) {
    throw std::invalid_argument(
        fmt::format("CollectEmbeddings: {} durations for {} utterances", durations.size(), ids.size()));
  }
  std::vector<bool> left_out(ids.size(), false);
  for (std::size_t i : skipped) {
    left_out.at(i) = true;
    ASV_LOG(Warning, "{}: utterance '{}' has no speech frames; no embedding", what, ids[i]);
  }
  Embeddings out;
  out.vectors = asv::Matrix(static_cast<std::int64_t>(ids.size() - skipped.size()), embeddings.cols());
  std::int64_t row = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (left_out[i]) continue;
    const float* from = embeddings.row(static_cast<std::int64_t>(i));
    if (!std::all_of(from, from + embeddings.cols(), [](float x) { return std::isfinite(x); })) {
      throw DataError(fmt::format("{}: the embedding of utterance '{}' is not finite (NaN or Inf): the network "
                                  "diverged or its input is broken",
                                  what, ids[i]));
    }
    std::copy(from, from + embeddings.cols(), out.vectors.row(row++));
    out.ids.push_back(ids[i]);
    if (!durations.empty()) out.durations.push_back(durations[i]);
  }
  return out;
}

void WriteEmbeddings(const stdfs::path& stem, const Embeddings& embeddings) {
  stdfs::create_directories(stem.parent_path());
  const stdfs::path ark = stem.string() + ".ark";
  asv::fs::RemoveChecksumFile(ark);  // a crash before the new one is written leaves none, not a wrong one
  features::TableWriter writer(fmt::format("ark,scp:{}.ark,{}.scp", stem.string(), stem.string()));
  for (std::size_t i = 0; i < embeddings.ids.size(); ++i) {
    const float* row = embeddings.vectors.row(static_cast<std::int64_t>(i));
    writer.Write(embeddings.ids[i], std::vector<float>(row, row + embeddings.vectors.cols()));
  }
  writer.Close();
  asv::fs::WriteChecksumFile(ark, asv::fs::FileChecksum(ark));
  const stdfs::path utt2dur = stem.string() + ".utt2dur";
  if (embeddings.durations.empty()) {
    stdfs::remove(utt2dur);  // no stale durations of an earlier extraction
    return;
  }
  std::string text;
  for (std::size_t i = 0; i < embeddings.ids.size(); ++i) {
    text += fmt::format("{} {:.3f}\n", embeddings.ids[i], embeddings.durations.at(i));
  }
  asv::fs::WriteFileAtomic(utt2dur, text);
}

Embeddings ReadEmbeddings(const stdfs::path& stem) {
  const stdfs::path scp = stem.string() + ".scp";
  if (!stdfs::exists(scp)) {
    throw DataError(fmt::format("{}: no embeddings (the embedding extraction stage writes them)", scp.string()));
  }
  const stdfs::path ark = stem.string() + ".ark";
  if (stdfs::exists(ark)) asv::fs::VerifyFileChecksum(ark);
  Embeddings out;
  std::vector<std::vector<float>> rows;
  features::TableReader reader("scp:" + scp.string());
  while (reader.Next()) {
    rows.push_back(reader.value().ToVector(reader.key()));
    out.ids.push_back(reader.key());
    if (!std::all_of(rows.back().begin(), rows.back().end(), [](float x) { return std::isfinite(x); })) {
      throw DataError(fmt::format("{}: the embedding of utterance '{}' is not finite (NaN or Inf)", scp.string(),
                                  reader.key()));
    }
    if (rows.back().size() != rows.front().size()) {
      throw DataError(fmt::format("{}: embedding '{}' has {} values, the first one {}", scp.string(), reader.key(),
                                  rows.back().size(), rows.front().size()));
    }
  }
  if (rows.empty()) throw DataError(fmt::format("{}: holds no embeddings", scp.string()));
  out.vectors = asv::Matrix(static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(rows.front().size()));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::copy(rows[i].begin(), rows[i].end(), out.vectors.row(static_cast<std::int64_t>(i)));
  }
  const stdfs::path utt2dur = stem.string() + ".utt2dur";
  if (stdfs::exists(utt2dur)) {
    const auto table = data::ReadTable(utt2dur, data::ValueFormat::kSingleToken);
    for (const auto& id : out.ids) {
      const auto it = table.find(id);
      if (it == table.end()) throw DataError(fmt::format("{}: no duration for '{}'", utt2dur.string(), id));
      char* end = nullptr;
      const double seconds = std::strtod(it->second.c_str(), &end);
      if (end == it->second.c_str() || *end != '\0' || !(seconds > 0) || !std::isfinite(seconds)) {
        throw DataError(fmt::format("{}: duration '{}' of '{}' is not a positive number of seconds", utt2dur.string(),
                                    it->second, id));
      }
      out.durations.push_back(seconds);
    }
  }
  return out;
}

Embeddings SpeakerMeans(const Embeddings& embeddings, const std::vector<std::string>& speakers) {
  if (speakers.size() != static_cast<std::size_t>(embeddings.vectors.rows())) {
    throw std::invalid_argument(
        fmt::format("SpeakerMeans: {} speakers for {} embeddings", speakers.size(), embeddings.vectors.rows()));
  }
  if (speakers.empty()) throw DataError("no embeddings to make the speaker-mean cohort of");
  std::map<std::string, std::vector<std::int64_t>> rows_of;
  for (std::size_t i = 0; i < speakers.size(); ++i) rows_of[speakers[i]].push_back(static_cast<std::int64_t>(i));
  const std::int64_t dim = embeddings.vectors.cols();
  Embeddings out;
  out.vectors = asv::Matrix(static_cast<std::int64_t>(rows_of.size()), dim);
  std::vector<double> sum(static_cast<std::size_t>(dim));
  std::int64_t r = 0;
  for (const auto& [speaker, rows] : rows_of) {
    std::fill(sum.begin(), sum.end(), 0.0);
    for (const std::int64_t i : rows) {
      const float* x = embeddings.vectors.row(i);
      for (std::int64_t d = 0; d < dim; ++d) sum[static_cast<std::size_t>(d)] += x[d];
    }
    float* y = out.vectors.row(r++);
    for (std::int64_t d = 0; d < dim; ++d) {
      y[d] = static_cast<float>(sum[static_cast<std::size_t>(d)] / static_cast<double>(rows.size()));
    }
    out.ids.push_back(speaker);
  }
  return out;
}

namespace {

std::uint64_t PairKey(std::int64_t a, std::int64_t b) {
  return (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint64_t>(b);
}

// Up to `want` distinct pairs (left < right) of `total` possible ones: all of them by
// `enumerate` when total <= want, else uniform draws by `draw` with duplicates rejected.
template <class Enumerate, class Draw>
std::vector<TrialIndex> DrawPairs(std::int64_t want, std::int64_t total, Enumerate enumerate, Draw draw) {
  std::vector<TrialIndex> out;
  if (want <= 0 || total <= 0) return out;
  if (total <= want) {
    enumerate(out);
    return out;
  }
  std::unordered_set<std::uint64_t> seen;
  while (static_cast<std::int64_t>(out.size()) < want) {
    TrialIndex t = draw();
    if (t.left > t.right) std::swap(t.left, t.right);
    if (seen.insert(PairKey(t.left, t.right)).second) out.push_back(t);
  }
  std::sort(out.begin(), out.end(), [](const TrialIndex& a, const TrialIndex& b) {
    return PairKey(a.left, a.right) < PairKey(b.left, b.right);
  });
  return out;
}

}  // namespace

CalibrationTrials DrawCalibrationTrials(const std::vector<std::string>& speakers, std::int64_t count,
                                        std::uint64_t seed) {
  std::map<std::string, std::vector<std::int64_t>> rows_of;
  for (std::size_t i = 0; i < speakers.size(); ++i) rows_of[speakers[i]].push_back(static_cast<std::int64_t>(i));
  std::vector<const std::vector<std::int64_t>*> groups;
  std::int64_t target_pairs = 0;
  for (const auto& [speaker, rows] : rows_of) {
    groups.push_back(&rows);
    const auto n = static_cast<std::int64_t>(rows.size());
    target_pairs += n * (n - 1) / 2;
  }
  const auto n_rows = static_cast<std::int64_t>(speakers.size());
  const std::int64_t nontarget_pairs = n_rows * (n_rows - 1) / 2 - target_pairs;
  if (target_pairs == 0 || nontarget_pairs == 0) {
    throw DataError(fmt::format(
        "calibration trials: {} embeddings of {} speakers allow {} target and {} non-target trials; both are needed",
        n_rows, rows_of.size(), target_pairs, nontarget_pairs));
  }
  std::mt19937_64 rng(seed);
  const std::int64_t want_targets = (count + 1) / 2;
  // Rows of speakers with two or more rows, for drawing targets: a uniform row, then a uniform
  // other row of its speaker (pairs of large speakers are slightly favoured; harmless here).
  std::vector<std::pair<std::int64_t, const std::vector<std::int64_t>*>> target_rows;
  for (const auto* rows : groups) {
    if (rows->size() < 2) continue;
    for (const std::int64_t r : *rows) target_rows.emplace_back(r, rows);
  }
  CalibrationTrials out;
  out.targets = DrawPairs(
      want_targets, target_pairs,
      [&](std::vector<TrialIndex>& all) {
        for (const auto* rows : groups) {
          for (std::size_t a = 0; a < rows->size(); ++a) {
            for (std::size_t b = a + 1; b < rows->size(); ++b) all.push_back({(*rows)[a], (*rows)[b]});
          }
        }
      },
      [&]() {
        std::uniform_int_distribution<std::size_t> pick(0, target_rows.size() - 1);
        const auto& [row, rows] = target_rows[pick(rng)];
        std::int64_t other = row;
        std::uniform_int_distribution<std::size_t> in_speaker(0, rows->size() - 1);
        while (other == row) other = (*rows)[in_speaker(rng)];
        return TrialIndex{row, other};
      });
  const std::int64_t want_nontargets = count - static_cast<std::int64_t>(out.targets.size());
  out.nontargets = DrawPairs(
      want_nontargets, nontarget_pairs,
      [&](std::vector<TrialIndex>& all) {
        for (std::int64_t a = 0; a < n_rows; ++a) {
          for (std::int64_t b = a + 1; b < n_rows; ++b) {
            if (speakers[static_cast<std::size_t>(a)] != speakers[static_cast<std::size_t>(b)]) all.push_back({a, b});
          }
        }
      },
      [&]() {
        std::uniform_int_distribution<std::int64_t> pick(0, n_rows - 1);
        while (true) {
          const std::int64_t a = pick(rng);
          const std::int64_t b = pick(rng);
          if (speakers[static_cast<std::size_t>(a)] != speakers[static_cast<std::size_t>(b)]) return TrialIndex{a, b};
        }
      });
  return out;
}

namespace {

backend::ScoringOptions ScoringOptionsOf(const settings::BackendSettings& s) {
  backend::ScoringOptions options;
  options.max_all_vs_all_score_count = s.max_all_vs_all_score_count;
  options.pairwise_scoring_chunk_size = s.pairwise_scoring_chunk_size;
  return options;
}

}  // namespace

namespace {

asv::Matrix SelectRows(const asv::Matrix& m, const std::vector<std::int64_t>& rows) {
  asv::Matrix out(static_cast<std::int64_t>(rows.size()), m.cols());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::copy(m.row(rows[i]), m.row(rows[i]) + m.cols(), out.row(static_cast<std::int64_t>(i)));
  }
  return out;
}

Embeddings SelectEmbeddings(const Embeddings& e, const std::vector<std::int64_t>& rows) {
  Embeddings out;
  out.vectors = SelectRows(e.vectors, rows);
  for (const std::int64_t r : rows) {
    out.ids.push_back(e.ids[static_cast<std::size_t>(r)]);
    if (!e.durations.empty()) out.durations.push_back(e.durations[static_cast<std::size_t>(r)]);
  }
  return out;
}

// The speakers held out for calibration: `fraction` of all speakers (at least 2), chosen at
// random among those with two or more rows, leaving at least 2 speakers for the back end.
std::vector<std::string> HoldOutSpeakers(const std::vector<std::string>& speakers, double fraction,
                                         std::uint64_t seed) {
  std::map<std::string, int> count;
  for (const auto& s : speakers) ++count[s];
  std::vector<std::string> eligible;
  for (const auto& [speaker, n] : count) {
    if (n >= 2) eligible.push_back(speaker);
  }
  const auto total = static_cast<std::int64_t>(count.size());
  const std::int64_t want =
      std::max<std::int64_t>(2, static_cast<std::int64_t>(std::llround(fraction * static_cast<double>(total))));
  if (static_cast<std::int64_t>(eligible.size()) < 2 || total - 2 < 2) {
    throw DataError(fmt::format(
        "backend.calibration: the back-end embeddings have {} speakers, {} of them with two or more embeddings; "
        "calibration holds out at least 2 such speakers and leaves at least 2 for the back end",
        total, eligible.size()));
  }
  const std::int64_t n = std::min({want, static_cast<std::int64_t>(eligible.size()), total - 2});
  std::mt19937_64 rng(seed);
  std::shuffle(eligible.begin(), eligible.end(), rng);
  eligible.resize(static_cast<std::size_t>(n));
  std::sort(eligible.begin(), eligible.end());
  return eligible;
}

std::vector<double> RowNorms(const asv::Matrix& m) {
  std::vector<double> out(static_cast<std::size_t>(m.rows()));
  for (std::int64_t i = 0; i < m.rows(); ++i) {
    double sum = 0;
    const float* x = m.row(i);
    for (std::int64_t d = 0; d < m.cols(); ++d) sum += static_cast<double>(x[d]) * x[d];
    out[static_cast<std::size_t>(i)] = std::sqrt(sum);
  }
  return out;
}

// The calibration features of each trial: the score, and for quality-aware calibration the
// quality measures of both sides. Row-major [n, dim].
std::vector<double> CalibrationFeatures(const std::vector<double>& scores, const PreparedEmbeddings& prepared,
                                        const std::vector<TrialIndex>& index, Calibration kind) {
  std::vector<double> out;
  if (kind == Calibration::kLinear) return scores;
  if (prepared.durations.size() != prepared.ids.size()) {
    throw DataError(
        "backend.calibration = 'quality' needs the speech durations of the embeddings (<embeddings>.utt2dur, "
        "written by the embedding extraction stage): run the extraction stage again");
  }
  out.reserve(scores.size() * eval::QualityFeatureNames().size());
  for (std::size_t t = 0; t < scores.size(); ++t) {
    const auto l = static_cast<std::size_t>(index[t].left);
    const auto r = static_cast<std::size_t>(index[t].right);
    const auto f = eval::QualityFeatures(scores[t], {prepared.durations[l], prepared.magnitudes[l]},
                                         {prepared.durations[r], prepared.magnitudes[r]});
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

}  // namespace

Backend::Backend(const Embeddings& plda, const std::vector<std::string>& speakers,
                 const settings::BackendSettings& settings, const Embeddings* cohort)
    : settings_(settings), scorer_(backend::MakeCosineScorer()) {
  if (speakers.size() != plda.ids.size() || static_cast<std::int64_t>(speakers.size()) != plda.vectors.rows()) {
    throw std::invalid_argument(fmt::format("Backend: {} speakers for {} embeddings ({} rows)", speakers.size(),
                                            plda.ids.size(), plda.vectors.rows()));
  }
  // Calibration first: its held-out speakers take no part in the rest.
  std::vector<std::int64_t> train_rows;
  std::vector<std::int64_t> held_rows;
  if (settings.calibration != Calibration::kNone) {
    held_out_ = HoldOutSpeakers(speakers, settings.calibration_speakers, 0);
  }
  const std::set<std::string> held(held_out_.begin(), held_out_.end());
  for (std::size_t i = 0; i < speakers.size(); ++i) {
    (held.count(speakers[i]) ? held_rows : train_rows).push_back(static_cast<std::int64_t>(i));
  }
  const Embeddings train = held_rows.empty() ? Embeddings{} : SelectEmbeddings(plda, train_rows);
  const Embeddings& base = held_rows.empty() ? plda : train;
  std::vector<std::string> base_speakers;
  for (const std::int64_t r : train_rows) base_speakers.push_back(speakers[static_cast<std::size_t>(r)]);

  asv::Matrix processed;
  processor_ = backend::VectorProcessor::Train(base.vectors, settings.processing, &processed);
  if (settings.scoring == backend::Scoring::kPlda) {
    const auto model = backend::Plda::TrainClosedForm(processed, base_speakers);
    const std::int64_t dim = std::min<std::int64_t>(settings.plda_dim, processed.cols());
    if (dim < settings.plda_dim) {
      ASV_LOG(Warning, "backend.plda_dim = {} exceeds the embedding size {}; using {}", settings.plda_dim,
              processed.cols(), dim);
    }
    scorer_ = model.MakeScorer(dim);
  }
  if (settings.score_norm) {
    if (settings.score_norm_cohort == Cohort::kSpeakerMeans) {
      Embeddings means = cohort != nullptr ? *cohort : SpeakerMeans(base, base_speakers);
      if (!held.empty()) {
        std::vector<std::int64_t> keep;
        for (std::size_t i = 0; i < means.ids.size(); ++i) {
          if (!held.count(means.ids[i])) keep.push_back(static_cast<std::int64_t>(i));
        }
        means = SelectEmbeddings(means, keep);
      }
      if (means.ids.size() < 2) throw DataError("score normalisation: the cohort has fewer than 2 speakers");
      cohort_ = processor_.Process(means.vectors);
    } else {
      std::int64_t size = settings.score_norm_full_cohort_size;
      if (size > processed.rows()) {
        ASV_LOG(Warning, "backend.score_norm_full_cohort_size = {} exceeds the {} back-end embeddings; using all", size,
                processed.rows());
        size = processed.rows();
      }
      cohort_ = backend::SelectRandomRows(processed, size, 0);
    }
    top_n_ = settings.score_norm_method == ScoreNorm::kPlain
                 ? cohort_.rows()
                 : std::min<std::int64_t>(settings.score_norm_adaptive_cohort_size, cohort_.rows());
    if (settings.score_norm_method == ScoreNorm::kAdaptive && top_n_ < settings.score_norm_adaptive_cohort_size) {
      ASV_LOG(Warning, "backend.score_norm_adaptive_cohort_size = {} exceeds the cohort of {}; AS-norm uses all of it",
              settings.score_norm_adaptive_cohort_size, cohort_.rows());
    }
    if (top_n_ < 2) throw DataError("score normalisation needs a cohort of at least 2");
  }
  if (settings.calibration != Calibration::kNone) {
    const Embeddings held_out = SelectEmbeddings(plda, held_rows);
    std::vector<std::string> held_speakers;
    for (const std::int64_t r : held_rows) held_speakers.push_back(speakers[static_cast<std::size_t>(r)]);
    const auto trials = DrawCalibrationTrials(held_speakers, settings.calibration_trials, 0);
    const PreparedEmbeddings prepared = Prepare(held_out);
    const auto target_scores = ScoreIndexed(prepared, trials.targets);
    const auto nontarget_scores = ScoreIndexed(prepared, trials.nontargets);
    const auto target_features = CalibrationFeatures(target_scores, prepared, trials.targets, settings.calibration);
    const auto nontarget_features =
        CalibrationFeatures(nontarget_scores, prepared, trials.nontargets, settings.calibration);
    const std::vector<std::string> names =
        settings.calibration == Calibration::kLinear ? std::vector<std::string>{"score"} : eval::QualityFeatureNames();
    calibration_ = eval::TrainLinearCalibration(target_features, nontarget_features, names);
    calibration_cllr_ = eval::Cllr(calibration_->ApplyAll(target_features), calibration_->ApplyAll(nontarget_features));
    std::string weights;
    for (std::size_t i = 0; i < names.size(); ++i) {
      weights += fmt::format("{}{} {:.4g}", i ? ", " : "", names[i], calibration_->weights[i]);
    }
    ASV_LOG(Info,
            "calibration ({}): {} target and {} non-target trials of {} held-out speakers; weights {}; bias {:.4g}; "
            "Cllr on them {:.4f} bits",
            EnumToName(settings.calibration), trials.targets.size(), trials.nontargets.size(), held_out_.size(),
            weights, calibration_->bias, calibration_cllr_);
    calibration_use_.check =
        eval::CheckCalibration(*calibration_, calibration_cllr_, static_cast<std::int64_t>(trials.targets.size()),
                               static_cast<std::int64_t>(trials.nontargets.size()));
    calibration_use_.n_target_trials = static_cast<std::int64_t>(trials.targets.size());
    calibration_use_.n_nontarget_trials = static_cast<std::int64_t>(trials.nontargets.size());
    calibration_applied_ = !calibration_use_.check.degenerate || settings.keep_degenerate_calibration;
    calibration_use_.applied = calibration_applied_;
    if (calibration_use_.check.degenerate) {
      ASV_LOG(Warning,
              "calibration ({}) is degenerate: score weight {:.4g} on {} calibration trials ({} target, {} "
              "non-target) of {} held-out speakers; {}; {}",
              EnumToName(settings.calibration), calibration_use_.check.score_weight,
              trials.targets.size() + trials.nontargets.size(), trials.targets.size(), trials.nontargets.size(),
              held_out_.size(), calibration_use_.check.reason,
              calibration_applied_ ? "applied anyway (backend.keep_degenerate_calibration = True)"
                                   : "NOT applied: the scores stay uncalibrated (backend.keep_degenerate_calibration "
                                     "= True applies it)");
    }
  }
}

const char* CalibrationStatusName(CalibrationStatus status) {
  switch (status) {
    case CalibrationStatus::kNone: return "none";
    case CalibrationStatus::kApplied: return "applied";
    case CalibrationStatus::kDegenerateSkipped: return "degenerate, not applied";
    case CalibrationStatus::kDegenerateApplied: return "degenerate, applied";
  }
  return "?";
}

CalibrationStatus Backend::calibration_status() const {
  if (!calibration_) return CalibrationStatus::kNone;
  if (!calibration_use_.check.degenerate) return CalibrationStatus::kApplied;
  return calibration_applied_ ? CalibrationStatus::kDegenerateApplied : CalibrationStatus::kDegenerateSkipped;
}

PreparedEmbeddings Backend::Prepare(const Embeddings& raw) const {
  PreparedEmbeddings out;
  out.ids = raw.ids;
  out.processed = processor_.Process(raw.vectors);
  out.magnitudes = RowNorms(raw.vectors);
  out.durations = raw.durations;
  if (settings_.score_norm) {
    out.snorm =
        backend::ComputeAdaptiveSnormStats(scorer_, out.processed, cohort_, top_n_, ScoringOptionsOf(settings_));
  }
  return out;
}

std::vector<double> Backend::ScoreIndexed(const PreparedEmbeddings& prepared,
                                          const std::vector<TrialIndex>& index) const {
  auto scores = backend::ScoreTrials(scorer_, prepared.processed, index, ScoringOptionsOf(settings_));
  if (settings_.score_norm) scores = backend::ApplySnorm(scores, prepared.snorm, index);
  return std::vector<double>(scores.begin(), scores.end());
}

std::vector<double> Backend::Score(const PreparedEmbeddings& prepared, const eval::TrialList& trials) const {
  const auto index = backend::IndexTrials(trials, prepared.ids);
  auto scores = ScoreIndexed(prepared, index);
  if (const auto* in_use = calibration()) {
    scores = in_use->ApplyAll(CalibrationFeatures(scores, prepared, index, settings_.calibration));
  }
  return scores;
}

ListResult ScoreTrialList(const Backend& backend, const PreparedEmbeddings& prepared, const std::string& name,
                          const stdfs::path& file, const settings::BackendSettings& settings) {
  ListResult result;
  result.name = name;
  result.file = file;
  const auto trials = eval::ReadTrialList(file);
  result.scores = backend.Score(prepared, trials);
  eval::DcfParams params;
  params.p_target = settings.p_target;
  eval::LabelCounts counts;
  std::vector<double> target_scores;
  std::vector<double> nontarget_scores;
  eval::SplitScores(result.scores, trials.Classify(eval::LabelVocabulary::Default(), &counts), &target_scores,
                    &nontarget_scores);
  std::vector<eval::DcfParams> points = {params};
  for (const double p : settings.other_p_targets) {
    const bool seen =
        std::any_of(points.begin(), points.end(), [p](const eval::DcfParams& d) { return d.p_target == p; });
    if (seen) continue;
    eval::DcfParams other;
    other.p_target = p;
    points.push_back(other);
  }
  result.llr = eval::ComputeLlrMetrics(target_scores, nontarget_scores, points);
  const eval::SortedScores sorted(std::move(target_scores), std::move(nontarget_scores));
  result.metrics.eer = sorted.Eer();
  result.metrics.tie_aware_eer = sorted.TieAwareEer();
  if (eval::TiesDecideEer(result.metrics.eer, result.metrics.tie_aware_eer)) {
    ASV_LOG(Warning, "{} ({}): {}", name, file.string(),
            eval::DescribeTiedEer(result.metrics.eer, result.metrics.tie_aware_eer));
  }
  for (const auto& point : points) result.min_dcfs.push_back(sorted.MinDcf(point));
  result.metrics.min_dcf = result.min_dcfs.front();
  result.metrics.counts = counts;
  result.det = eval::DetPoints(sorted);
  if (counts.n_other > 0) ASV_LOG(Warning, "{}: {}", file.string(), counts.Describe());
  return result;
}

std::string FormatResult(const ListResult& result, std::optional<int> epoch) {
  std::string others;
  for (std::size_t i = 1; i < result.min_dcfs.size(); ++i) {
    others += fmt::format("minDCF(p_target={:g}) = {:.4f}; ", result.min_dcfs[i].params.p_target,
                          result.min_dcfs[i].min_dcf);
  }
  return fmt::format("EER = {:.4f}  minDCF = {:.4f}  {}[{}]  ({}Cllr = {:.4f}, minCllr = {:.4f}; {} target, {} "
                     "non-target trials)",
                     result.metrics.eer.percent(), result.metrics.min_dcf.min_dcf,
                     epoch ? fmt::format("[epoch {}] ", *epoch) : std::string(), result.name, others,
                     result.llr.cllr, result.llr.min_cllr, result.metrics.counts.n_target,
                     result.metrics.counts.n_nontarget);
}

db::ResultRecord ResultRecordOf(const ListResult& result, std::optional<int> epoch) {
  db::ResultRecord record;
  record.epoch = epoch;
  record.trial_list = result.name;
  record.eer = result.metrics.eer.percent();
  record.min_dcf = result.metrics.min_dcf.min_dcf;
  record.p_target = result.metrics.min_dcf.params.p_target;
  record.c_miss = result.metrics.min_dcf.params.c_miss;
  record.c_fa = result.metrics.min_dcf.params.c_fa;
  record.n_target = result.metrics.counts.n_target;
  record.n_nontarget = result.metrics.counts.n_nontarget;
  record.cllr = result.llr.cllr;
  record.min_cllr = result.llr.min_cllr;
  for (std::size_t i = 0; i < result.min_dcfs.size(); ++i) {
    const eval::MinDcfResult& m = result.min_dcfs[i];
    db::CostRecord cost{m.params.p_target, m.params.c_miss, m.params.c_fa, m.min_dcf, std::nullopt};
    if (i < result.llr.act_dcf.size()) cost.act_dcf = result.llr.act_dcf[i].act_dcf;
    record.costs.push_back(cost);
  }
  return record;
}

std::vector<std::pair<std::string, stdfs::path>> TrialListFiles(const std::vector<std::string>& names,
                                                                const settings::OrderedDict<std::string>& trial_lists,
                                                                const stdfs::path& list_folder, bool required) {
  std::vector<std::pair<std::string, stdfs::path>> files;
  for (const auto& name : names) {
    const std::string* file_name = trial_lists.Find(name);
    if (file_name == nullptr) {
      throw ConfigError(fmt::format("trial list '{}' is not a key of recipe.trial_lists", name));
    }
    const stdfs::path file = list_folder / *file_name;
    if (!stdfs::exists(file)) {
      if (required) throw DataError(fmt::format("{}: trial list '{}' does not exist", file.string(), name));
      ASV_LOG(Warning, "trial list '{}' ({}) does not exist; skipped", name, file.string());
      continue;
    }
    files.emplace_back(name, file);
  }
  return files;
}

std::vector<std::string> TrialSides(const std::vector<std::pair<std::string, stdfs::path>>& lists) {
  std::vector<std::string> ids;
  std::unordered_set<std::string> seen;
  for (const auto& entry : lists) {
    const auto list = eval::ReadTrialList(entry.second);
    for (std::size_t i = 0; i < list.size(); ++i) {
      for (const auto* id : {&list.left[i], &list.right[i]}) {
        if (seen.insert(*id).second) ids.push_back(*id);
      }
    }
  }
  return ids;
}

}  // namespace asv::backend
