#include "asvcpp/distributed/world.h"

#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <unistd.h>  // environ (declared by glibc under _GNU_SOURCE, which g++ defines)

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"

namespace asv::distributed {

namespace {

// Guards against lists such as "n[0-999999999]" that would exhaust memory before anything fails.
constexpr std::size_t kMaxExpanded = std::size_t{1} << 20;

// The port derived for SLURM steps lies in [kSlurmPortBase, kSlurmPortBase + kSlurmPortRange).
constexpr std::int64_t kSlurmPortBase = 15000;
constexpr std::int64_t kSlurmPortRange = 40000;

std::optional<std::int64_t> ParseInt(std::string_view text) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> ParseDigits(std::string_view text) {
  if (text.empty()) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  std::uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

// Splits at commas outside brackets.
std::vector<std::string_view> SplitTopLevel(std::string_view text) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') ++depth;
    if (text[i] == ']') --depth;
    if (text[i] == ',' && depth <= 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

// `label` names the source in messages: "host list 'x'" or "SLURM_JOB_NODELIST=x".
std::vector<std::string> ExpandBracketGroup(std::string_view group, const std::string& label) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= group.size()) {
    std::size_t comma = group.find(',', start);
    if (comma == std::string_view::npos) comma = group.size();
    const std::string_view item = group.substr(start, comma - start);
    const std::size_t dash = item.find('-');
    const std::string_view lo_text = item.substr(0, dash);
    const std::string_view hi_text = dash == std::string_view::npos ? lo_text : item.substr(dash + 1);
    const auto lo = ParseDigits(lo_text);
    const auto hi = ParseDigits(hi_text);
    if (!lo || !hi) {
      throw ConfigError(fmt::format("{}: '{}' in [{}] is not a number or a range such as 01-04", label, item, group));
    }
    if (*hi < *lo) throw ConfigError(fmt::format("{}: range {} in [{}] runs backwards", label, item, group));
    if (*hi - *lo >= kMaxExpanded || out.size() + (*hi - *lo) >= kMaxExpanded) {
      throw ConfigError(fmt::format("{}: more than {} hosts", label, kMaxExpanded));
    }
    // SLURM pads every number of a range to the width of its lower bound ("01-10" -> 01 ... 10).
    for (std::uint64_t n = *lo; n <= *hi; ++n) out.push_back(fmt::format("{:0{}}", n, lo_text.size()));
    start = comma + 1;
  }
  return out;
}

std::vector<std::string> ExpandHost(std::string_view pattern, const std::string& label) {
  if (pattern.empty()) throw ConfigError(fmt::format("{}: empty host name", label));
  std::vector<std::string> hosts = {""};
  std::size_t pos = 0;
  while (pos < pattern.size()) {
    const std::size_t open = pattern.find_first_of("[]", pos);
    const std::string_view literal = pattern.substr(pos, open == std::string_view::npos ? open : open - pos);
    for (auto& host : hosts) host += literal;
    if (open == std::string_view::npos) break;
    if (pattern[open] == ']') throw ConfigError(fmt::format("{}: ']' without '[' in '{}'", label, pattern));
    const std::size_t close = pattern.find_first_of("[]", open + 1);
    if (close == std::string_view::npos || pattern[close] != ']') {
      throw ConfigError(fmt::format("{}: '[' in '{}' is not closed", label, pattern));
    }
    const std::vector<std::string> numbers = ExpandBracketGroup(pattern.substr(open + 1, close - open - 1), label);
    if (hosts.size() * numbers.size() > kMaxExpanded) {
      throw ConfigError(fmt::format("{}: more than {} hosts", label, kMaxExpanded));
    }
    std::vector<std::string> product;
    product.reserve(hosts.size() * numbers.size());
    for (const auto& host : hosts) {
      for (const auto& number : numbers) product.push_back(host + number);
    }
    hosts = std::move(product);
    pos = close + 1;
  }
  return hosts;
}

std::vector<std::string> ExpandHostListLabelled(std::string_view list, const std::string& label) {
  if (list.empty()) throw ConfigError(fmt::format("{}: empty host list", label));
  std::vector<std::string> hosts;
  for (std::string_view pattern : SplitTopLevel(list)) {
    std::vector<std::string> expanded = ExpandHost(pattern, label);
    if (hosts.size() + expanded.size() > kMaxExpanded) {
      throw ConfigError(fmt::format("{}: more than {} hosts", label, kMaxExpanded));
    }
    hosts.insert(hosts.end(), expanded.begin(), expanded.end());
  }
  return hosts;
}

std::vector<int> ExpandTasksPerNodeLabelled(std::string_view spec, const std::string& label) {
  std::vector<int> tasks;
  for (std::string_view item : SplitTopLevel(spec)) {
    std::string_view count_text = item;
    std::string_view repeat_text = "1";
    if (const std::size_t paren = item.find('('); paren != std::string_view::npos) {
      count_text = item.substr(0, paren);
      const std::string_view rest = item.substr(paren);
      if (rest.size() < 4 || rest.substr(0, 2) != "(x" || rest.back() != ')') {
        throw ConfigError(fmt::format("{}: '{}' is neither N nor N(xK)", label, item));
      }
      repeat_text = rest.substr(2, rest.size() - 3);
    }
    const auto count = ParseDigits(count_text);
    const auto repeat = ParseDigits(repeat_text);
    if (!count || !repeat) throw ConfigError(fmt::format("{}: '{}' is neither N nor N(xK)", label, item));
    if (*count < 1 || *count > static_cast<std::uint64_t>(INT32_MAX) || *repeat < 1) {
      throw ConfigError(fmt::format("{}: '{}' must give at least one task on at least one node", label, item));
    }
    if (*repeat > kMaxExpanded || tasks.size() + *repeat > kMaxExpanded) {
      throw ConfigError(fmt::format("{}: more than {} nodes", label, kMaxExpanded));
    }
    tasks.insert(tasks.end(), *repeat, static_cast<int>(*count));
  }
  return tasks;
}

// A value read from the environment with the text that names it in messages ("RANK=3", or
// "LOCAL_RANK (unset, so RANK=3)" when it fell back to another variable).
struct Value {
  std::int64_t value = 0;
  std::string label;
};

class EnvReader {
 public:
  EnvReader(const Environment& env, std::string context) : env_(env), context_(std::move(context)) {}

