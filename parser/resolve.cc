#include "parser/resolve.h"

#include <fmt/format.h>

#include <algorithm>

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
  for (const auto& b : file.blocks) {
    if (std::find(names.begin(), names.end(), b.name) == names.end()) names.push_back(b.name);
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

// Resolves configs recursively, each at most once; reports the first broken link of a chain.
class Resolver {
 public:
  Resolver(const RunConfigsFile& file, Diagnostics& diags)
      : diags_(diags), defs_(DefinitionsOf(file)), names_(NamesInFileOrder(file)) {}

  bool Defined(const std::string& name) const { return defs_.count(name) > 0; }
  const std::vector<std::string>& names() const { return names_; }

  const ResolvedConfig* Get(const std::string& name) {
    if (const auto it = done_.find(name); it != done_.end()) return &it->second;
    const auto& defs = defs_.at(name);
    if (defs.size() > 1) {
      ReportDuplicate(*defs[0], *defs[1], diags_);
      return nullptr;
    }
    const Block& block = *defs[0];
    stack_.push_back(name);
    ResolvedConfig config;
    config.name = name;
    // Rightmost parent first, so parents further left override it (ASVtorch semantics).
    for (std::size_t j = block.parents.size(); j-- > 0;) {
      const std::string& parent = block.parents[j];
      if (!Defined(parent)) {
        ReportUndefinedParent(block, j, names_, diags_);
        stack_.pop_back();
        return nullptr;
      }
      if (const auto on_stack = std::find(stack_.begin(), stack_.end(), parent); on_stack != stack_.end()) {
        ReportCycle(std::vector<std::string>(on_stack, stack_.end()), block, j, diags_);
        stack_.pop_back();
        return nullptr;
      }
      const ResolvedConfig* resolved = Get(parent);
      if (resolved == nullptr) {
        stack_.pop_back();
        return nullptr;
      }
      for (const auto& n : resolved->chain) {
        config.chain.erase(std::remove(config.chain.begin(), config.chain.end(), n), config.chain.end());
        config.chain.push_back(n);
      }
      for (const auto& key : resolved->keys) config.Set(key, resolved->values.at(key));
    }
    for (const auto& a : block.assignments) {
      config.Set(a.key, ResolvedValue{a.value, a.annotation,
                                      Provenance{Provenance::Source::kRunConfig, name, a.pos}, a.source_line});
    }
    config.chain.push_back(name);
    stack_.pop_back();
    return &done_.emplace(name, std::move(config)).first->second;
  }

 private:
  Diagnostics& diags_;
  Definitions defs_;
  std::vector<std::string> names_;
  std::map<std::string, ResolvedConfig> done_;
  std::vector<std::string> stack_;
};

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

std::optional<ResolvedConfig> Resolve(const RunConfigsFile& file, const std::string& name, Diagnostics& diags) {
  Resolver resolver(file, diags);
  if (!resolver.Defined(name)) {
    diags.Error(SourcePos{}, fmt::format("no config named '{}' in {}{}", name, file.path,
                                         DidYouMean(name, resolver.names())));
    return std::nullopt;
  }
  const ResolvedConfig* config = resolver.Get(name);
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
