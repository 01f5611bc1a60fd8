#include "asvcpp/train/checkpoint.h"

#include <charconv>
#include <string>
#include <system_error>

namespace asv::train {

std::filesystem::path CheckpointPath(const std::filesystem::path& folder, int epoch) {
  return folder / ("epoch." + std::to_string(epoch) + ".pt");
}

std::optional<int> EpochOfCheckpoint(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  constexpr std::string_view kPrefix = "epoch.";
  constexpr std::string_view kSuffix = ".pt";
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0 ||
      name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return std::nullopt;
  }
  const char* first = name.data() + kPrefix.size();
  const char* last = name.data() + name.size() - kSuffix.size();
  if (*first == '0') return std::nullopt;
  int epoch = 0;
  const auto [end, error] = std::from_chars(first, last, epoch);
  if (error != std::errc() || end != last || epoch < 1) return std::nullopt;
  return epoch;
}

int FindLastEpoch(const std::filesystem::path& folder) {
  int last = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const auto epoch = EpochOfCheckpoint(entry.path());
    std::error_code type_ec;
    if (epoch && *epoch > last && entry.is_regular_file(type_ec)) last = *epoch;
  }
  return last;
}

ResumePlan PlanResume(int resume_epoch) {
  ResumePlan plan;
  plan.load_epoch = resume_epoch < 0 ? -resume_epoch : resume_epoch;
  plan.evaluate_only = resume_epoch < 0;
  return plan;
}

}  // namespace asv::train
