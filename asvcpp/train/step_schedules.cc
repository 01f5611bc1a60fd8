#include "asvcpp/train/step_schedules.h"

#include <optional>

namespace asv::train {

StepSchedule WeSpeakerStepSchedule(ExponentialLrOptions lr, const MarginScheduleOptions* margin) {
  lr.Validate();
  std::optional<MarginScheduleOptions> m;
  if (margin) {
    margin->Validate();
    m = *margin;
  }
  return [lr, m](int epoch, std::int64_t step, std::int64_t steps_per_epoch) mutable {
    lr.epoch_iter = steps_per_epoch;
    const auto iteration = GlobalIteration(epoch, steps_per_epoch, step);
    StepSettings settings;
    settings.learning_rate = ExponentialLrAt(lr, iteration);
    if (m) {
      m->epoch_iter = steps_per_epoch;
      settings.margin = MarginAt(*m, iteration);
    }
    return settings;
  };
}

}  // namespace asv::train
