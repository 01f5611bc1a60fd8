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
// the loop. A long cycle is named by its first and last configs (a file can hold as many cycles
// as links, each as long as the file).
template <typename It>
void ReportCycle(It from, It to, const Block& block, std::size_t j, Diagnostics& diags) {
  constexpr std::ptrdiff_t kShownEnds = 10;
  const std::ptrdiff_t length = to - from;
  std::string chain;
  for (std::ptrdiff_t k = 0; k < length; ++k) {
    if (length > 3 * kShownEnds && k == kShownEnds) {
      chain += fmt::format("... ({} more) < ", length - 2 * kShownEnds);
      k = length - kShownEnds - 1;
      continue;
    }
    chain += from[k];
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

  // Depth-first search over first definitions, parents left to right, with an explicit stack;
  // each back edge closes one cycle, reported once.
  enum class Mark : unsigned char { kNew, kActive, kDone };
  std::vector<Mark> marks(blocks.size(), Mark::kNew);  // By index of the first definition.
  std::vector<std::size_t> depth(blocks.size(), 0);    // Position on `path` of an active block.
  struct Frame {
    std::size_t block;
    std::size_t next_parent;
  };
  std::vector<Frame> frames;
  std::vector<std::string_view> path;  // Names of the active blocks, outermost first.
  const auto enter = [&](std::size_t b) {
    marks[b] = Mark::kActive;
    depth[b] = path.size();
    path.push_back(blocks[b].name);
    frames.push_back({b, 0});
  };
  for (std::size_t root = 0; root < blocks.size(); ++root) {
    if (marks[root] != Mark::kNew || first.at(blocks[root].name) != root) continue;
    enter(root);
    while (!frames.empty()) {
      Frame& top = frames.back();
      const Block& block = blocks[top.block];
      if (top.next_parent == block.parents.size()) {
        marks[top.block] = Mark::kDone;
        path.pop_back();
        frames.pop_back();
        continue;
      }
      const std::size_t j = top.next_parent++;
      const auto def = first.find(block.parents[j]);
      if (def == first.end()) continue;
      const Mark mark = marks[def->second];
      if (mark == Mark::kActive) {
        ReportCycle(path.begin() + static_cast<std::ptrdiff_t>(depth[def->second]), path.end(), block, j, diags);
      } else if (mark == Mark::kNew) {
        enter(def->second);  // `top` is not used after this: frames may reallocate.
      }
    }
  }
}

Resolver::Resolver(const RunConfigsFile& file) : file_(file), sound_(file.blocks.size(), 0) {
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
  const Block& block = *it->second;
  if (const auto done = done_.find(block.name); done != done_.end()) return &done->second;
  if (!CheckChain(block, diags)) return nullptr;
  return &done_.emplace(block.name, Flatten(block)).first->second;
}

// Walks the ancestors of `block` depth first, parents rightmost first (the order in which they
// are applied), and reports the first broken link: a name defined twice, an undefined parent, a
// cycle. Ancestors found sound stay marked so, and are not walked again.
bool Resolver::CheckChain(const Block& root, Diagnostics& diags) {
  struct Frame {
    const Block* block;
    std::size_t parents_left;  // Parents [0, parents_left) are still to be walked.
  };
  std::vector<Frame> frames;
  std::vector<std::string_view> path;       // Names of the blocks on `frames`, outermost first.
  std::unordered_map<std::size_t, std::size_t> on_path;  // Block index -> position on `path`.
  const auto enter = [&](const Block& block) {
    if (const auto again = second_.find(block.name); again != second_.end()) {
      ReportDuplicate(block, *again->second, diags);
      return false;
    }
    on_path.emplace(IndexOf(block), path.size());
    path.push_back(block.name);
    frames.push_back({&block, block.parents.size()});
    return true;
  };
  if (sound_[IndexOf(root)]) return true;
  if (!enter(root)) return false;
  while (!frames.empty()) {
    Frame& top = frames.back();
    const Block& block = *top.block;
    if (top.parents_left == 0) {
      sound_[IndexOf(block)] = 1;
      on_path.erase(IndexOf(block));
      path.pop_back();
      frames.pop_back();
      continue;
    }
    const std::size_t j = --top.parents_left;
    const auto def = first_.find(block.parents[j]);
    if (def == first_.end()) {
      ReportUndefinedParent(block, j, names(), diags);
      return false;
    }
    const std::size_t parent = IndexOf(*def->second);
    if (sound_[parent]) continue;
    if (const auto at = on_path.find(parent); at != on_path.end()) {
      ReportCycle(path.begin() + static_cast<std::ptrdiff_t>(at->second), path.end(), block, j, diags);
      return false;
    }
    if (!enter(*def->second)) return false;  // `top` is not used after this: frames may reallocate.
  }
  return true;
}

// The config `block` resolves to, its chain known sound. Semantically the blocks are applied in
// the order of the expansion E(b) = E(rightmost parent) ... E(leftmost parent) b, in which an
// ancestor reached on several paths appears several times:
//  - the chain lists each ancestor once, at its last place in E: the reverse of the preorder of
//    a depth-first walk with the parents leftmost first, each block visited once;
//  - a key keeps the value of the last block in E that sets it (its last assignment there): the
//    first block of that preorder that sets it;
//  - keys are ordered by their first setting in E: the blocks in the postorder of a depth-first
//    walk with the parents rightmost first, each block visited once.
// Both walks use explicit stacks; each costs O(ancestors + parent links).
ResolvedConfig Resolver::Flatten(const Block& root) const {
  struct Frame {
    const Block* block;
    std::size_t next;  // Parents walked so far.
  };
  const auto parent_of = [&](const Block& block, std::size_t k) -> const Block& {
    return *first_.at(block.parents[k]);
  };

  // Preorder, parents leftmost first.
  std::vector<const Block*> preorder;
  std::vector<char> seen(file_.blocks.size(), 0);
  std::vector<const Block*> pending = {&root};
  while (!pending.empty()) {
    const Block* block = pending.back();
    pending.pop_back();
    if (seen[IndexOf(*block)]) continue;
    seen[IndexOf(*block)] = 1;
    preorder.push_back(block);
    for (std::size_t k = block->parents.size(); k-- > 0;) {  // Leftmost on top.
      const Block& parent = parent_of(*block, k);
      if (!seen[IndexOf(parent)]) pending.push_back(&parent);
    }
  }

  // Postorder, parents rightmost first.
  std::vector<const Block*> postorder;
  std::fill(seen.begin(), seen.end(), 0);
  std::vector<Frame> frames = {{&root, 0}};
  seen[IndexOf(root)] = 1;
  while (!frames.empty()) {
    Frame& top = frames.back();
    const Block& block = *top.block;
    if (top.next == block.parents.size()) {
      postorder.push_back(&block);
      frames.pop_back();
      continue;
    }
    const Block& parent = parent_of(block, block.parents.size() - 1 - top.next++);
    if (seen[IndexOf(parent)]) continue;
    seen[IndexOf(parent)] = 1;
    frames.push_back({&parent, 0});  // `top` is not used after this: frames may reallocate.
  }

  ResolvedConfig config;
  config.name = root.name;
  config.chain.reserve(preorder.size());
  for (auto it = preorder.rbegin(); it != preorder.rend(); ++it) config.chain.push_back((*it)->name);
  std::size_t assignments = 0;
  for (const Block* block : postorder) assignments += block->assignments.size();
  std::unordered_set<std::string_view> key_seen;
  key_seen.reserve(assignments);
  config.values.reserve(assignments);
  for (const Block* block : postorder) {
    for (const auto& a : block->assignments) {
      if (key_seen.insert(a.key).second) config.keys.push_back(a.key);
    }
  }
  for (const Block* block : preorder) {
    for (auto a = block->assignments.rbegin(); a != block->assignments.rend(); ++a) {
      const auto [it, added] = config.values.try_emplace(a->key);
      if (!added) continue;
      it->second = ResolvedValue{a->value, a->annotation,
                                 Provenance{Provenance::Source::kRunConfig, block->name, a->pos}, a->source_line};
    }
  }
  return config;
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
  std::vector<const std::pair<const std::string, ResolvedValue>*> sorted;
  sorted.reserve(config.values.size());
  for (const auto& entry : config.values) sorted.push_back(&entry);
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  for (const auto* entry : sorted) {
    const auto& [key, v] = *entry;
    const std::string type = v.annotation ? ": " + v.annotation->ToString() : std::string();
    out += fmt::format("{}{} = {}  # {}\n", key, type, v.value.Repr(), v.provenance.ToString());
  }
  return out;
}

}  // namespace asv::parser
