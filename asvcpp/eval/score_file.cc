#include "asvcpp/eval/score_file.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/text.h"

namespace asv::eval {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// Calls fn(line_number, tokens) for every non-blank line of `contents` (read from `path`); tokens
// split on blanks; a line over text::kMaxLineBytes is a DataError.
template <class Fn>
void ForEachLine(std::string_view contents, std::string_view path, Fn&& fn) {
  std::vector<std::string_view> tokens;
  std::int64_t line_no = 0;
  std::size_t pos = 0;
  while (pos < contents.size()) {
    std::size_t end = contents.find('\n', pos);
    if (end == std::string_view::npos) end = contents.size();
    const std::string_view line = contents.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    text::CheckLineLength(line, path, line_no);
    tokens.clear();
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && IsSpace(line[i])) ++i;
      const std::size_t start = i;
      while (i < line.size() && !IsSpace(line[i])) ++i;
      if (i > start) tokens.push_back(line.substr(start, i - start));
    }
    if (!tokens.empty()) fn(line_no, tokens);
  }
}

double ParseScore(std::string_view token, const std::string& path, std::int64_t line_no) {
  std::string_view s = token;
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);  // from_chars rejects a leading '+'
  double value = 0.0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range) {
    throw DataError(fmt::format("{}:{}: score '{}' is out of the range of a double", path, line_no, token));
  }
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) {
    throw DataError(fmt::format("{}:{}: '{}' is not a number", path, line_no, token));
  }
  if (std::isnan(value)) throw DataError(fmt::format("{}:{}: score is NaN", path, line_no));
  return value;
}

}  // namespace

std::vector<TrialLabel> TrialList::Classify(const LabelVocabulary& vocabulary, LabelCounts* counts) const {
  return ClassifyLabels(label, vocabulary, counts);
}

TrialList ReadTrialList(const std::filesystem::path& path, const LabelVocabulary& vocabulary) {
  const std::string text = fs::ReadFile(path);
  TrialList trials;
  trials.path = path.string();
  // The format is decided by the first trial line and holds for the whole file: VoxCeleb's when
  // its first column is a label and its third is not.
  std::optional<bool> label_first;
  ForEachLine(text, trials.path, [&](std::int64_t line_no, const std::vector<std::string_view>& tokens) {
    if (tokens.size() < 3) {
      throw DataError(fmt::format("{}:{}: expected '<left_id> <right_id> <label>' or VoxCeleb's '<label> <enrollment> "
                                  "<test>', got {} column{}",
                                  trials.path, line_no, tokens.size(), tokens.size() == 1 ? "" : "s"));
    }
    if (!label_first) {
      label_first = vocabulary.Classify(tokens[0]) != TrialLabel::kOther &&
                    vocabulary.Classify(tokens[2]) == TrialLabel::kOther;
    }
    const std::size_t l = *label_first ? 1 : 0, r = *label_first ? 2 : 1, lab = *label_first ? 0 : 2;
    trials.left.emplace_back(tokens[l]);
    trials.right.emplace_back(tokens[r]);
    trials.label.emplace_back(tokens[lab]);
    trials.line.push_back(line_no);
  });
  if (trials.size() == 0) throw DataError(fmt::format("{}: trial list has no trials", trials.path));
  RequireKnownLabels(trials.path, trials.label, trials.line, vocabulary);
  return trials;
}

std::vector<double> ReadScoreFile(const std::filesystem::path& path, const TrialList* trials) {
  const std::string text = fs::ReadFile(path);
  const std::string name = path.string();
  std::vector<double> scores;
  if (trials != nullptr) scores.reserve(trials->size());
  std::size_t columns = 0;
  std::int64_t first_line = 0;
  ForEachLine(text, name, [&](std::int64_t line_no, const std::vector<std::string_view>& tokens) {
    if (columns == 0) {
      if (tokens.size() != 1 && tokens.size() != 3) {
        throw DataError(fmt::format("{}:{}: expected one score or '<left_id> <right_id> <score>', got {} columns",
                                    name, line_no, tokens.size()));
      }
      columns = tokens.size();
      first_line = line_no;
    } else if (tokens.size() != columns) {
      throw DataError(fmt::format("{}:{}: {} column{}, but line {} has {}", name, line_no, tokens.size(),
                                  tokens.size() == 1 ? "" : "s", first_line, columns));
    }
    const std::size_t index = scores.size();
    if (trials != nullptr && columns == 3 && index < trials->size()) {
      if (tokens[0] != trials->left[index] || tokens[1] != trials->right[index]) {
        throw DataError(fmt::format("{}:{}: score for '{} {}' but trial {} ({}:{}) is '{} {}'", name, line_no,
                                    tokens[0], tokens[1], index + 1, trials->path, trials->line[index],
                                    trials->left[index], trials->right[index]));
      }
    }
    scores.push_back(ParseScore(tokens.back(), name, line_no));
  });
  if (trials != nullptr && scores.size() != trials->size()) {
    throw DataError(fmt::format("{}: {} scores, but the trial list {} has {} trials", name, scores.size(),
                                trials->path, trials->size()));
  }
  return scores;
}

std::string FormatScore(double score) { return fmt::format("{:.18e}", score); }

void WriteScoreFile(const std::filesystem::path& path, const std::vector<double>& scores) {
  fmt::memory_buffer buf;
  buf.reserve(scores.size() * 26);
  for (double s : scores) fmt::format_to(std::back_inserter(buf), "{:.18e}\n", s);
  fs::WriteFileAtomic(path, std::string(buf.data(), buf.size()));
}

void WriteScoreFile(const std::filesystem::path& path, const std::vector<float>& scores) {
  WriteScoreFile(path, std::vector<double>(scores.begin(), scores.end()));
}

void WriteScoreFile(const std::filesystem::path& path, const std::vector<double>& scores, const TrialList& trials) {
  if (scores.size() != trials.size()) {
    throw std::invalid_argument(fmt::format("WriteScoreFile({}): {} scores for {} trials", path.string(),
                                            scores.size(), trials.size()));
  }
  fmt::memory_buffer buf;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    fmt::format_to(std::back_inserter(buf), "{} {} {:.18e}\n", trials.left[i], trials.right[i], scores[i]);
  }
  fs::WriteFileAtomic(path, std::string(buf.data(), buf.size()));
}

}  // namespace asv::eval
