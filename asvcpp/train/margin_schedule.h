// The margin schedule of WeSpeaker's recipes (wespeaker/utils/schedulers.py, class
// MarginScheduler), for the margin heads of asvcpp/nnet/margin_heads.h. Updated every iteration:
//
//   it         = (epoch − 1) · epoch_iter + batch       (epoch 1-based, batch 0-based:
//                                                        GlobalIteration in exponential_lr.h)
//   inc_start  = (increase_start_epoch − 1) · epoch_iter
//   fix_start  = (fix_start_epoch − 1) · epoch_iter
//   it <  inc_start               m = initial_margin
//   inc_start <= it < fix_start   m = initial + (final − initial) · ratio,  t = it − inc_start,
//                                 T = fix_start − inc_start,
//       "exp":    ratio = 1 − exp((t / T) · ln(1e-3 / (1 + 1e-6)))   (0 at t = 0, ≈ 0.999 at T)
//       "linear": ratio = t / T
//   it >= fix_start               m = final_margin
//
// With WeSpeaker's ResNet34/ECAPA-TDNN settings (0 -> 0.2, increase_start_epoch 20,
// fix_start_epoch 40) the margin is 0 through epoch 19, rises during epochs 20-39 and is 0.2 from
// the first iteration of epoch 40 on. The schedule is a function of the iteration alone (WeSpeaker
// keeps a counter and a "fixed already" flag that give the same values for increasing
// iterations), so resuming needs no extra state. With update_margin off the margin stays at
// initial_margin. Apply it with `head.UpdateMargin(MarginAt(options, it))` before each step.
#pragma once

#include <cstdint>
#include <string>

namespace asv::train {

enum class MarginIncrease {
  kExp,     ///< "exp": exponential approach to the final margin (WeSpeaker's default)
  kLinear,  ///< "linear"
};

/// Parses "exp" | "linear". Throws ConfigError naming the value otherwise.
MarginIncrease ParseMarginIncrease(const std::string& name);

struct MarginScheduleOptions {
  double initial_margin = 0.0;
  double final_margin = 0.2;
  int increase_start_epoch = 20;  ///< 1-based epoch whose first iteration starts the increase
  int fix_start_epoch = 40;       ///< 1-based epoch from whose first iteration on the margin is final
  std::int64_t epoch_iter = 1;    ///< iterations (optimizer steps) per epoch
  bool update_margin = true;      ///< false: the margin stays at initial_margin
  MarginIncrease increase = MarginIncrease::kExp;

  /// Throws std::invalid_argument for epoch_iter < 1, increase_start_epoch < 1,
  /// fix_start_epoch < increase_start_epoch, or a negative or non-finite margin.
  void Validate() const;
};

/// The margin at global iteration `iteration` (0-based, counted over all epochs). Throws what
/// Validate throws, and std::invalid_argument for a negative iteration.
double MarginAt(const MarginScheduleOptions& options, std::int64_t iteration);

}  // namespace asv::train
