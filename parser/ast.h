// What the parser reads from a config file before inheritance is resolved: assignments and
// named blocks with their source positions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "asvcpp/base/diagnostic.h"
#include "parser/value.h"

namespace asv::parser {

/// `group.field = value` or `group.field: type = value`, with an optional trailing comment.
/// Dotted names with more than two parts (`a.b.c`) are kept whole in `key`; `group` is the part
/// before the first dot and `field` the rest.
struct Assignment {
  std::string key;    ///< "group.field" exactly as written (whitespace removed).
  std::string group;  ///< "group"
  std::string field;  ///< "field"
  std::optional<TypeExpr> annotation;
  Value value;
  SourcePos pos;            ///< Position of the first character of the key.
  std::string source_line;  ///< The full text of the line the key is on.
};

/// One named run config: header `name` or `name < parent1 < parent2 ...` and its assignments.
struct Block {
  std::string name;
  std::vector<std::string> parents;  ///< As written, left to right.
  std::vector<SourcePos> parent_pos;
  std::vector<Assignment> assignments;
  std::string comment;  ///< Text of the comment line(s) just above the header, '#' stripped.
  SourcePos pos;         ///< Position of the header.
  std::string source_line;
};

/// A parsed run-configs file: its blocks in file order.
struct RunConfigsFile {
  std::string path;
  std::string text;  ///< Whole file contents (for rendering diagnostics).
  std::vector<Block> blocks;
};

/// A parsed init config file: assignments only.
struct InitConfigFile {
  std::string path;
  std::string text;
  std::vector<Assignment> assignments;
};

}  // namespace asv::parser
