// Trial lists: which enrolment/test pairs to score and their labels (reference section 3.6).
//
// asvcpp (and ASVtorch) format, one trial per line, whitespace separated, extra columns ignored:
//   id10270-x6uYqmx31kE-00001 id10270-8jEAjG6SegY-00008 1
//   <left (enrolment) id> <right (test) id> <label>
// A side may join several utterance ids with '&' (multi-session enrolment or test: the parts are
// concatenated into one pseudo-utterance later).
//
// Official VoxCeleb format (veri_test.txt, list_test_hard2.txt, ...), label first and paths
// relative to the corpus' wav folder:
//   1 id10270/x6uYqmx31kE/00001.wav id10270/8jEAjG6SegY/00008.wav
// converted to ids `<spk>-<video>-<file up to its first '.'>`, keeping EVERY line (ASVtorch
// dropped the first line of each list as if it were a header; there is none).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace asv::data {

/// One trial.
struct Trial {
  std::string left;   ///< Enrolment id (possibly '&'-joined).
  std::string right;  ///< Test id (possibly '&'-joined).
  std::string label;  ///< As written in the file (its meaning: asvcpp/eval/trial_label.h).
  int line = 0;       ///< 1-based line in `TrialList::source` (0 when made in memory).
};

/// A trial list in file order.
struct TrialList {
  std::filesystem::path source;  ///< File it was read from (for messages).
  std::vector<Trial> trials;
};

/// The two file formats above.
enum class TrialListFormat { kIds, kVoxCelebOfficial };

/// Reads an asvcpp/Kaldi-style list. Blank lines are skipped. Throws DataError naming the file
/// when it cannot be read or holds no trials, and "file:line: ..." for a line with fewer than
/// three fields, an id with an empty '&' part ("a&&b", "a&"), or a label that is neither a target
/// nor a non-target label of eval::LabelVocabulary::Default() (the first such line, with their
/// count; eval::RequireKnownLabels).
TrialList ReadTrialList(const std::filesystem::path& path);

/// Throws DataError naming list.source and the label counts unless `list` holds at least one
/// target and one non-target trial (eval::LabelVocabulary::Default()): EER and minDCF are
/// undefined otherwise.
void RequireBothClasses(const TrialList& list);

/// Writes "left right label" lines in list order, atomically (fs::WriteFileAtomic).
void WriteTrialList(const std::filesystem::path& path, const TrialList& list);

/// Utterance id of a VoxCeleb relative path: "id10270/x6uYqmx31kE/00001.wav" ->
/// "id10270-x6uYqmx31kE-00001" (file name cut at its first '.'). Throws std::invalid_argument
/// unless the path has exactly three non-empty '/'-separated components.
std::string VoxCelebPathToId(std::string_view relative_path);

/// Guesses the format from the first non-blank line: official when the 2nd and 3rd fields
/// contain '/', ids otherwise. An empty file counts as kIds.
TrialListFormat DetectTrialListFormat(const std::filesystem::path& path);

/// Reads an official VoxCeleb list (`label path1 path2`) and converts paths to ids; every line
/// is kept. Throws DataError "file:line: ..." for fewer than three fields, a malformed path or an
/// unknown label, and naming the file when it holds no trials (as ReadTrialList).
TrialList ReadVoxCelebTrialList(const std::filesystem::path& path);

/// Reads `input` in either format (DetectTrialListFormat) and writes it in id format to
/// `output`. Returns the list (with `source` = input and input line numbers).
TrialList ConvertTrialList(const std::filesystem::path& input, const std::filesystem::path& output);

/// The utterance ids joined by '&' in `id` ("a&b" -> {"a", "b"}; "a" -> {"a"}).
std::vector<std::string> SplitSessions(std::string_view id);

/// Which side(s) of the trials to collect.
enum class TrialSide { kBoth, kEnroll, kTest };

/// The single utterances a list needs, in order of first appearance (left before right within a
/// line), duplicates removed, '&' groups expanded to their parts (ASVtorch's choose_from_trials).
std::vector<std::string> TrialUtterances(const TrialList& list, TrialSide side = TrialSide::kBoth);

/// Union over several lists, first-appearance order (ASVtorch's get_trial_utterance_list).
std::vector<std::string> TrialUtterances(const std::vector<TrialList>& lists);

/// An utterance a trial list names that the data set does not have.
struct UnknownUtterance {
  std::string id;
  int line = 0;  ///< Line of its first appearance.
};

/// Every utterance (after '&' expansion) for which `is_known` is false, first-appearance order.
std::vector<UnknownUtterance> FindUnknownUtterances(
    const TrialList& list, const std::function<bool(const std::string&)>& is_known);

/// Throws DataError listing (up to 10) "file:line: unknown utterance 'id'" lines and the total
/// count when FindUnknownUtterances finds any; `dataset` names the data set in the message.
void CheckTrialUtterances(const TrialList& list, std::string_view dataset,
                          const std::function<bool(const std::string&)>& is_known);

}  // namespace asv::data