  // Empty counts as unset so that `MASTER_ADDR= asvrun ...` clears a variable.
  const std::string* Find(const std::string& name) const {
    auto it = env_.find(name);
    return it == env_.end() || it->second.empty() ? nullptr : &it->second;
  }
  bool Has(const std::string& name) const { return Find(name) != nullptr; }

  std::optional<Value> Int(const std::string& name, std::int64_t min, std::int64_t max = INT32_MAX) const {
    const std::string* text = Find(name);
    if (text == nullptr) return std::nullopt;
    const auto value = ParseInt(*text);
    if (!value) Fail("{}={} is not an integer", name, *text);
    if (*value < min) Fail("{}={} must be at least {}", name, *text, min);
    if (*value > max) Fail("{}={} must be at most {}", name, *text, max);
    return Value{*value, fmt::format("{}={}", name, *text)};
  }

  Value RequireInt(const std::string& name, std::int64_t min, std::int64_t max = INT32_MAX) const {
    auto value = Int(name, min, max);
    if (!value) Fail("{} is not set", name);
    return *value;
  }

  // The first of `names` that is set.
  std::optional<Value> FirstInt(std::initializer_list<const char*> names, std::int64_t min) const {
    for (const char* name : names) {
      if (Has(name)) return Int(name, min);
    }
    return std::nullopt;
  }

  Value IntOr(const std::string& name, std::int64_t min, const Value& fallback) const {
    if (auto value = Int(name, min)) return *value;
    return Value{fallback.value, fmt::format("{} (unset, so {})", name, fallback.label)};
  }

  int Port(const std::string& name) const { return static_cast<int>(RequireInt(name, 1, 65535).value); }

  template <typename... Args>
  [[noreturn]] void Fail(fmt::format_string<Args...> format, Args&&... args) const {
    throw ConfigError(fmt::format("{}: {}", context_, fmt::format(format, std::forward<Args>(args)...)));
  }

