// Per-step schedules for the Trainer (trainer.h StepSchedule). No LibTorch here.
#pragma once

#include "asvcpp/train/exponential_lr.h"
#include "asvcpp/train/margin_schedule.h"
#include "asvcpp/train/trainer.h"

namespace asv::train {

/// WeSpeaker's recipes (wespeaker/utils/executor.py run_epoch): before every step the learning
/// rate of ExponentialLrAt and the margin of MarginAt at the global iteration
/// GlobalIteration(epoch, steps_per_epoch, step), with epoch_iter = the trainer's steps per epoch
/// (the `epoch_iter` fields of `lr` and `margin` are ignored). `margin` null: no margin is set
/// (a head without margin). Throws std::invalid_argument from the options' Validate (also when
/// the schedule is called).
StepSchedule WeSpeakerStepSchedule(ExponentialLrOptions lr, const MarginScheduleOptions* margin);

}  // namespace asv::train
