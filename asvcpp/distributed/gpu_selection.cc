#include "asvcpp/distributed/gpu_selection.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <string_view>

#include "asvcpp/base/error.h"
#include "asvcpp/base/text.h"

namespace asv::distributed {

std::vector<std::string> SplitVisibleDevices(std::string_view list) {
  std::vector<std::string> entries;
  if (text::Trim(list).empty()) return entries;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    entries.emplace_back(text::Trim(list.substr(start, comma - start)));
    start = comma + 1;
  }
  return entries;
}

namespace {

std::optional<long> ParseIndex(std::string_view entry) {
  long value = 0;
  const char* end = entry.data() + entry.size();
  auto [ptr, ec] = std::from_chars(entry.data(), end, value);
  if (entry.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::string CountAndIds(int count) {
  if (count <= 0) return "no GPUs";
  std::vector<int> ids(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) ids[static_cast<std::size_t>(i)] = i;
  return fmt::format("{} GPU{} ({})", count, count == 1 ? "" : "s", fmt::join(ids, ", "));
}

}  // namespace

std::vector<std::string> WorkerVisibleDevices(const std::vector<int>& gpu_ids,
                                              const std::optional<std::string>& cuda_visible_devices,
                                              int device_count) {
  if (gpu_ids.empty()) throw ConfigError("computing.gpu_ids is empty");

  const std::vector<std::string> entries =
      cuda_visible_devices ? SplitVisibleDevices(*cuda_visible_devices) : std::vector<std::string>{};
  bool numeric = true;
  for (const auto& entry : entries) numeric = numeric && ParseIndex(entry).has_value();
  // CUDA stops reading CUDA_VISIBLE_DEVICES at the first entry it cannot use, so only the first
  // `device_count` entries are devices a worker can actually get.
  const std::size_t usable = std::min(entries.size(), static_cast<std::size_t>(std::max(device_count, 0)));

  std::vector<std::string> result;
  std::set<int> seen;
  for (int id : gpu_ids) {
    if (id < 0) throw ConfigError(fmt::format("computing.gpu_ids: GPU {} is negative; GPU ids start at 0", id));
    if (!seen.insert(id).second) throw ConfigError(fmt::format("computing.gpu_ids lists GPU {} twice", id));
    if (!cuda_visible_devices) {
      if (id >= device_count) {
        throw ConfigError(fmt::format("computing.gpu_ids: GPU {} does not exist: this machine has {}", id,
                                      CountAndIds(device_count)));
      }
      result.push_back(std::to_string(id));
    } else if (entries.empty()) {
      throw ConfigError(
          fmt::format("computing.gpu_ids: GPU {} is not visible: CUDA_VISIBLE_DEVICES is set but empty", id));
    } else if (numeric) {
      std::size_t index = 0;
      while (index < entries.size() && *ParseIndex(entries[index]) != id) ++index;
      if (index == entries.size()) {
        throw ConfigError(
            fmt::format("computing.gpu_ids: GPU {} is not in CUDA_VISIBLE_DEVICES={}", id, *cuda_visible_devices));
      }
      if (index >= usable) {
        const std::string found =
            usable == 0 ? std::string("none of them")
                        : fmt::format("only {} of them ({})", usable,
                                      fmt::join(entries.begin(), entries.begin() + static_cast<long>(usable), ", "));
        throw ConfigError(fmt::format("computing.gpu_ids: GPU {} is in CUDA_VISIBLE_DEVICES={} but CUDA finds {}", id,
                                      *cuda_visible_devices, found));
      }
      result.push_back(std::to_string(id));
    } else {
      if (static_cast<std::size_t>(id) >= usable) {
        throw ConfigError(fmt::format(
            "computing.gpu_ids: GPU {} is not visible: CUDA_VISIBLE_DEVICES={} names devices by UUID, so GPU ids are "
            "positions in that list, and CUDA finds {}",
            id, *cuda_visible_devices, CountAndIds(static_cast<int>(usable))));
      }
      result.push_back(entries[static_cast<std::size_t>(id)]);
    }
  }
  return result;
}

}  // namespace asv::distributed
