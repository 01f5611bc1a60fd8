// Run-configs blocks and init-config assignments, statement by statement through the Reader
// (blocks.h): which line starts a block, what an assignment outside any block or a header where
// an assignment belongs is told, the comment lines above a header, and the warning for a key set
// twice.
#include "parser/blocks.h"

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "parser/grammar.h"

namespace asv::parser::detail {

namespace g = grammar;

namespace {

// Assignments of one block (or of the init config) by key, to warn about a key set twice. Keys
// are views into the file text. Blocks are usually small and searched linearly; past kSmall keys
// a hash index takes over, so a huge block stays linear in its size.
class KeyIndex {
 public:
  void Clear() {
    small_.clear();
    large_.clear();
  }

  /// Records assignment `index` as the latest of `key`; returns the index of the one it
  /// replaces, or npos.
  std::size_t Set(std::string_view key, std::size_t index) {
    if (large_.empty()) {
      for (auto& [k, v] : small_) {
        if (k == key) return std::exchange(v, index);
      }
      if (small_.size() < kSmall) {
        small_.emplace_back(key, index);
        return std::string::npos;
      }
      large_.insert(small_.begin(), small_.end());
      small_.clear();
    }
    const auto [it, added] = large_.emplace(key, index);
    return added ? std::string::npos : std::exchange(it->second, index);
  }

 private:
  static constexpr std::size_t kSmall = 32;
  std::vector<std::pair<std::string_view, std::size_t>> small_;
  std::unordered_map<std::string_view, std::size_t> large_;
};

// Warns about a key set twice in one block (or in the init config); the later value wins.
// Past the warnings a ConfigError shows, only a short record (the same for every such key).
void WarnRepeatedKey(Reader& reader, const Assignment& earlier, const Assignment& later, const std::string& where) {
  if (!reader.Shown(Severity::kWarning)) {
    reader.Warning(later.pos, "key set twice", {});
    return;
  }
  auto& w = reader.Warning(
      later.pos,
      fmt::format("'{}' is set twice {}; this value replaces the one on line {}", later.key, where, earlier.pos.line),
      later.source_line.view());
  w.notes.push_back(Diagnostic{Severity::kNote, earlier.pos, "previous value set here", earlier.source_line.str(), {}});
}

std::string JoinComments(const std::vector<std::string>& comments) {
  std::string out;
  for (const auto& c : comments) {
    if (c.empty()) continue;
    if (!out.empty()) out += ' ';
    out += c;
  }
  return out;
}

}  // namespace

bool ParseBlocks(Reader& reader, RunConfigsFile& file, std::size_t begin, std::size_t end) {
  enum class State { kBetween, kInBlock, kHeaderless } state = State::kBetween;
  std::vector<std::string> comments;  // Comment lines since the last other line.
  KeyIndex keys;                      // Current block.
  std::vector<Assignment> outside;    // An assignment that belongs to no config.
  bool saw_content = false;

  auto start_block = [&](std::size_t& i) {
    const std::size_t first = i;
    bool ok = false;
    const ParseState& st = reader.ParseHeader(i, ok);
    if (st.header_name.empty()) {
      state = State::kHeaderless;
      return;
    }
    // After a header error the name is still defined, so its children do not report it missing.
    (void)ok;
    Block& block = file.blocks.emplace_back();
    block.name = std::string(st.header_name);
    block.parents.assign(st.parents.begin(), st.parents.end());
    block.parent_pos = st.parent_pos;
    block.assignments.reserve(reader.ContentLinesFrom(i));
    block.comment = JoinComments(comments);
    block.pos = st.header_pos;
    block.source_line = reader.SharedLine(first);
    keys.Clear();
    state = State::kInBlock;
  };

  std::size_t i = begin;
  while (i < end) {
    switch (reader.Kind(i)) {
      case LineKind::kBlank:
        state = State::kBetween;
        comments.clear();
        ++i;
        continue;
      case LineKind::kComment:
        comments.push_back(reader.CommentText(i));
        ++i;
        continue;
      case LineKind::kContent:
        break;
    }
    saw_content = true;
    if (state == State::kBetween) {
      if (reader.Probe<g::assignment_like>(i)) {
        const auto [name, column] = reader.NameAt(i);
        reader.Error(static_cast<int>(i) + 1, column,
                     file.blocks.empty()
                         ? "expected a config header ('name' or 'name < parent < ...') before the first assignment"
                         : "expected a config header ('name' or 'name < parent < ...'), found an assignment; "
                           "a blank line ends a config, so this line belongs to none");
        reader.Skip(i);
        state = State::kHeaderless;
      } else {
        start_block(i);
      }
    } else if (reader.Probe<g::header_like>(i)) {
      const auto [name, column] = reader.NameAt(i);
      reader.Error(static_cast<int>(i) + 1, column,
                   fmt::format("expected an assignment 'group.field = value', found what looks like the header "
                               "of config '{}'; is a blank line missing before it?",
                               name));
      start_block(i);
    } else if (state == State::kInBlock) {
      Block& block = file.blocks.back();
      if (const auto key = reader.ParseAssignment(i, block.assignments)) {
        const std::size_t earlier = keys.Set(*key, block.assignments.size() - 1);
        if (earlier != std::string::npos) {
          WarnRepeatedKey(reader, block.assignments[earlier], block.assignments.back(),
                          fmt::format("in config '{}'", block.name));
        }
      }
    } else {
      reader.ParseAssignment(i, outside);  // Outside any config: only its errors are of use.
      outside.clear();
    }
    comments.clear();
  }
  return saw_content;
}

void ParseInitAssignments(Reader& reader, InitConfigFile& file) {
  KeyIndex keys;
  std::size_t i = 0;
  while (i < reader.size()) {
    if (reader.Kind(i) != LineKind::kContent) {
      ++i;
      continue;
    }
    if (reader.Probe<g::header_like>(i)) {
      const auto [name, column] = reader.NameAt(i);
      reader.Error(static_cast<int>(i) + 1, column,
                   fmt::format("expected an assignment 'group.field = value', found what looks like the header "
                               "of config '{}'; an init config holds assignments only",
                               name));
      reader.Skip(i);
      continue;
    }
    const auto key = reader.ParseAssignment(i, file.assignments);
    if (!key) continue;
    const std::size_t earlier = keys.Set(*key, file.assignments.size() - 1);
    if (earlier != std::string::npos) {
      WarnRepeatedKey(reader, file.assignments[earlier], file.assignments.back(), "in the init config");
    }
  }
}

}  // namespace asv::parser::detail
