#include "asvcpp/train/margin_schedule.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::train {

MarginIncrease ParseMarginIncrease(const std::string& name) {
  if (name == "exp") return MarginIncrease::kExp;
  if (name == "linear") return MarginIncrease::kLinear;
  throw ConfigError(fmt::format("margin increase type '{}' is not one of exp, linear", name));
}

void MarginScheduleOptions::Validate() const {
  if (epoch_iter < 1) throw std::invalid_argument(fmt::format("margin schedule: epoch_iter {} < 1", epoch_iter));
  if (increase_start_epoch < 1 || fix_start_epoch < increase_start_epoch) {
    throw std::invalid_argument(
        fmt::format("margin schedule: need 1 <= increase_start_epoch ({}) <= fix_start_epoch ({})",
                    increase_start_epoch, fix_start_epoch));
  }
  for (double m : {initial_margin, final_margin}) {
    if (!(m >= 0 && std::isfinite(m))) {
      throw std::invalid_argument(fmt::format("margin schedule: margin {} must be finite and >= 0", m));
    }
  }
}

double MarginAt(const MarginScheduleOptions& options, std::int64_t iteration) {
  options.Validate();
  if (iteration < 0) throw std::invalid_argument(fmt::format("margin schedule: iteration {} < 0", iteration));
  if (!options.update_margin) return options.initial_margin;
  const std::int64_t increase_start = (options.increase_start_epoch - 1) * options.epoch_iter;
  const std::int64_t fix_start = (options.fix_start_epoch - 1) * options.epoch_iter;
  if (iteration >= fix_start) return options.final_margin;
  if (iteration < increase_start) return options.initial_margin;
  // Same operations in the same order as WeSpeaker, so the values agree to the last bit.
  const double t = static_cast<double>(iteration - increase_start);
  const double span = static_cast<double>(fix_start - increase_start);
  double ratio = 0;
  if (options.increase == MarginIncrease::kExp) {
    constexpr double kInitialVal = 1.0;
    constexpr double kFinalVal = 1e-3;
    ratio = 1.0 - std::exp((t / span) * std::log(kFinalVal / (kInitialVal + 1e-6))) * kInitialVal;
  } else {
    ratio = 1.0 * t / span;
  }
  return options.initial_margin + (options.final_margin - options.initial_margin) * ratio;
}

}  // namespace asv::train
