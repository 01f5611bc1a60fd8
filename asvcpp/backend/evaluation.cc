#include "asvcpp/backend/evaluation.h"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "asvcpp/backend/plda.h"
#include "asvcpp/backend/score_norm.h"
#include "asvcpp/backend/scoring.h"
#include "asvcpp/base/checksum.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/features/kaldi_io.h"

namespace asv::backend {
namespace fs = std::filesystem;

Embeddings CollectEmbeddings(const asv::Matrix& embeddings, const std::vector<std::size_t>& skipped,
                             const std::vector<std::string>& ids, const std::string& what) {
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
    std::copy(from, from + embeddings.cols(), out.vectors.row(row++));
    out.ids.push_back(ids[i]);
  }
  return out;
}

void WriteEmbeddings(const fs::path& stem, const Embeddings& embeddings) {
  fs::create_directories(stem.parent_path());
  const fs::path ark = stem.string() + ".ark";
  asv::fs::RemoveChecksumFile(ark);  // a crash before the new one is written leaves none, not a wrong one
  features::TableWriter writer(fmt::format("ark,scp:{}.ark,{}.scp", stem.string(), stem.string()));
  for (std::size_t i = 0; i < embeddings.ids.size(); ++i) {
    const float* row = embeddings.vectors.row(static_cast<std::int64_t>(i));
    writer.Write(embeddings.ids[i], std::vector<float>(row, row + embeddings.vectors.cols()));
  }
  writer.Close();
  asv::fs::WriteChecksumFile(ark, asv::fs::FileChecksum(ark));
}

Embeddings ReadEmbeddings(const fs::path& stem) {
  const fs::path scp = stem.string() + ".scp";
  if (!fs::exists(scp)) {
    throw DataError(fmt::format("{}: no embeddings (the embedding extraction stage writes them)", scp.string()));
  }
  const fs::path ark = stem.string() + ".ark";
  if (fs::exists(ark)) asv::fs::VerifyFileChecksum(ark);
  Embeddings out;
  std::vector<std::vector<float>> rows;
  features::TableReader reader("scp:" + scp.string());
  while (reader.Next()) {
    rows.push_back(reader.value().ToVector(reader.key()));
    out.ids.push_back(reader.key());
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

Backend::Backend(const asv::Matrix& plda, const std::vector<std::string>& speakers,
                 const settings::BackendSettings& settings)
    : settings_(settings), scorer_(backend::MakeCosineScorer()) {
  asv::Matrix processed;
  processor_ = backend::VectorProcessor::Train(plda, settings.processing, &processed);
  if (settings.scoring == backend::Scoring::kPlda) {
    const auto model = backend::Plda::TrainClosedForm(processed, speakers);
    const std::int64_t dim = std::min<std::int64_t>(settings.plda_dim, processed.cols());
    if (dim < settings.plda_dim) {
      ASV_LOG(Warning, "backend.plda_dim = {} exceeds the embedding size {}; using {}", settings.plda_dim,
              processed.cols(), dim);
    }
    scorer_ = model.MakeScorer(dim);
  }
  if (settings.score_norm) {
    cohort_ = backend::SelectRandomRows(processed, settings.score_norm_full_cohort_size, 0);
  }
}

std::vector<double> Backend::Score(const Embeddings& processed, const eval::TrialList& trials) const {
  const auto index = backend::IndexTrials(trials, processed.ids);
  const auto options = ScoringOptionsOf(settings_);
  auto scores = backend::ScoreTrials(scorer_, processed.vectors, index, options);
  if (settings_.score_norm) {
    const auto stats = backend::ComputeAdaptiveSnormStats(scorer_, processed.vectors, cohort_,
                                                          settings_.score_norm_adaptive_cohort_size, options);
    scores = backend::ApplySnorm(scores, stats, index);
  }
  return std::vector<double>(scores.begin(), scores.end());
}

ListResult ScoreTrialList(const Backend& backend, const Embeddings& processed, const std::string& name,
                          const fs::path& file, const settings::BackendSettings& settings) {
  ListResult result;
  result.name = name;
  result.file = file;
  const auto trials = eval::ReadTrialList(file);
  result.scores = backend.Score(processed, trials);
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

std::vector<std::pair<std::string, fs::path>> TrialListFiles(const std::vector<std::string>& names,
                                                             const settings::OrderedDict<std::string>& trial_lists,
                                                             const fs::path& list_folder, bool required) {
  std::vector<std::pair<std::string, fs::path>> files;
  for (const auto& name : names) {
    const std::string* file_name = trial_lists.Find(name);
    if (file_name == nullptr) {
      throw ConfigError(fmt::format("trial list '{}' is not a key of recipe.trial_lists", name));
    }
    const fs::path file = list_folder / *file_name;
    if (!fs::exists(file)) {
      if (required) throw DataError(fmt::format("{}: trial list '{}' does not exist", file.string(), name));
      ASV_LOG(Warning, "trial list '{}' ({}) does not exist; skipped", name, file.string());
      continue;
    }
    files.emplace_back(name, file);
  }
  return files;
}

std::vector<std::string> TrialSides(const std::vector<std::pair<std::string, fs::path>>& lists) {
  std::vector<std::string> ids;
  std::set<std::string> seen;
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
