#include "asvcpp/data/table.h"

#include <algorithm>
#include <charconv>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/text.h"
#include "asvcpp/data/table_text.h"

namespace asv::data {
namespace {

using table_text::CheckWritable;
using table_text::IsFieldSpace;
using table_text::LineError;

// Calls `line_fn(line_number, id, rest)` for each non-blank line; `rest` is the trimmed text
// after the id (possibly empty).
template <typename F>
void ForEachTableLine(const std::filesystem::path& path, F&& line_fn) {
  table_text::ForEachLine(path, [&](int line_no, std::string_view line) {
    std::size_t id_end = 0;
    while (id_end < line.size() && !IsFieldSpace(line[id_end])) ++id_end;
    line_fn(line_no, line.substr(0, id_end), text::Trim(line.substr(id_end)));
    return true;
  });
}

}  // namespace

bool IsValidId(std::string_view id) {
  if (id.empty()) return false;
  for (const char c : id) {
    if (static_cast<unsigned char>(c) <= ' ' || c == '\x7f') return false;
  }
  return true;
}

Table ReadTable(const std::filesystem::path& path, ValueFormat format) {
  Table table;
  std::unordered_map<std::string, int> first_line;
  ForEachTableLine(path, [&](int line, std::string_view id, std::string_view rest) {
    if (rest.empty()) throw LineError(path, line, fmt::format("'{}' has no value", id));
    if (format == ValueFormat::kSingleToken && table_text::SplitFields(rest).size() != 1) {
      throw LineError(
          path, line,
          fmt::format("expected 2 fields ('<id> <value>'), found {}", table_text::SplitFields(rest).size() + 1));
    }
    const auto [it, inserted] = first_line.emplace(std::string(id), line);
    if (!inserted) {
      throw LineError(path, line, fmt::format("duplicate id '{}' (first on line {})", id, it->second));
    }
    table.emplace(std::string(id), std::string(rest));
  });
  return table;
}

Spk2Utt ReadSpk2Utt(const std::filesystem::path& path) {
  Spk2Utt spk2utt;
  std::unordered_map<std::string, int> first_line;
  std::unordered_map<std::string, int> utt_line;
  ForEachTableLine(path, [&](int line, std::string_view spk, std::string_view rest) {
    const std::vector<std::string_view> utts = table_text::SplitFields(rest);
    if (utts.empty()) throw LineError(path, line, fmt::format("speaker '{}' has no utterances", spk));
    const auto [it, inserted] = first_line.emplace(std::string(spk), line);
    if (!inserted) {
      throw LineError(path, line, fmt::format("duplicate speaker '{}' (first on line {})", spk, it->second));
    }
    std::vector<std::string>& list = spk2utt[std::string(spk)];
    for (const std::string_view utt : utts) {
      const auto [u, fresh] = utt_line.emplace(std::string(utt), line);
      if (!fresh) {
        throw LineError(path, line, fmt::format("utterance '{}' listed twice (also on line {})", utt, u->second));
      }
      list.emplace_back(utt);
    }
    std::sort(list.begin(), list.end());
  });
  return spk2utt;
}

Counts ReadCounts(const std::filesystem::path& path) {
  const Table table = ReadTable(path, ValueFormat::kSingleToken);
  // Re-read line numbers only on error: cheap path first.
  Counts counts;
  for (const auto& [id, value] : table) {
    std::int64_t n = -1;
    const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || ptr != value.data() + value.size() || n < 0) {
      int bad_line = 0;
      ForEachTableLine(path, [&](int line, std::string_view key, std::string_view) {
        if (bad_line == 0 && key == id) bad_line = line;
      });
      throw LineError(path, bad_line,
                      fmt::format("'{}': expected a non-negative integer, found '{}'", id, value));
    }
    counts.emplace(id, n);
  }
  return counts;
}

void WriteTable(const std::filesystem::path& path, const Table& table) {
  for (const auto& [id, value] : table) CheckWritable(id, value);
  fs::WriteFileAtomic(path, [&](std::ostream& out) {
    for (const auto& [id, value] : table) out << id << ' ' << value << '\n';
  });
}

void WriteSpk2Utt(const std::filesystem::path& path, const Spk2Utt& spk2utt) {
  for (const auto& [spk, utts] : spk2utt) {
    CheckWritable(spk, "");
    if (utts.empty()) throw std::invalid_argument(fmt::format("speaker '{}' has no utterances", spk));
    for (const auto& u : utts) CheckWritable(u, "");
  }
  fs::WriteFileAtomic(path, [&](std::ostream& out) {
    for (const auto& [spk, utts] : spk2utt) {
      std::vector<std::string> sorted = utts;
      std::sort(sorted.begin(), sorted.end());
      out << spk;
      for (const auto& u : sorted) out << ' ' << u;
      out << '\n';
    }
  });
}

void WriteCounts(const std::filesystem::path& path, const Counts& counts) {
  for (const auto& [id, n] : counts) CheckWritable(id, "");
  fs::WriteFileAtomic(path, [&](std::ostream& out) {
    for (const auto& [id, n] : counts) out << id << ' ' << n << '\n';
  });
}

Spk2Utt MakeSpk2Utt(const Table& utt2spk) {
  Spk2Utt spk2utt;
  // utt2spk iterates in utterance order, so each list comes out sorted.
  for (const auto& [utt, spk] : utt2spk) spk2utt[spk].push_back(utt);
  return spk2utt;
}

Table MakeUtt2Spk(const Spk2Utt& spk2utt) {
  Table utt2spk;
  for (const auto& [spk, utts] : spk2utt) {
    for (const auto& u : utts) utt2spk[u] = spk;
  }
  return utt2spk;
}

bool IsSortedBySpeaker(const Table& utt2spk, std::string* first_violation) {
  const std::string* previous = nullptr;
  for (const auto& [utt, spk] : utt2spk) {
    if (previous != nullptr && spk < *previous) {
      if (first_violation != nullptr) *first_violation = utt;
      return false;
    }
    previous = &spk;
  }
  return true;
}

}  // namespace asv::data
