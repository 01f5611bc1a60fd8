#include "asvcpp/audio/audio_source.h"

#include <fmt/format.h>

#include <cctype>
#include <sstream>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/text.h"

namespace asv::audio {
namespace {

bool IsKaldiOffsetSpecifier(std::string_view v) {
  const std::size_t colon = v.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == v.size() || colon == 0) return false;
  for (std::size_t i = colon + 1; i < v.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(v[i]))) return false;
  }
  return true;
}

// One token with ffmpeg's av_get_token() rules: single quotes enclose literal text, a backslash
// outside quotes escapes the next character, unquoted whitespace ends the token.
bool NextToken(std::string_view line, std::size_t& pos, std::string& token, std::string& error) {
  token.clear();
  while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
  if (pos >= line.size()) return false;
  while (pos < line.size() && line[pos] != ' ' && line[pos] != '\t') {
    const char c = line[pos];
    if (c == '\\') {
      if (pos + 1 >= line.size()) {
        error = "backslash at the end of the line";
        return false;
      }
      token += line[pos + 1];
      pos += 2;
    } else if (c == '\'') {
      const std::size_t close = line.find('\'', pos + 1);
      if (close == std::string_view::npos) {
        error = "unterminated single quote";
        return false;
      }
      token.append(line.substr(pos + 1, close - pos - 1));
      pos = close + 1;
    } else {
      token += c;
      ++pos;
    }
  }
  return true;
}

std::string QuoteForFfmpeg(const std::string& path) {
  std::string out = "'";
  for (const char c : path) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

}  // namespace

AudioSource AudioSource::Parse(std::string_view wav_scp_value) {
  const std::string_view v = text::Trim(wav_scp_value);
  if (v.empty()) throw DataError("empty audio source");
  if (v.back() == '|') {
    const std::string_view command = text::Trim(v.substr(0, v.size() - 1));
    if (command.empty()) throw DataError(fmt::format("'{}': pipe with an empty command", v));
    return {Kind::kPipe, std::string(command)};
  }
  if (v.substr(0, kConcatPrefix.size()) == kConcatPrefix) {
    const std::string_view list = v.substr(kConcatPrefix.size());
    if (list.empty()) throw DataError(fmt::format("'{}': concatenation list path is empty", v));
    return {Kind::kConcat, std::string(list)};
  }
  if (v == "-") throw DataError("'-' (standard input) is not supported as an audio source");
  if (IsKaldiOffsetSpecifier(v)) {
    throw DataError(fmt::format(
        "'{}': byte offsets into archives (file:offset) are not supported as audio sources", v));
  }
  return {Kind::kFile, std::string(v)};
}

std::string AudioSource::ToString() const {
  switch (kind) {
    case Kind::kPipe:
      return value + " |";
    case Kind::kConcat:
      return std::string(kConcatPrefix) + value;
    case Kind::kFile:
      break;
  }
  return value;
}

std::vector<std::filesystem::path> ReadConcatList(const std::filesystem::path& list) {
  const std::string contents = fs::ReadFile(list);
  std::vector<std::filesystem::path> parts;
  std::istringstream in(contents);
  std::string raw;
  int line_no = 0;
  const std::filesystem::path base = list.parent_path();
  while (std::getline(in, raw)) {
    ++line_no;
    const std::string_view line = text::Trim(raw);
    if (line.empty() || line.front() == '#') continue;
    std::size_t pos = 0;
    std::string directive, error;
    NextToken(line, pos, directive, error);
    const auto fail = [&](const std::string& what) {
      return DataError(fmt::format("{}:{}: {}", list.string(), line_no, what));
    };
    if (directive == "ffconcat") continue;
    if (directive != "file") {
      throw fail(fmt::format("unsupported directive '{}' (only 'file' lines are understood)",
                             directive));
    }
    std::string path;
    if (!NextToken(line, pos, path, error)) {
      throw fail(error.empty() ? "'file' without a path" : error);
    }
    std::string extra;
    if (NextToken(line, pos, extra, error) || !error.empty()) {
      throw fail("unexpected text after the path (quote paths that contain spaces)");
    }
    std::filesystem::path p(path);
    parts.push_back(p.is_absolute() || base.empty() ? p : base / p);
  }
  if (parts.empty()) throw DataError(fmt::format("{}: concatenation list names no file", list.string()));
  return parts;
}

std::string ConcatListText(const std::vector<std::filesystem::path>& parts) {
  std::string out;
  for (const auto& p : parts) out += "file " + QuoteForFfmpeg(p.string()) + "\n";
  return out;
}

void WriteConcatList(const std::filesystem::path& list,
                     const std::vector<std::filesystem::path>& parts) {
  fs::WriteFileAtomic(list, ConcatListText(parts));
}

}  // namespace asv::audio
