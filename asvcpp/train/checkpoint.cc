#include "asvcpp/train/checkpoint.h"

#include <string>
#include <system_error>

namespace asv::train {

std::filesystem::path CheckpointPath(const std::filesystem::path& folder, int epoch) {
  return folder / ("epoch." + std::to_string(epoch) + ".pt");
}

int FindLastContiguousEpoch(const std::filesystem::path& folder) {
  int n = 0;
  std::error_code ec;
  while (std::filesystem::is_regular_file(CheckpointPath(folder, n + 1), ec)) ++n;
  return n;
}

ResumePlan PlanResume(int resume_epoch) {
  ResumePlan plan;
  plan.load_epoch = resume_epoch < 0 ? -resume_epoch : resume_epoch;
  plan.evaluate_only = resume_epoch < 0;
  return plan;
}

}  // namespace asv::train
