#include "asvcpp/data/trial_list.h"

#include <stdexcept>
#include <unordered_set>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/text.h"
#include "asvcpp/data/table_text.h"
#include "asvcpp/eval/trial_label.h"

namespace asv::data {
namespace {

using table_text::LineError;

void CheckSessions(const std::filesystem::path& path, int line, std::string_view id) {
  for (const std::string& part : SplitSessions(id)) {
    if (part.empty()) throw LineError(path, line, fmt::format("'{}' has an empty '&' part", id));
  }
}

// A list with no trials, or with a label that is neither target nor non-target, is an error: it
// would otherwise give 0 trials or silently leave trials out.
void CheckLabelsAndSize(const TrialList& list) {
  if (list.trials.empty()) throw DataError(fmt::format("{}: trial list has no trials", list.source.string()));
  std::vector<std::string> labels;
  std::vector<std::int64_t> lines;
  labels.reserve(list.trials.size());
  lines.reserve(list.trials.size());
  for (const Trial& t : list.trials) {
    labels.push_back(t.label);
    lines.push_back(t.line);
  }
  eval::RequireKnownLabels(list.source.string(), labels, lines);
}

}  // namespace

TrialList ReadTrialList(const std::filesystem::path& path) {
  TrialList list;
  list.source = path;
  table_text::ForEachFieldLine(path, [&](int line, const std::vector<std::string_view>& tokens) {
    if (tokens.size() < 3) {
      throw LineError(path, line, fmt::format("expected '<left> <right> <label>', found {} field{}",
                                              tokens.size(), tokens.size() == 1 ? "" : "s"));
    }
    CheckSessions(path, line, tokens[0]);
    CheckSessions(path, line, tokens[1]);
    list.trials.push_back({std::string(tokens[0]), std::string(tokens[1]), std::string(tokens[2]), line});
    return true;
  });
  CheckLabelsAndSize(list);
  return list;
}

void WriteTrialList(const std::filesystem::path& path, const TrialList& list) {
  fs::WriteFileAtomic(path, [&](std::ostream& out) {
    for (const Trial& t : list.trials) out << t.left << ' ' << t.right << ' ' << t.label << '\n';
  });
}

std::string VoxCelebPathToId(std::string_view relative_path) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t slash = relative_path.find('/', start);
    parts.push_back(relative_path.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (parts.size() != 3 || parts[0].empty() || parts[1].empty() || parts[2].empty() ||
      parts[2].front() == '.') {
    throw std::invalid_argument(
        fmt::format("'{}' is not a VoxCeleb path '<speaker>/<video>/<file>.wav'", relative_path));
  }
  const std::string_view file = parts[2].substr(0, parts[2].find('.'));
  return fmt::format("{}-{}-{}", parts[0], parts[1], file);
}

TrialListFormat DetectTrialListFormat(const std::filesystem::path& path) {
  TrialListFormat format = TrialListFormat::kIds;
  table_text::ForEachFieldLine(path, [&](int, const std::vector<std::string_view>& tokens) {
    if (tokens.size() >= 3 && tokens[1].find('/') != std::string_view::npos &&
        tokens[2].find('/') != std::string_view::npos) {
      format = TrialListFormat::kVoxCelebOfficial;
    }
    return false;
  });
  return format;
}

TrialList ReadVoxCelebTrialList(const std::filesystem::path& path) {
  TrialList list;
  list.source = path;
  table_text::ForEachFieldLine(path, [&](int line, const std::vector<std::string_view>& tokens) {
    if (tokens.size() < 3) {
      throw LineError(path, line, fmt::format("expected '<label> <path1> <path2>', found {} field{}",
                                              tokens.size(), tokens.size() == 1 ? "" : "s"));
    }
    try {
      list.trials.push_back({VoxCelebPathToId(tokens[1]), VoxCelebPathToId(tokens[2]),
                             std::string(tokens[0]), line});
    } catch (const std::invalid_argument& e) {
      throw LineError(path, line, e.what());
    }
    return true;
  });
  CheckLabelsAndSize(list);
  return list;
}

TrialList ConvertTrialList(const std::filesystem::path& input, const std::filesystem::path& output) {
  TrialList list = DetectTrialListFormat(input) == TrialListFormat::kVoxCelebOfficial
                       ? ReadVoxCelebTrialList(input)
                       : ReadTrialList(input);
  WriteTrialList(output, list);
  return list;
}

std::vector<std::string> SplitSessions(std::string_view id) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t amp = id.find('&', start);
    parts.emplace_back(id.substr(start, amp == std::string_view::npos ? amp : amp - start));
    if (amp == std::string_view::npos) break;
    start = amp + 1;
  }
  return parts;
}

