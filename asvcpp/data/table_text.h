// The line format of asvcpp/data's Kaldi-style text tables and trial lists, shared by their
// readers and writers (table.cc, trial_list.cc, voxceleb.cc, sitw.cc): one record per line, fields
// separated by spaces or tabs.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/text.h"
#include "asvcpp/data/table.h"

namespace asv::data::table_text {

/// True for the characters that separate fields: space and tab.
inline bool IsFieldSpace(char c) {
  return c == ' ' || c == '\t';
}

/// The fields of `line`: the runs of characters between spaces and tabs (none for a blank line).
/// The views point into `line`.
inline std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && IsFieldSpace(line[i])) ++i;
    const std::size_t begin = i;
    while (i < line.size() && !IsFieldSpace(line[i])) ++i;
    if (i > begin) fields.push_back(line.substr(begin, i - begin));
  }
  return fields;
}

/// Calls fn(line, text) for every non-blank line of `path` (line counted from 1; text trimmed),
/// until fn returns false. Throws DataError naming the path when it cannot be read (fs::ReadFile)
/// and "path:line" for a line over 1 MiB (text::CheckLineLength).
template <typename F>
void ForEachLine(const std::filesystem::path& path, F&& fn) {
  const std::string contents = fs::ReadFile(path);
  std::size_t start = 0;
  int line_no = 0;
  while (start < contents.size()) {
    std::size_t end = contents.find('\n', start);
    if (end == std::string::npos) end = contents.size();
    ++line_no;
    text::CheckLineLength(std::string_view(contents).substr(start, end - start), path.string(), line_no);
    const std::string_view line = text::Trim(std::string_view(contents).substr(start, end - start));
    start = end + 1;
    if (line.empty()) continue;
    if (!fn(line_no, line)) return;
  }
}

/// Calls fn(line, fields) for every non-blank line of `path` (line counted from 1; fields as
/// SplitFields gives them, after trimming), until fn returns false. Throws what ForEachLine
/// throws.
template <typename F>
void ForEachFieldLine(const std::filesystem::path& path, F&& fn) {
  ForEachLine(path, [&](int line_no, std::string_view line) { return fn(line_no, SplitFields(line)); });
}

/// The DataError for a bad line: "<path>:<line>: <message>" (line counted from 1).
inline DataError LineError(const std::filesystem::path& path, int line, const std::string& message) {
  return DataError(fmt::format("{}:{}: {}", path.string(), line, message));
}

/// Checks that `id` and `value` can be written as one table line (IsValidId(id), no newline in
/// `value`); throws std::invalid_argument naming the id otherwise.
inline void CheckWritable(std::string_view id, std::string_view value) {
  if (!IsValidId(id)) throw std::invalid_argument(fmt::format("invalid table id '{}'", id));
  if (value.find('\n') != std::string_view::npos) {
    throw std::invalid_argument(fmt::format("value of '{}' contains a newline", id));
  }
}

}  // namespace asv::data::table_text
