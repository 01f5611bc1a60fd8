#include "parser/resolve.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "asvcpp/base/text.h"

namespace asv::parser {

std::string Provenance::ToString() const {
  const std::string where = pos.line > 0 ? fmt::format("{}:{}", pos.file.str(), pos.line) : pos.file.str();
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

// Block name -> its first definition; views of the names in the file.
using Index = std::unordered_map<std::string_view, const Block*>;

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

// `from`..`to` runs from the config that is reached again down to `block`, whose parent j closes
// the loop.
template <typename It>
void ReportCycle(It from, It to, const Block& block, std::size_t j, Diagnostics& diags) {
  std::string chain;
  for (; from != to; ++from) {
    chain += *from;
    chain += " < ";
  }
  chain += block.parents[j];
  diags.Error(block.parent_pos[j], fmt::format("inheritance cycle: {}", chain), block.source_line);
}

}  // namespace

void CheckRunConfigs(const RunConfigsFile& file, Diagnostics& diags) {
  const std::vector<Block>& blocks = file.blocks;
  std::unordered_map<std::string_view, std::size_t> first;  // Name -> index of its first block.
  first.reserve(blocks.size());
  std::vector<std::pair<std::size_t, std::size_t>> duplicates;  // (first, again) block indices.
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const auto [it, added] = first.emplace(blocks[b].name, b);
    if (!added) duplicates.emplace_back(it->second, b);
  }
  // Reported by name, then in file order (as the ordered index this replaced did).
  std::stable_sort(duplicates.begin(), duplicates.end(),
                   [&](const auto& x, const auto& y) { return blocks[x.first].name < blocks[y.first].name; });
  for (const auto& [b, again] : duplicates) ReportDuplicate(blocks[b], blocks[again], diags);

  std::vector<std::string> names;  // Only needed for "did you mean".
  for (const auto& block : blocks) {
    for (std::size_t j = 0; j < block.parents.size(); ++j) {
      if (first.count(block.parents[j]) != 0) continue;
      if (names.empty()) names = NamesInFileOrder(file);
      ReportUndefinedParent(block, j, names, diags);
    }
  }

  // Depth-first search over first definitions; each back edge closes one cycle, reported once.
  enum class Mark : unsigned char { kNew, kActive, kDone };
  std::vector<Mark> marks(blocks.size(), Mark::kNew);  // By index of the first definition.
  std::vector<std::string_view> path;
  auto visit = [&](const auto& self, std::size_t b) -> void {
    const Block& block = blocks[b];
    marks[b] = Mark::kActive;
    path.push_back(block.name);
    for (std::size_t j = 0; j < block.parents.size(); ++j) {
      const auto def = first.find(block.parents[j]);
      if (def == first.end()) continue;
      const Mark mark = marks[def->second];
      if (mark == Mark::kActive) {
        const auto from = std::find(path.begin(), path.end(), def->first);
        ReportCycle(from, path.end(), block, j, diags);
      } else if (mark == Mark::kNew) {
        self(self, def->second);
      }
    }
    path.pop_back();
    marks[b] = Mark::kDone;
  };
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    if (marks[b] == Mark::kNew && first.at(blocks[b].name) == b) visit(visit, b);
  }
}

Resolver::Resolver(const RunConfigsFile& file) : file_(file) {
  first_.reserve(file.blocks.size());
  for (const auto& b : file.blocks) {
    if (!first_.emplace(b.name, &b).second) second_.emplace(b.name, &b);  // Keeps the second only.
  }
}

const std::vector<std::string>& Resolver::names() const {
  if (names_.empty()) names_ = NamesInFileOrder(file_);
  return names_;
}

const ResolvedConfig* Resolver::Resolve(const std::string& name, Diagnostics& diags) {
  const auto it = first_.find(name);
  if (it == first_.end()) {
    diags.Error(SourcePos{}, fmt::format("no config named '{}' in {}{}", name, file_.path, DidYouMean(name, names())));
    return nullptr;
  }
  std::vector<std::string_view> stack;
  return Get(*it->second, stack, diags);
}

// Resolves `block` (the first definition of its name) after its parents, each config at most
// once; reports the first broken link of a chain. `stack` holds the configs being resolved, to
// detect cycles.
const ResolvedConfig* Resolver::Get(const Block& block, std::vector<std::string_view>& stack, Diagnostics& diags) {
  const std::string& name = block.name;
  if (const auto it = done_.find(name); it != done_.end()) return &it->second;
  if (const auto again = second_.find(name); again != second_.end()) {
    ReportDuplicate(block, *again->second, diags);
    return nullptr;
  }
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
    const auto def = first_.find(parent);
    if (def == first_.end()) {
      ReportUndefinedParent(block, j, names(), diags);
      return fail();
    }
    if (const auto on_stack = std::find(stack.begin(), stack.end(), parent); on_stack != stack.end()) {
      ReportCycle(on_stack, stack.end(), block, j, diags);
      return fail();
    }
    const ResolvedConfig* resolved = Get(*def->second, stack, diags);
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
