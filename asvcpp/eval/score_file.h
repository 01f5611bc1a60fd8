// Trial lists and score files.
//
// Trial list (ASVtorch's, as prepare_scoring in asvtorch/src/evaluation/scoring.py reads it):
// one trial per line,
//   <left_id> <right_id> <label> [ignored extra columns...]
// whitespace separated; left = enrolment, right = test; ids may join several utterances with '&'.
// VoxCeleb's official lists, "<label> <enrollment path> <test path>", are read too (one format
// per file, detected from its first line).
//
// Score file: one score per line in trial order, written as ASVtorch's np.savetxt does ("%.18e",
// e.g. "-1.234500000000000028e+01"); or three columns "<left_id> <right_id> <score>" in trial order.
// Blank lines are skipped in both kinds of file; line numbers in messages count every line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "asvcpp/eval/trial_label.h"

namespace asv::eval {

/// A trial list in file order.
struct TrialList {
  std::string path;                ///< Source file, for messages ("" when built in memory).
  std::vector<std::string> left;   ///< [n] enrolment ids.
  std::vector<std::string> right;  ///< [n] test ids.
  std::vector<std::string> label;  ///< [n] label strings as written.
  std::vector<std::int64_t> line;  ///< [n] 1-based line numbers in `path`.

  std::size_t size() const { return left.size(); }
  /// Labels classified with `vocabulary` ([n]); `counts` receives the tally when given.
  std::vector<TrialLabel> Classify(const LabelVocabulary& vocabulary = LabelVocabulary::Default(),
                                   LabelCounts* counts = nullptr) const;
};

/// Reads a trial list in either format: "<left_id> <right_id> <label>" (above) or VoxCeleb's
/// official "<label> <enrollment> <test>" (veri_test.txt, list_test_hard2.txt, ...: its paths are
/// kept as the ids). The first trial line decides the format of the whole file: VoxCeleb's when
/// its first column is a label of `vocabulary` and its third is not. Throws DataError naming the
/// file (and file:line) when it is missing, unreadable, holds no trials, a non-blank line has
/// fewer than three columns, or a label is in neither half of `vocabulary` (RequireKnownLabels:
/// the first such line and their count).
TrialList ReadTrialList(const std::filesystem::path& path,
                        const LabelVocabulary& vocabulary = LabelVocabulary::Default());

/// Reads a score file of one or three columns (all lines alike). When `trials` is given the file
/// must hold exactly one score per trial, in trial order, and a three-column file must name the
/// same left/right ids as the trial on the same position.
/// Throws DataError naming file:line on: a line with another column count, a value that is not a
/// number (trailing characters included), a NaN, mismatching ids; and naming both files when the
/// number of scores differs from the number of trials. +-inf are accepted.
std::vector<double> ReadScoreFile(const std::filesystem::path& path, const TrialList* trials = nullptr);

/// Writes one score per line with "%.18e" (ASVtorch's format), atomically
/// (fs::WriteFileAtomic). Throws DataError naming the path when it cannot be written.
void WriteScoreFile(const std::filesystem::path& path, const std::vector<double>& scores);
void WriteScoreFile(const std::filesystem::path& path, const std::vector<float>& scores);

/// Writes "<left> <right> <score %.18e>" lines atomically. Throws std::invalid_argument when
/// `scores` and `trials` differ in length, DataError when the file cannot be written.
void WriteScoreFile(const std::filesystem::path& path, const std::vector<double>& scores, const TrialList& trials);

/// "%.18e" of one value, exactly as C's printf and NumPy's savetxt write it.
std::string FormatScore(double score);

}  // namespace asv::eval
