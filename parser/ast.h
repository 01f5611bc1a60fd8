// What the parser reads from a config file before inheritance is resolved: assignments and
// named blocks with their source positions.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "asvcpp/base/diagnostic.h"
#include "parser/value.h"

namespace asv::parser {

/// The text of one source line (without its line break), for rendering diagnostics. A line read
/// from a file shares the file's text: copying one copies a reference-counted pointer, not the
/// line, so that every assignment can carry its line without an allocation of its own. The
/// shared text stays alive as long as any SourceLine that points into it.
class SourceLine {
 public:
  SourceLine() = default;  ///< No line (empty).
  /// A line that stands on its own (not part of a parsed file), e.g. built in a test.
  SourceLine(std::string line)  // NOLINT(google-explicit-constructor): assigned from text.
      : text_(std::make_shared<const std::string>(std::move(line))), size_(text_->size()) {}
  SourceLine(const char* line) : SourceLine(std::string(line)) {}  // NOLINT(google-explicit-constructor)
  /// Bytes [begin, begin + size) of `text`; the caller guarantees the range lies inside it.
  SourceLine(std::shared_ptr<const std::string> text, std::size_t begin, std::size_t size) noexcept
      : text_(std::move(text)), begin_(begin), size_(size) {}

  std::string_view view() const noexcept {
    return text_ ? std::string_view(*text_).substr(begin_, size_) : std::string_view();
  }
  /// A copy of the line (allocates).
  std::string str() const { return std::string(view()); }
  /// A copy of the line, so that a SourceLine can be passed where diagnostics take the line as
  /// std::string (Diagnostics::Error, settings::Site).
  operator std::string() const { return str(); }  // NOLINT(google-explicit-constructor)
  /// A view of the line, for diagnostics, which copy it only when they can show it.
  operator std::string_view() const noexcept { return view(); }  // NOLINT(google-explicit-constructor)
  bool empty() const noexcept { return size_ == 0; }

 private:
  std::shared_ptr<const std::string> text_;
  std::size_t begin_ = 0;
  std::size_t size_ = 0;
};

/// `group.field = value` or `group.field: type = value`, with an optional trailing comment.
/// Dotted names with more than two parts (`a.b.c`) are kept whole in `key`; group() is the part
/// before the first dot and field() the rest.
struct Assignment {
  std::string key;  ///< "group.field" exactly as written (whitespace removed).
  std::optional<TypeExpr> annotation;
  Value value;
  SourcePos pos;           ///< Position of the first character of the key.
  SourceLine source_line;  ///< The full text of the line the key is on.

  /// "group": `key` up to its first dot (all of it when there is none). A view into `key`.
  std::string_view group() const noexcept { return std::string_view(key).substr(0, key.find('.')); }
  /// "field": `key` after its first dot (empty when there is none). A view into `key`.
  std::string_view field() const noexcept {
    const auto dot = key.find('.');
    return dot == std::string::npos ? std::string_view() : std::string_view(key).substr(dot + 1);
  }
};

/// One named run config: header `name` or `name < parent1 < parent2 ...` and its assignments.
struct Block {
  std::string name;
  std::vector<std::string> parents;  ///< As written, left to right.
  std::vector<SourcePos> parent_pos;
  std::vector<Assignment> assignments;
  std::string comment;  ///< Text of the comment line(s) just above the header, '#' stripped.
  SourcePos pos;         ///< Position of the header.
  SourceLine source_line;  ///< The full text of the header line.
};

/// A parsed run-configs file: its blocks in file order.
struct RunConfigsFile {
  std::string path;
  std::string text;  ///< Whole file contents. Source lines in the blocks share a copy of it.
  std::vector<Block> blocks;
};

/// A parsed init config file: assignments only.
struct InitConfigFile {
  std::string path;
  std::string text;  ///< Whole file contents. Source lines in the assignments share a copy of it.
  std::vector<Assignment> assignments;
};

}  // namespace asv::parser
