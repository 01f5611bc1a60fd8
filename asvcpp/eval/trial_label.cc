#include "asvcpp/eval/trial_label.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "asvcpp/base/error.h"

namespace asv::eval {

const char* ToString(TrialLabel label) {
  switch (label) {
    case TrialLabel::kTarget: return "target";
    case TrialLabel::kNonTarget: return "nontarget";
    case TrialLabel::kOther: break;
  }
  return "other";
}

LabelVocabulary LabelVocabulary::Default() {
  LabelVocabulary v;
  v.target = {"Target", "target", "TARGET", "1", "t", "T"};
  v.nontarget = {"Nontarget", "nontarget", "NONTARGET", "Non-target", "non-target", "NON-TARGET",
                 "0", "n", "N", "f", "F"};
  return v;
}

LabelVocabulary LabelVocabulary::Single(std::string target, std::string nontarget) {
  if (target.empty() || nontarget.empty()) {
    throw std::invalid_argument("trial label vocabulary: target and non-target labels must not be empty");
  }
  if (target == nontarget) {
    throw std::invalid_argument(
        fmt::format("trial label vocabulary: '{}' cannot be both the target and the non-target label", target));
  }
  LabelVocabulary v;
  v.target = {std::move(target)};
  v.nontarget = {std::move(nontarget)};
  return v;
}

TrialLabel LabelVocabulary::Classify(std::string_view label) const {
  // Target first: a label in both lists (only possible in a hand-made vocabulary) counts as target,
  // as in ASVtorch's if/elif.
  if (std::find(target.begin(), target.end(), label) != target.end()) return TrialLabel::kTarget;
  if (std::find(nontarget.begin(), nontarget.end(), label) != nontarget.end()) return TrialLabel::kNonTarget;
  return TrialLabel::kOther;
}

std::string LabelCounts::Describe() const {
  std::string s = fmt::format("{} target, {} non-target", n_target, n_nontarget);
  if (n_other > 0) {
    s += fmt::format(", {} other (labels", n_other);
    int shown = 0;
    for (const auto& [label, count] : other_labels) {
      if (shown == 10) {
        s += fmt::format(" and {} more", other_labels.size() - 10);
        break;
      }
      s += fmt::format("{} '{}' x{}", shown == 0 ? "" : ",", label, count);
      ++shown;
    }
    s += ")";
  }
  return s;
}

namespace {

std::string Quoted(const std::vector<std::string>& labels) {
  std::string out;
  for (const auto& label : labels) out += fmt::format("{}'{}'", out.empty() ? "" : ", ", label);
  return out;
}

}  // namespace

void RequireKnownLabels(const std::string& path, const std::vector<std::string>& labels,
                        const std::vector<std::int64_t>& lines, const LabelVocabulary& vocabulary) {
  std::size_t first = labels.size();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (vocabulary.Classify(labels[i]) != TrialLabel::kOther) continue;
    if (bad++ == 0) first = i;
  }
  if (bad == 0) return;
  const std::string where = lines.empty() ? fmt::format("{}: trial {}", path, first + 1)
                                          : fmt::format("{}:{}", path, lines[first]);
  std::string message = fmt::format("{}: label '{}' is neither a target label ({}) nor a non-target label ({})",
                                    where, labels[first], Quoted(vocabulary.target), Quoted(vocabulary.nontarget));
  if (bad > 1) message += fmt::format("; {} of {} trials have such labels", bad, labels.size());
  if (!lines.empty() && lines[first] == 1) message += " (a header line? trial lists have none)";
  throw DataError(message);
}

std::vector<TrialLabel> ClassifyLabels(const std::vector<std::string>& labels,
                                       const LabelVocabulary& vocabulary, LabelCounts* counts) {
  std::vector<TrialLabel> out;
  out.reserve(labels.size());
  LabelCounts local;
  for (const std::string& label : labels) {
    const TrialLabel kind = vocabulary.Classify(label);
    out.push_back(kind);
    switch (kind) {
      case TrialLabel::kTarget: ++local.n_target; break;
      case TrialLabel::kNonTarget: ++local.n_nontarget; break;
      case TrialLabel::kOther:
        ++local.n_other;
        ++local.other_labels[label];
        break;
    }
  }
  if (counts != nullptr) *counts = std::move(local);
  return out;
}

}  // namespace asv::eval
