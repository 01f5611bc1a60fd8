// Inheritance resolution: named blocks -> one flat key/value tree per config, with provenance.
//
// Semantics (ASVtorch, reference section 1.4): for `a < b < c`, c's resolved values are applied
// first, then b's, then a's own lines; a key repeated inside one block keeps its last value.
// Parents may be defined before or after their children. The parser knows nothing of Settings.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "asvcpp/base/diagnostic.h"
#include "parser/ast.h"

namespace asv::parser {

/// Where a resolved value came from.
struct Provenance {
  enum class Source { kDefault, kInitConfig, kRecipe, kRunConfig, kCommandLine };
  Source source = Source::kDefault;
  std::string block;  ///< Run-config block that set the value (kRunConfig only).
  SourcePos pos;      ///< Position of the assignment (file:line:column); empty for defaults.

  /// "default", "init config init_config.py:7", "recipe (mfcc.conf)",
  /// "run config 'net' (run_configs.py:42)", "command line (--set)".
  /// kRecipe marks values the recipe itself sets between layers (ASVtorch's run.py sets the
  /// mfcc.conf path after the init config; post_update_call reads the sample rate from it); `pos`
  /// names the file the value comes from.
  std::string ToString() const;
};

/// One resolved setting.
struct ResolvedValue {
  Value value;
  std::optional<TypeExpr> annotation;
  Provenance provenance;
  SourceLine source_line;  ///< Text of the line at provenance.pos (shared with the parsed file).
};

/// A resolved config: keys "group.field" in first-assignment order.
struct ResolvedConfig {
  std::string name;
  std::vector<std::string> chain;  ///< Ancestors in the order they are applied, the config last.
  std::vector<std::string> keys;   ///< Order in which keys were first set.
  std::unordered_map<std::string, ResolvedValue> values;  ///< By key; `keys` gives their order.

  const ResolvedValue* Find(const std::string& key) const;
  /// Sets or replaces a key, keeping first-set order.
  void Set(const std::string& key, ResolvedValue value);
};

/// Checks a parsed run-configs file as a whole: duplicate block names (error at the second
/// definition with a note at the first), undefined parents (with "did you mean"), cycles (the
/// message names the chain, e.g. "a < b < c < a"; of a chain over 30 configs the first and last
/// ten). Reports into `diags`.
/// Time O(blocks + parents) expected (one hash index of the block names, one depth-first search
/// without recursion, so that any inheritance depth is fine).
void CheckRunConfigs(const RunConfigsFile& file, Diagnostics& diags);

/// Resolves configs of one parsed file: the file's blocks are indexed by name once, and each
/// config is resolved at most once (later calls return the same result).
/// Resolving one config costs time linear in its ancestors, their parent links and their
/// assignments (expected: the keys are hashed): each ancestor is visited once however
/// many paths lead to it, and no intermediate config is built. Nothing recurses, so inheritance
/// chains of any depth resolve (a 10,000-deep chain in milliseconds).
/// Not thread-safe (it caches); `file` must outlive the resolver and stay unchanged (the index
/// refers to its block names).
class Resolver {
 public:
  /// Indexes the blocks of `file` by name: O(blocks) expected time.
  explicit Resolver(const RunConfigsFile& file);

  /// Resolves config `name`. Returns nullptr after reporting an error into `diags` when the name
  /// is unknown ("did you mean") or the config's chain is broken (duplicate definition, undefined
  /// parent, cycle: the first broken link met walking the parents rightmost first, depth first);
  /// never throws for bad input. The result stays valid as long as the resolver.
  const ResolvedConfig* Resolve(const std::string& name, Diagnostics& diags);

  /// Block names in file order, each once.
  const std::vector<std::string>& names() const;

 private:
  std::size_t IndexOf(const Block& block) const { return static_cast<std::size_t>(&block - file_.blocks.data()); }
  bool CheckChain(const Block& block, Diagnostics& diags);
  ResolvedConfig Flatten(const Block& block) const;

  const RunConfigsFile& file_;
  // Keys are views of the block names in `file_`.
  std::unordered_map<std::string_view, const Block*> first_;   // First definition of each name.
  std::unordered_map<std::string_view, const Block*> second_;  // Second one, for names defined twice.
  std::unordered_map<std::string_view, ResolvedConfig> done_;
  std::vector<char> sound_;  // By block index: its whole chain was checked and is sound.
  mutable std::vector<std::string> names_;  // filled on first use (only error messages need it)
};

/// Resolves one named config of `file` (a Resolver used once). Returns nullopt and reports an
/// error when the name is unknown ("did you mean") or the config's chain is broken; never throws
/// for bad input. To resolve several configs of one file, use a Resolver.
std::optional<ResolvedConfig> Resolve(const RunConfigsFile& file, const std::string& name, Diagnostics& diags);

/// Resolves the init config into a tree (all provenance kInitConfig).
ResolvedConfig ResolveInit(const InitConfigFile& file);

/// Stable text dump of a resolved config, one `key = repr  # provenance` line per key, sorted by
/// key; used by the golden tests.
std::string Dump(const ResolvedConfig& config);

}  // namespace asv::parser
