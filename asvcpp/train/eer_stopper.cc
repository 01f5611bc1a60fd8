#include "asvcpp/train/eer_stopper.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"

namespace asv::train {

bool EerStopper::Update(double mean_eer) {
  if (mean_eer < best_ - minimum_improvement_) {
    best_ = mean_eer;
    counter_ = 0;
  } else {
    ++counter_;
  }
  return counter_ >= patience_;
}

void EerStopper::Save(const std::filesystem::path& path) const {
  nlohmann::json j = {{"best_mean_eer_percent", best_}, {"evaluations_without_improvement", counter_}};
  asv::fs::WriteFileAtomic(path, j.dump(2) + "\n");
}

void EerStopper::Load(const std::filesystem::path& path) {
  try {
    const auto j = nlohmann::json::parse(asv::fs::ReadFile(path));
    best_ = j.at("best_mean_eer_percent").get<double>();
    counter_ = j.at("evaluations_without_improvement").get<int>();
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("{}: not an early-stopping state file: {}", path.string(), e.what()));
  }
}

}  // namespace asv::train
