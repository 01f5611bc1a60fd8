// The public entry points of parse.h: parsing a run-configs file (whole, or only the blocks some
// configs need), an init config and a `--set` literal, from text or from a file. The work is
// done by the Reader (reader.h: lines, statements, diagnostics), the block structure
// (blocks.h) and the grammar's actions (parse_state.h, actions.cc).
#include "parser/parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "asvcpp/base/fs.h"
#include "asvcpp/base/text.h"
#include "parser/blocks.h"
#include "parser/grammar.h"
#include "parser/parse_state.h"
#include "parser/reader.h"

namespace asv::parser {

namespace {

namespace g = grammar;
namespace pegtl = tao::pegtl;
using detail::LineKind;
using detail::ParseBlocks;
using detail::ParseState;
using detail::Reader;

// Reads a config file; a missing or unreadable file is reported at the path.
std::optional<std::string> ReadConfigFile(const std::string& path, const char* kind, Diagnostics& diags) {
  try {
    return fs::ReadFile(path);
  } catch (const std::exception& e) {
    std::string reason = e.what();
    if (reason.compare(0, path.size() + 2, path + ": ") == 0) reason.erase(0, path.size() + 2);
    diags.Error(SourcePos{path, 0, 0}, fmt::format("cannot read {} file: {}", kind, reason));
    return std::nullopt;
  }
}

}  // namespace

RunConfigsFile ParseRunConfigs(const std::string& text, const std::string& path, Diagnostics& diags) {
  RunConfigsFile file{path, text, {}};
  Reader reader(text, path, diags);
  if (!reader.CheckText()) return file;
  if (!ParseBlocks(reader, file, 0, reader.size())) {
    diags.Error(SourcePos{reader.file(), 0, 0}, "file defines no configs");
  }
  return file;
}

RunConfigsFile ParseRunConfigsFor(const std::string& text, const std::string& path,
                                  const std::vector<std::string>& names, Diagnostics& diags) {
  Diagnostics found;  // Dropped when the whole file has to be parsed after all.
  RunConfigsFile file{path, text, {}};
  Reader reader(text, path, found);
  if (!reader.CheckText()) {
    diags.Append(found);
    return file;
  }

  // The blocks (runs of lines between blank lines) and the configs each may define: one
  // candidate per header-like line, chained per name (first_of -> next) without a container per
  // name, so that the scan allocates little more than the candidates themselves.
  struct Group {
    std::size_t begin;
    std::size_t end;
  };
  struct Candidate {
    std::size_t group;
    std::size_t parents_begin;  ///< Range of `all_parents`.
    std::size_t parents_end;
    std::size_t next;  ///< Next candidate of the same name, or kNone.
  };
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<Group> groups;
  std::vector<Candidate> candidates;
  std::vector<std::string_view> all_parents;
  std::unordered_map<std::string_view, std::size_t> first_of;  // name -> its latest candidate
  first_of.reserve(reader.size() / 4 + 1);
  std::vector<std::string_view> parents;
  for (std::size_t i = 0; i < reader.size();) {
    if (reader.Kind(i) == LineKind::kBlank) {
      ++i;
      continue;
    }
    const std::size_t group = groups.size();
    groups.push_back({i, i});
    bool first = true;
    for (; i < reader.size(); ++i) {
      const LineKind kind = reader.Kind(i);
      if (kind == LineKind::kBlank) break;
      if (kind == LineKind::kComment) continue;
      const std::string_view name = reader.HeaderName(i, first, parents);
      first = false;
      if (name.empty()) continue;
      const auto [it, added] = first_of.emplace(name, candidates.size());
      const std::size_t previous = added ? kNone : it->second;
      candidates.push_back({group, all_parents.size(), all_parents.size() + parents.size(), previous});
      it->second = candidates.size() - 1;
      all_parents.insert(all_parents.end(), parents.begin(), parents.end());
    }
    groups.back().end = i;
  }

  // The configs asked for and, transitively, their parents; a name defined nowhere has the
  // whole file parsed (below), so that its error names every config ("did you mean").
  std::vector<char> wanted(groups.size(), 0);
  std::unordered_set<std::string_view> seen;
  std::vector<std::string_view> queue(names.begin(), names.end());
  bool complete = true;
  while (complete && !queue.empty()) {
    const std::string_view name = queue.back();
    queue.pop_back();
    if (!seen.insert(name).second) continue;
    const auto it = first_of.find(name);
    if (it == first_of.end()) {
      complete = false;
      break;
    }
    for (std::size_t c = it->second; c != kNone; c = candidates[c].next) {
      wanted[candidates[c].group] = 1;
      queue.insert(queue.end(), all_parents.begin() + static_cast<std::ptrdiff_t>(candidates[c].parents_begin),
                   all_parents.begin() + static_cast<std::ptrdiff_t>(candidates[c].parents_end));
    }
  }
  if (complete) {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (wanted[g]) ParseBlocks(reader, file, groups[g].begin, groups[g].end);
    }
    // The quick reading of the headers must agree with the parse: every config asked for and
    // every parent of a block read is defined by a block read.
    std::unordered_set<std::string_view> parsed;
    for (const Block& b : file.blocks) parsed.insert(b.name);
    const auto has = [&](std::string_view name) { return parsed.count(name) != 0; };
    complete = std::all_of(names.begin(), names.end(), has) &&
               std::all_of(file.blocks.begin(), file.blocks.end(), [&](const Block& b) {
                 return std::all_of(b.parents.begin(), b.parents.end(), has);
               });
  }
  if (!complete) return ParseRunConfigs(text, path, diags);
  diags.Append(found);
  return file;
}

InitConfigFile ParseInitConfig(const std::string& text, const std::string& path, Diagnostics& diags) {
  InitConfigFile file{path, text, {}};
  Reader reader(text, path, diags);
  // An empty init config leaves every setting at its default, as in ASVtorch.
  if (!reader.CheckText(/*empty_ok=*/true)) return file;
  detail::ParseInitAssignments(reader, file);
  return file;
}

RunConfigsFile ParseRunConfigsFile(const std::string& path, Diagnostics& diags) {
  const auto text = ReadConfigFile(path, "run-configs", diags);
  if (!text) return RunConfigsFile{path, {}, {}};
  return ParseRunConfigs(*text, path, diags);
}

RunConfigsFile ParseRunConfigsFileFor(const std::string& path, const std::vector<std::string>& names,
                                      Diagnostics& diags) {
  const auto text = ReadConfigFile(path, "run-configs", diags);
  if (!text) return RunConfigsFile{path, {}, {}};
  return ParseRunConfigsFor(*text, path, names, diags);
}

InitConfigFile ParseInitConfigFile(const std::string& path, Diagnostics& diags) {
  const auto text = ReadConfigFile(path, "init config", diags);
  if (!text) return InitConfigFile{path, {}, {}};
  return ParseInitConfig(*text, path, diags);
}

std::optional<Value> ParseLiteral(const std::string& text, const std::string& origin, Diagnostics& diags) {
  if (const auto bad = text::FindInvalidUtf8(text)) {
    diags.Error(SourcePos{origin, 0, 0}, fmt::format("invalid UTF-8 byte 0x{:02X} at byte {} of the value",
                                                     static_cast<unsigned char>(text[*bad]), *bad + 1));
    return std::nullopt;
  }
  ParseState state;
  state.file = origin;
  pegtl::memory_input<> in(text, origin);
  if (detail::ParseStatement<g::literal>(in, state)) return std::move(state.result);
  diags.Error(SourcePos{origin, state.line, state.column}, state.message, LineOf(text, state.line));
  return std::nullopt;
}

}  // namespace asv::parser
