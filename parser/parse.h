// Parsing config files (PEGTL grammar in grammar.h): text -> assignments and blocks.
//
// Both functions collect every problem instead of stopping at the first; the returned object
// holds whatever could be read. A file with errors must not be used: check `diags.has_errors()`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "asvcpp/base/diagnostic.h"
#include "parser/ast.h"

namespace asv::parser {

/// Parses a run-configs file's text. `path` is used for positions only.
/// Reports (as errors in `diags`): non-UTF-8 bytes, an empty file, syntax errors, unterminated
/// strings and brackets, a header where an assignment is expected (missing blank line), bad
/// literals, type annotations that are not type expressions, and values or types nested deeper
/// than 256 levels ("nesting deeper than 256 levels"); warns about a key set twice in one block.
/// Time linear in the size of the text. The positions in the result share one interned copy of
/// `path` (see FileName) and the source lines one copy of `text` (see SourceLine), so the result
/// stays valid after `text` is gone; per assignment, only its key (when longer than the
/// std::string small-buffer) and string or container values allocate.
RunConfigsFile ParseRunConfigs(const std::string& text, const std::string& path, Diagnostics& diags);

/// Parses only what configs `names` need: the blocks that define them and, transitively, their
/// parents. A quick scan of the lines finds the blocks (runs of lines between blank lines) and the
/// configs their headers name; every other block is skipped unread, so its problems are not
/// reported and a half-written config elsewhere in the file does not stop these (ASVtorch parses
/// every block on every run: one bad line anywhere breaks all runs). The blocks read, and what
/// is reported about them, are exactly those of ParseRunConfigs. When a name or a parent is
/// defined by no block, parses the whole file instead (the result of ParseRunConfigs), so that
/// the error can suggest a name from every config ("did you mean").
/// Time linear in the lines of the file for the scan, plus the parse of the blocks read: for one
/// config of chain depth 10 in a 10,000-block file, 5.4 ms with the check and resolution against
/// 58 ms for ParseRunConfigs and the check alone (tools/bench case 4).
RunConfigsFile ParseRunConfigsFor(const std::string& text, const std::string& path,
                                  const std::vector<std::string>& names, Diagnostics& diags);

/// Parses an init config's text: assignments only (a header line is an error), blank and comment
/// lines anywhere. An empty file (or one of blank and comment lines only) is no error: it sets
/// nothing. Reports otherwise as ParseRunConfigs does; same costs.
InitConfigFile ParseInitConfig(const std::string& text, const std::string& path, Diagnostics& diags);

/// Reads and parses a file (ParseRunConfigs, ParseRunConfigsFor, ParseInitConfig); a missing or
/// unreadable file is reported in `diags` at its path (no exception) and gives an empty result.
RunConfigsFile ParseRunConfigsFile(const std::string& path, Diagnostics& diags);
RunConfigsFile ParseRunConfigsFileFor(const std::string& path, const std::vector<std::string>& names,
                                      Diagnostics& diags);
InitConfigFile ParseInitConfigFile(const std::string& path, Diagnostics& diags);

/// Parses a single literal (the value of `--set group.field=VALUE`). `origin` names where it
/// came from in diagnostics (e.g. "--set network.max_epochs"). Returns nullopt after reporting an
/// error (the syntax errors of ParseRunConfigs, nesting included).
std::optional<Value> ParseLiteral(const std::string& text, const std::string& origin, Diagnostics& diags);

}  // namespace asv::parser
