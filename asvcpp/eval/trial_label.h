// Trial labels: which label strings mean "target" and "non-target", and counting them.
//
// The default vocabularies are ASVtorch's (asvtorch/src/evaluation/eval_metrics.py,
// _get_tar_and_nontar_scores). Unlike ASVtorch, labels outside both vocabularies are not silently
// dropped: they are classified as TrialLabel::kOther and counted, so callers can report them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace asv::eval {

/// What a trial's label says about the trial.
enum class TrialLabel : std::uint8_t {
  kTarget = 0,     ///< Same speaker on both sides.
  kNonTarget = 1,  ///< Different speakers.
  kOther = 2,      ///< Label in neither vocabulary: scored, but left out of the metrics.
};

/// Printable name: "target", "nontarget" or "other".
const char* ToString(TrialLabel label);

/// The label strings accepted as target and as non-target. Matching is exact (case-sensitive),
/// as in ASVtorch.
struct LabelVocabulary {
  /// ASVtorch's sets. Target: Target target TARGET 1 t T. Non-target: Nontarget nontarget
  /// NONTARGET Non-target non-target NON-TARGET 0 n N f F.
  static LabelVocabulary Default();
  /// One label each (ASVtorch's tar_label / nontar_label overrides). Throws std::invalid_argument
  /// when both are equal or either is empty.
  static LabelVocabulary Single(std::string target, std::string nontarget);

  TrialLabel Classify(std::string_view label) const;

  std::vector<std::string> target;
  std::vector<std::string> nontarget;
};

/// Number of trials per class, plus each distinct unrecognised label string and how often it
/// occurred (for messages such as "12 trials with label 'x' left out").
struct LabelCounts {
  std::int64_t n_target = 0;
  std::int64_t n_nontarget = 0;
  std::int64_t n_other = 0;
  std::map<std::string, std::int64_t> other_labels;

  std::int64_t total() const { return n_target + n_nontarget + n_other; }
  /// "N target, M non-target, K other (labels 'a' x3, 'b' x1)"; the "other" part only when K > 0.
  std::string Describe() const;
};

/// Checks that every label is a target or non-target label of `vocabulary` (labels[i] was read
/// from line lines[i] of `path`). Throws DataError naming the first offending line,
/// "<path>:<line>: label 'x' is neither a target label ('Target', ...) nor a non-target label
/// (...)", with the number of such lines and, when it is line 1, a hint that trial lists have no
/// header line. `lines` may be empty (then trial numbers are named instead of lines).
void RequireKnownLabels(const std::string& path, const std::vector<std::string>& labels,
                        const std::vector<std::int64_t>& lines,
                        const LabelVocabulary& vocabulary = LabelVocabulary::Default());

/// Classifies every label string with `vocabulary`; `counts`, when given, receives the tally.
std::vector<TrialLabel> ClassifyLabels(const std::vector<std::string>& labels,
                                       const LabelVocabulary& vocabulary = LabelVocabulary::Default(),
                                       LabelCounts* counts = nullptr);

}  // namespace asv::eval