namespace {

void Collect(const TrialList& list, TrialSide side, std::unordered_set<std::string>& seen,
             std::vector<std::string>& out) {
  const auto add = [&](const std::string& id) {
    for (std::string& part : SplitSessions(id)) {
      if (seen.insert(part).second) out.push_back(std::move(part));
    }
  };
  for (const Trial& t : list.trials) {
    if (side != TrialSide::kTest) add(t.left);
    if (side != TrialSide::kEnroll) add(t.right);
  }
}

}  // namespace

std::vector<std::string> TrialUtterances(const TrialList& list, TrialSide side) {
  std::unordered_set<std::string> seen;
  std::vector<std::string> out;
  Collect(list, side, seen, out);
  return out;
}

std::vector<std::string> TrialUtterances(const std::vector<TrialList>& lists) {
  std::unordered_set<std::string> seen;
  std::vector<std::string> out;
  for (const TrialList& list : lists) Collect(list, TrialSide::kBoth, seen, out);
  return out;
}

std::vector<UnknownUtterance> FindUnknownUtterances(
    const TrialList& list, const std::function<bool(const std::string&)>& is_known) {
  std::unordered_set<std::string> seen;
  std::vector<UnknownUtterance> unknown;
  for (const Trial& t : list.trials) {
    for (const std::string* side : {&t.left, &t.right}) {
      for (std::string& part : SplitSessions(*side)) {
        if (!seen.insert(part).second) continue;
        if (!is_known(part)) unknown.push_back({std::move(part), t.line});
      }
    }
  }
  return unknown;
}

void CheckTrialUtterances(const TrialList& list, std::string_view dataset,
                          const std::function<bool(const std::string&)>& is_known) {
  const std::vector<UnknownUtterance> unknown = FindUnknownUtterances(list, is_known);
  if (unknown.empty()) return;
  constexpr std::size_t kShown = 10;
  std::string message = fmt::format("{}: {} utterance{} not in data set '{}':",
                                    list.source.string(), unknown.size(),
                                    unknown.size() == 1 ? "" : "s", dataset);
  for (std::size_t i = 0; i < unknown.size() && i < kShown; ++i) {
    message += fmt::format("\n{}:{}: unknown utterance '{}'", list.source.string(), unknown[i].line,
                           unknown[i].id);
  }
  if (unknown.size() > kShown) message += fmt::format("\n... and {} more", unknown.size() - kShown);
  throw DataError(message);
}

void RequireBothClasses(const TrialList& list) {
  std::vector<std::string> labels;
  labels.reserve(list.trials.size());
  for (const auto& trial : list.trials) labels.push_back(trial.label);
  eval::LabelCounts counts;
  eval::ClassifyLabels(labels, eval::LabelVocabulary::Default(), &counts);
  if (counts.n_target == 0 || counts.n_nontarget == 0) {
    throw DataError(fmt::format("{}: {} trials: a trial list needs both target and non-target trials (EER and "
                                "minDCF are undefined otherwise)",
                                list.source.string(), counts.Describe()));
  }
}

}  // namespace asv::data
