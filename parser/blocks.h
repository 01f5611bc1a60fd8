// Internal to parser/: the structure of the two kinds of config file on top of the Reader
// (reader.h): run-configs blocks (comment lines, a header, assignments, ended by a blank line)
// and an init config's flat list of assignments, with a warning for a key set twice in one
// block or init config (blocks.cc). Not a public header.
#pragma once

#include <cstddef>

#include "parser/ast.h"
#include "parser/reader.h"

namespace asv::parser::detail {

/// Parses lines [begin, end) of a run-configs file into blocks appended to `file`. `begin` must
/// be the first line of the file or follow a blank line, and `end` be a blank line or the end of
/// the file: statements never cross a blank line, so the lines in between parse the same whether
/// the rest of the file is read or not. Returns whether a content line was seen.
bool ParseBlocks(Reader& reader, RunConfigsFile& file, std::size_t begin, std::size_t end);

/// Parses every line of an init config into `file.assignments`: a header-like line is an error,
/// blank and comment lines are skipped.
void ParseInitAssignments(Reader& reader, InitConfigFile& file);

}  // namespace asv::parser::detail
