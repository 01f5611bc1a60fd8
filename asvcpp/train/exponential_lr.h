// The per-iteration learning-rate schedule of WeSpeaker's ResNet34/ECAPA-TDNN recipes:
// wespeaker/utils/schedulers.py, class ExponentialDecrease (with BaseClass's warm-up), driven by
// wespeaker/bin/train.py and wespeaker/utils/executor.py (run_epoch). Unlike ASVtorch's rule
// (lr_schedule.h, once per epoch from the loss) it depends on the iteration number only:
//
//   it        = (epoch − 1) · epoch_iter + batch          (GlobalIteration; before each step)
//   max_iter  = num_epochs · epoch_iter
//   warm_iter = warm_up_epochs · epoch_iter
//   lr(it)    = coeff(it) · initial_lr · exp((it / max_iter) · ln(final_lr / initial_lr))
//   coeff(it) = scale_ratio                                  when it >= warm_iter, else
//             = scale_ratio · it / warm_iter                 warm_from_zero (linear from 0)
//             = (scale_ratio − 1) · it / warm_iter + 1       scale_ratio > 1 (linear from 1)
//             = scale_ratio                                  otherwise (no warm-up)
//
// So the warm-up MULTIPLIES the exponential decay (it does not interpolate towards initial_lr),
// and the decay runs from the first iteration on. scale_ratio is set by train.py, not by the
// config: world_size · batch_size / 64 (ScaleRatio), i.e. the learning rate grows with the
// total batch; WeSpeaker's recipes (batch 128 per GPU) thus peak at 0.1 · 2 · world_size.
// epoch_iter is sample_num_per_epoch // world_size // batch_size (EpochIterations). Beyond
// max_iter the formula keeps decaying (below final_lr), as upstream. Every rank computes the same
// rate, and every parameter group gets it (WeSpeaker sets param_group['lr'] for all groups).
#pragma once

#include <cstdint>

namespace asv::train {

struct ExponentialLrOptions {
  double initial_lr = 0.1;
  double final_lr = 5e-5;
  int num_epochs = 150;
  std::int64_t epoch_iter = 1;  ///< iterations (optimizer steps) per epoch per rank
  int warm_up_epochs = 6;
  double scale_ratio = 1.0;    ///< ScaleRatio(world_size, batch_size)
  /// true: the warm-up ramps the coefficient from 0 (WeSpeaker's recipes set warm_from_zero:
  /// True; the class's default is False).
  bool warm_from_zero = true;

  /// Throws std::invalid_argument for non-positive or non-finite rates or scale_ratio,
  /// num_epochs < 1, epoch_iter < 1 or warm_up_epochs < 0.
  void Validate() const;
};

/// WeSpeaker's scale_ratio: world_size · batch_size / 64 (64 is its reference batch). Throws
/// std::invalid_argument when either is < 1.
double ScaleRatio(int world_size, std::int64_t batch_size);

/// WeSpeaker's epoch_iter: samples_per_epoch // world_size // batch_size (integer division,
/// dropping the last incomplete batch). Throws std::invalid_argument when world_size or
/// batch_size is < 1 or samples_per_epoch < 0.
std::int64_t EpochIterations(std::int64_t samples_per_epoch, int world_size, std::int64_t batch_size);

/// Global iteration of batch `batch` (0-based) of epoch `epoch` (1-based):
/// (epoch − 1) · epoch_iter + batch. Throws std::invalid_argument for epoch < 1, batch < 0 or
/// epoch_iter < 1.
std::int64_t GlobalIteration(int epoch, std::int64_t epoch_iter, std::int64_t batch);

/// The learning rate for the step at global iteration `iteration` (0-based). Throws what
/// Validate throws, and std::invalid_argument for a negative iteration.
double ExponentialLrAt(const ExponentialLrOptions& options, std::int64_t iteration);

}  // namespace asv::train
