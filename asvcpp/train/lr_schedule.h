// The learning-rate rule of ASVtorch's train_network (asvtorch/src/networks/network_training.py,
// at the end of each epoch), applied once per epoch:
//
//   prev   = state.training_loss            (float32 max before the first epoch -> never halves)
//   room   = max(min_room_for_improvement, prev − target_loss)
//   change = (prev − cur) / room
//   change < min_loss_change_ratio  ->  halve the learning rate of every group,
//                                       consecutive_lr_updates += 1
//   otherwise                       ->  consecutive_lr_updates = 0
//   state.training_loss = cur
//   stop training when consecutive_lr_updates >= max_consecutive_lr_updates.
// The state lives in the checkpoint as plain values (ASVtorch keeps it in fake Parameters).
#pragma once

#include <limits>

namespace asv::settings {
struct NetworkSettings;
}

namespace asv::train {

struct LrScheduleOptions {
  double min_loss_change_ratio = 0.01;
  double min_room_for_improvement = 0.1;
  double target_loss = 0.1;
  int max_consecutive_lr_updates = 2;

  static LrScheduleOptions FromSettings(const settings::NetworkSettings& network);
};

struct LrScheduleState {
  /// Mean training loss of the previous epoch (ASVtorch's initial value torch.finfo().max).
  double training_loss = static_cast<double>(std::numeric_limits<float>::max());
  int consecutive_lr_updates = 0;
};

struct LrDecision {
  double previous_loss = 0;
  double loss = 0;
  double room = 0;
  double change_ratio = 0;
  bool halve = false;  ///< halve every group's learning rate now
  bool stop = false;   ///< consecutive halvings reached max_consecutive_lr_updates
};

/// Applies the rule for an epoch with mean loss `epoch_loss` and updates `state`.
LrDecision UpdateLrSchedule(LrScheduleState& state, double epoch_loss, const LrScheduleOptions& options);

}  // namespace asv::train