 private:
  const Environment& env_;
  std::string context_;
};

void CheckLess(const EnvReader& reader, const Value& small, const Value& big, const char* small_name) {
  if (small.value >= big.value) reader.Fail("{} but {}: {} must be smaller", small.label, big.label, small_name);
}

// asvrun's launcher and torchrun export the same variables.
WorldInfo FromTorchrunVariables(const Environment& env, LaunchProtocol protocol) {
  const EnvReader reader(env, fmt::format("{} environment", ToString(protocol)));
  const Value rank = reader.RequireInt("RANK", 0);
  const Value world = reader.RequireInt("WORLD_SIZE", 1);
  const Value local_rank = reader.IntOr("LOCAL_RANK", 0, rank);
  const Value local_world = reader.IntOr("LOCAL_WORLD_SIZE", 1, world);
  CheckLess(reader, rank, world, "RANK");
  CheckLess(reader, local_rank, local_world, "LOCAL_RANK");
  if (local_world.value > world.value) {
    reader.Fail("{} but {}: LOCAL_WORLD_SIZE cannot exceed WORLD_SIZE", local_world.label, world.label);
  }

  WorldInfo info;
  info.protocol = protocol;
  info.rank = static_cast<int>(rank.value);
  info.world_size = static_cast<int>(world.value);
  info.local_rank = static_cast<int>(local_rank.value);
  info.local_world_size = static_cast<int>(local_world.value);
  info.nnodes = (info.world_size + info.local_world_size - 1) / info.local_world_size;
  const Value derived_node{rank.value / local_world.value, fmt::format("{} / {}", rank.label, local_world.label)};
  const Value node = reader.Has("GROUP_RANK") ? reader.RequireInt("GROUP_RANK", 0)
                                               : reader.IntOr("NODE_RANK", 0, derived_node);
  if (node.value >= info.nnodes) {
    reader.Fail("{} but {} with {} make {} node(s): the node rank must be smaller", node.label, world.label,
                local_world.label, info.nnodes);
  }
  info.node_rank = static_cast<int>(node.value);

  if (const std::string* addr = reader.Find("MASTER_ADDR")) {
    info.master_addr = *addr;
  } else if (info.nnodes > 1) {
    reader.Fail("MASTER_ADDR is not set but {} with {} make {} nodes; every node needs the store's address",
                world.label, local_world.label, info.nnodes);
  }
  if (info.world_size > 1) {
    if (!reader.Has("MASTER_PORT")) reader.Fail("MASTER_PORT is not set but {}", world.label);
    info.master_port = reader.Port("MASTER_PORT");
  } else if (reader.Has("MASTER_PORT")) {
    info.master_port = reader.Port("MASTER_PORT");
  }
  // torchrun compares with str(True), so only this exact spelling means the agent hosts the store.
  const std::string* agent_store = reader.Find("TORCHELASTIC_USE_AGENT_STORE");
  info.store_hosted_externally =
      protocol == LaunchProtocol::kAsvrun || (agent_store != nullptr && *agent_store == "True");
  return info;
}

WorldInfo FromSlurmVariables(const Environment& env) {
  const EnvReader reader(env, "slurm environment");
  const Value rank = reader.RequireInt("SLURM_PROCID", 0);
  const Value world = reader.RequireInt("SLURM_NTASKS", 1);
  const Value local_rank = reader.RequireInt("SLURM_LOCALID", 0);
  const Value node = reader.RequireInt("SLURM_NODEID", 0);
  CheckLess(reader, rank, world, "SLURM_PROCID");

  std::optional<std::pair<std::string, std::vector<int>>> tasks_per_node;
  for (const char* name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    if (const std::string* spec = reader.Find(name)) {
      const std::string label = fmt::format("{}={}", name, *spec);
      tasks_per_node.emplace(label, ExpandTasksPerNodeLabelled(*spec, fmt::format("slurm environment: {}", label)));
      break;
    }
  }
  // The step's own variables come first: a step may use fewer nodes than the job.
  std::optional<Value> nnodes = reader.FirstInt({"SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"}, 1);
  if (!nnodes) {
    const auto count = tasks_per_node ? static_cast<std::int64_t>(tasks_per_node->second.size()) : 1;
    nnodes = Value{count, fmt::format("{} node(s)", count)};
  }
  CheckLess(reader, node, *nnodes, "SLURM_NODEID");

  Value local_world;
  if (tasks_per_node) {
    const auto& [label, counts] = *tasks_per_node;
    if (node.value >= static_cast<std::int64_t>(counts.size())) {
      reader.Fail("{} but {} lists {} node(s)", node.label, label, counts.size());
    }
    local_world = Value{counts[static_cast<std::size_t>(node.value)],
                        fmt::format("{} (node {} has {})", label, node.value, counts[static_cast<std::size_t>(node.value)])};
  } else if (nnodes->value == 1) {
    local_world = Value{world.value, fmt::format("{} on one node", world.label)};
  } else {
    reader.Fail("{} but neither SLURM_STEP_TASKS_PER_NODE nor SLURM_TASKS_PER_NODE is set", nnodes->label);
  }
  CheckLess(reader, local_rank, local_world, "SLURM_LOCALID");
  if (local_world.value > world.value) {
    reader.Fail("{} but {}: a node cannot run more tasks than the step", local_world.label, world.label);
  }

  WorldInfo info;
  info.protocol = LaunchProtocol::kSlurm;
  info.rank = static_cast<int>(rank.value);
  info.world_size = static_cast<int>(world.value);
  info.local_rank = static_cast<int>(local_rank.value);
  info.local_world_size = static_cast<int>(local_world.value);
  info.node_rank = static_cast<int>(node.value);
  info.nnodes = static_cast<int>(nnodes->value);

  if (const std::string* addr = reader.Find("MASTER_ADDR")) {
    info.master_addr = *addr;
  } else if (const char* name = reader.Has("SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST"
                                : reader.Has("SLURM_JOB_NODELIST")  ? "SLURM_JOB_NODELIST"
                                                                    : nullptr) {
    const std::string& list = *reader.Find(name);
    info.master_addr = ExpandHostListLabelled(list, fmt::format("slurm environment: {}={}", name, list)).front();
  } else if (info.nnodes > 1) {
    reader.Fail("{} but neither MASTER_ADDR nor SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST is set", nnodes->label);
  }

  if (reader.Has("MASTER_PORT")) {
    info.master_port = reader.Port("MASTER_PORT");
  } else {
    if (!reader.Has("SLURM_JOB_ID")) reader.Fail("neither MASTER_PORT nor SLURM_JOB_ID is set");
    const Value job = reader.RequireInt("SLURM_JOB_ID", 0, INT64_MAX / 32);
    const Value step = reader.RequireInt("SLURM_STEP_ID", 0, INT64_MAX / 32);
    info.master_port = static_cast<int>(kSlurmPortBase + (job.value * 16 + step.value) % kSlurmPortRange);
  }
  return info;
}

}  // namespace

const char* ToString(LaunchProtocol protocol) {
  switch (protocol) {
    case LaunchProtocol::kNone:
      return "none";
    case LaunchProtocol::kAsvrun:
      return "asvrun";
    case LaunchProtocol::kTorchrun:
      return "torchrun";
    case LaunchProtocol::kSlurm:
      return "slurm";
  }
  return "unknown";
}

std::string WorldInfo::Describe() const {
  if (protocol == LaunchProtocol::kNone && !distributed()) return "single process (no launch protocol)";
  std::string store = master_port == 0 ? "no store" : fmt::format("store {}:{}", master_addr, master_port);
  if (store_hosted_externally && master_port != 0) {
    store += protocol == LaunchProtocol::kTorchrun ? " (hosted by torchrun's agent)" : " (hosted by the launcher)";
  }
  return fmt::format("rank {} of {} (local {} of {}, node {} of {}), {}, {}", rank, world_size, local_rank,
                     local_world_size, node_rank, nnodes, ToString(protocol), store);
}

Environment CurrentEnvironment() {
  Environment env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::size_t eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return env;
}

const std::vector<std::string> kWorkerUnsetEnvironment = {"ASV_DIST_PROTOCOL", "TORCHELASTIC_USE_AGENT_STORE"};

Environment AsvrunWorkerEnvironment(const WorldInfo& world) {
  return {{"ASV_LAUNCHER", "1"},
          {"RANK", std::to_string(world.rank)},
          {"WORLD_SIZE", std::to_string(world.world_size)},
          {"LOCAL_RANK", std::to_string(world.local_rank)},
          {"LOCAL_WORLD_SIZE", std::to_string(world.local_world_size)},
          {"GROUP_RANK", std::to_string(world.node_rank)},
          {"MASTER_ADDR", world.master_addr},
          {"MASTER_PORT", std::to_string(world.master_port)}};
}

WorldInfo WorldFromEnvironment(const Environment& env) {
  const EnvReader reader(env, "launch environment");
  if (const std::string* forced = reader.Find("ASV_DIST_PROTOCOL")) {
    if (*forced == "none") return WorldInfo{};
    if (*forced == "asvrun") return FromTorchrunVariables(env, LaunchProtocol::kAsvrun);
    if (*forced == "torchrun") return FromTorchrunVariables(env, LaunchProtocol::kTorchrun);
    if (*forced == "slurm") return FromSlurmVariables(env);
    reader.Fail("ASV_DIST_PROTOCOL={} is not one of none, asvrun, torchrun, slurm", *forced);
  }
  if (const std::string* launcher = reader.Find("ASV_LAUNCHER"); launcher != nullptr && *launcher == "1") {
    return FromTorchrunVariables(env, LaunchProtocol::kAsvrun);
  }
  if (reader.Has("RANK") && reader.Has("WORLD_SIZE")) return FromTorchrunVariables(env, LaunchProtocol::kTorchrun);
  if (reader.Has("SLURM_PROCID") && reader.Has("SLURM_NTASKS") && reader.Has("SLURM_STEP_ID")) {
    return FromSlurmVariables(env);
  }
  if (reader.Has("RANK") != reader.Has("WORLD_SIZE")) {
    ASV_LOG(Warning, "{} is set but {} is not; running as a single process", reader.Has("RANK") ? "RANK" : "WORLD_SIZE",
            reader.Has("RANK") ? "WORLD_SIZE" : "RANK");
  }
  return WorldInfo{};
}

std::vector<std::string> ExpandHostList(std::string_view list) {
  return ExpandHostListLabelled(list, fmt::format("host list '{}'", list));
}

std::vector<int> ExpandTasksPerNode(std::string_view spec) {
  return ExpandTasksPerNodeLabelled(spec, fmt::format("tasks-per-node list '{}'", spec));
}

}  // namespace asv::distributed
