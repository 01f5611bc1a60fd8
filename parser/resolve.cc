#include "parser/resolve.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "asvcpp/base/text.h"

namespace asv::parser {

std::string Provenance::ToString() const {
  const std::string where = pos.line > 0 ? fmt::format("{}:{}", pos.file, pos.line) : pos.file;
  switch (source) {
    case Source::kDefault: return "default";
    case Source::kInitConfig: return "init config " + where;
    case Source::kRecipe: return "recipe (" + where + ")";
    case Source::kRunConfig: return fmt::format("run config '{}' ({})", block, where);
    case Source::kCommandLine: return "command line (--set)";
  }
  return "?";
}

const ResolvedValue* ResolvedConfig::Find(const std::string& key) const {
  const auto it = values.find(key);
  return it == values.end() ? nullptr : &it->second;
}

void ResolvedConfig::Set(const std::string& key, ResolvedValue value) {
  if (values.insert_or_assign(key, std::move(value)).second) keys.push_back(key);
}

namespace {

using Definitions = std::map<std::string, std::vector<const Block*>>;

Definitions DefinitionsOf(const RunConfigsFile& file) {
  Definitions defs;
  for (const auto& b : file.blocks) defs[b.name].push_back(&b);
  return defs;
}

std::vector<std::string> NamesInFileOrder(const RunConfigsFile& file) {
  std::vector<std::string> names;
  std::unordered_set<std::string_view> seen;
  for (const auto& b : file.blocks) {
    if (seen.insert(b.name).second) names.push_back(b.name);
  }
  return names;
}

std::string DidYouMean(const std::string& word, const std::vector<std::string>& candidates) {
  const auto match = text::ClosestMatch(word, candidates);
  return match ? fmt::format(" (did you mean '{}'?)", *match) : std::string();
}

void ReportDuplicate(const Block& first, const Block& again, Diagnostics& diags) {
  auto& d = diags.Error(again.pos, fmt::format("config '{}' is defined twice", again.name), again.source_line);
  d.notes.push_back(Diagnostic{Severity::kNote, first.pos, "first defined here", first.source_line, {}});
}

void ReportUndefinedParent(const Block& block, std::size_t j, const std::vector<std::string>& names,
                           Diagnostics& diags) {
  const std::string& parent = block.parents[j];
  diags.Error(block.parent_pos[j],
              fmt::format("config '{}' inherits from '{}', which is not defined{}", block.name, parent,
                          DidYouMean(parent, names)),
              block.source_line);
}

// `path` runs from the config that is reached again down to `block`, whose parent j closes the loop.
void ReportCycle(const std::vector<std::string>& path, const Block& block, std::size_t j, Diagnostics& diags) {
  std::string chain;
  for (const auto& n : path) chain += n + " < ";
  chain += block.parents[j];
  diags.Error(block.parent_pos[j], fmt::format("inheritance cycle: {}", chain), block.source_line);
}

}  // namespace

void CheckRunConfigs(const RunConfigsFile& file, Diagnostics& diags) {
  const Definitions defs = DefinitionsOf(file);
  const std::vector<std::string> names = NamesInFileOrder(file);
  for (const auto& [name, blocks] : defs) {
    (void)name;
    for (std::size_t k = 1; k < blocks.size(); ++k) ReportDuplicate(*blocks[0], *blocks[k], diags);
  }
  for (const auto& block : file.blocks) {
    for (std::size_t j = 0; j < block.parents.size(); ++j) {
      if (defs.count(block.parents[j]) == 0) ReportUndefinedParent(block, j, names, diags);
    }
  }

  // Depth-first search over first definitions; each back edge closes one cycle, reported once.
  enum class Mark { kNew, kActive, kDone };
  std::map<std::string, Mark> marks;
  std::vector<std::string> path;
  auto visit = [&](const auto& self, const Block& block) -> void {
    marks[block.name] = Mark::kActive;
    path.push_back(block.name);
    for (std::size_t j = 0; j < block.parents.size(); ++j) {
      const auto def = defs.find(block.parents[j]);
      if (def == defs.end()) continue;
      const Mark mark = marks.count(def->first) ? marks[def->first] : Mark::kNew;
      if (mark == Mark::kActive) {
        const auto from = std::find(path.begin(), path.end(), def->first);
        ReportCycle(std::vector<std::string>(from, path.end()), block, j, diags);
      } else if (mark == Mark::kNew) {
        self(self, *def->second[0]);
      }
    }
    path.pop_back();
    marks[block.name] = Mark::kDone;
  };
  for (const auto& name : names) {
    if (!marks.count(name)) visit(visit, *defs.at(name)[0]);
  }
}

Resolver::Resolver(const RunConfigsFile& file) : file_(file) {
  for (const auto& b : file.blocks) definitions_[b.name].push_back(&b);
}

const std::vector<std::string>& Resolver::names() const {
  if (names_.empty()) names_ = NamesInFileOrder(file_);
  return names_;
}

const ResolvedConfig* Resolver::Resolve(const std::string& name, Diagnostics& diags) {
  if (definitions_.count(name) == 0) {
    diags.Error(SourcePos{}, fmt::format("no config named '{}' in {}{}", name, file_.path, DidYouMean(name, names())));
    return nullptr;
  }
  std::vector<std::string> stack;
  return Get(name, stack, diags);
}

// Resolves `name` (defined) after its parents, each config at most once; reports the first broken
// link of a chain. `stack` holds the configs being resolved, to detect cycles.
const ResolvedConfig* Resolver::Get(const std::string& name, std::vector<std::string>& stack, Diagnostics& diags) {
  if (const auto it = done_.find(name); it != done_.end()) return &it->second;
  const auto& defs = definitions_.at(name);
  if (defs.size() > 1) {
    ReportDuplicate(*defs[0], *defs[1], diags);
    return nullptr;
  }
  const Block& block = *defs[0];
  stack.push_back(name);
  const auto fail = [&] {
    stack.pop_back();
    return nullptr;
  };
  ResolvedConfig config;
  config.name = name;
  // Rightmost parent first, so parents further left override it (ASVtorch semantics).
  for (std::size_t j = block.parents.size(); j-- > 0;) {
    const std::string& parent = block.parents[j];
    if (definitions_.count(parent) == 0) {
      ReportUndefinedParent(block, j, names(), diags);
      return fail();
    }
    if (const auto on_stack = std::find(stack.begin(), stack.end(), parent); on_stack != stack.end()) {
      ReportCycle(std::vector<std::string>(on_stack, stack.end()), block, j, diags);
      return fail();
    }
    const ResolvedConfig* resolved = Get(parent, stack, diags);
    if (resolved == nullptr) return fail();
    for (const auto& n : resolved->chain) {
      config.chain.erase(std::remove(config.chain.begin(), config.chain.end(), n), config.chain.end());
      config.chain.push_back(n);
    }
    for (const auto& key : resolved->keys) config.Set(key, resolved->values.at(key));
  }
  for (const auto& a : block.assignments) {
    config.Set(a.key, ResolvedValue{a.value, a.annotation, Provenance{Provenance::Source::kRunConfig, name, a.pos},
                                    a.source_line});
  }
  config.chain.push_back(name);
  stack.pop_back();
  return &done_.emplace(name, std::move(config)).first->second;
}

std::optional<ResolvedConfig> Resolve(const RunConfigsFile& file, const std::string& name, Diagnostics& diags) {
  Resolver resolver(file);
  const ResolvedConfig* config = resolver.Resolve(name, diags);
  if (config == nullptr) return std::nullopt;
  return *config;
}

ResolvedConfig ResolveInit(const InitConfigFile& file) {
  ResolvedConfig config;
  for (const auto& a : file.assignments) {
    config.Set(a.key, ResolvedValue{a.value, a.annotation,
                                    Provenance{Provenance::Source::kInitConfig, {}, a.pos}, a.source_line});
  }
  return config;
}

std::string Dump(const ResolvedConfig& config) {
  std::string out;
  for (const auto& [key, v] : config.values) {
    const std::string type = v.annotation ? ": " + v.annotation->ToString() : std::string();
    out += fmt::format("{}{} = {}  # {}\n", key, type, v.value.Repr(), v.provenance.ToString());
  }
  return out;
}

}  // namespace asv::parser
