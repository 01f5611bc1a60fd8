#include "asvcpp/train/lr_schedule.h"

#include <algorithm>

#include "asvcpp/settings/settings.h"

namespace asv::train {

LrScheduleOptions LrScheduleOptions::FromSettings(const settings::NetworkSettings& network) {
  LrScheduleOptions o;
  o.min_loss_change_ratio = network.min_loss_change_ratio;
  o.min_room_for_improvement = network.min_room_for_improvement;
  o.target_loss = network.target_loss;
  o.max_consecutive_lr_updates = network.max_consecutive_lr_updates;
  return o;
}

LrDecision UpdateLrSchedule(LrScheduleState& state, double epoch_loss, const LrScheduleOptions& options) {
  LrDecision d;
  d.previous_loss = state.training_loss;
  d.loss = epoch_loss;
  d.room = std::max(options.min_room_for_improvement, d.previous_loss - options.target_loss);
  d.change_ratio = (d.previous_loss - epoch_loss) / d.room;
  d.halve = d.change_ratio < options.min_loss_change_ratio;
  state.consecutive_lr_updates = d.halve ? state.consecutive_lr_updates + 1 : 0;
  state.training_loss = epoch_loss;
  d.stop = state.consecutive_lr_updates >= options.max_consecutive_lr_updates;
  return d;
}

}  // namespace asv::train
