#include "asvcpp/train/exponential_lr.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace asv::train {
namespace {

bool Positive(double x) { return x > 0 && std::isfinite(x); }

}  // namespace

void ExponentialLrOptions::Validate() const {
  if (!Positive(initial_lr) || !Positive(final_lr)) {
    throw std::invalid_argument(
        fmt::format("exponential LR schedule: initial_lr {} and final_lr {} must be positive", initial_lr, final_lr));
  }
  if (!Positive(scale_ratio)) {
    throw std::invalid_argument(fmt::format("exponential LR schedule: scale_ratio {} must be positive", scale_ratio));
  }
  if (num_epochs < 1 || epoch_iter < 1 || warm_up_epochs < 0) {
    throw std::invalid_argument(
        fmt::format("exponential LR schedule: need num_epochs ({}) >= 1, epoch_iter ({}) >= 1, warm_up_epochs ({}) >= 0",
                    num_epochs, epoch_iter, warm_up_epochs));
  }
}

double ScaleRatio(int world_size, std::int64_t batch_size) {
  if (world_size < 1 || batch_size < 1) {
    throw std::invalid_argument(
        fmt::format("LR scale ratio: world_size {} and batch_size {} must be >= 1", world_size, batch_size));
  }
  return 1.0 * world_size * static_cast<double>(batch_size) / 64;
}

std::int64_t EpochIterations(std::int64_t samples_per_epoch, int world_size, std::int64_t batch_size) {
  if (world_size < 1 || batch_size < 1 || samples_per_epoch < 0) {
    throw std::invalid_argument(
        fmt::format("iterations per epoch: need samples ({}) >= 0, world_size ({}) >= 1, batch_size ({}) >= 1",
                    samples_per_epoch, world_size, batch_size));
  }
  return samples_per_epoch / world_size / batch_size;
}

std::int64_t GlobalIteration(int epoch, std::int64_t epoch_iter, std::int64_t batch) {
  if (epoch < 1 || batch < 0 || epoch_iter < 1) {
    throw std::invalid_argument(fmt::format(
        "global iteration: need epoch ({}) >= 1, batch ({}) >= 0, epoch_iter ({}) >= 1", epoch, batch, epoch_iter));
  }
  return static_cast<std::int64_t>(epoch - 1) * epoch_iter + batch;
}

double ExponentialLrAt(const ExponentialLrOptions& options, std::int64_t iteration) {
  options.Validate();
  if (iteration < 0) throw std::invalid_argument(fmt::format("exponential LR schedule: iteration {} < 0", iteration));
  // Same operations in the same order as WeSpeaker, so the values agree to the last bit.
  const double it = static_cast<double>(iteration);
  const double max_iter = static_cast<double>(options.num_epochs * options.epoch_iter);
  const std::int64_t warm_up_iter = options.warm_up_epochs * options.epoch_iter;
  double coeff = 1.0 * options.scale_ratio;
  if (iteration < warm_up_iter) {
    if (options.warm_from_zero) {
      coeff = options.scale_ratio * it / static_cast<double>(warm_up_iter);
    } else if (options.scale_ratio > 1) {
      coeff = (options.scale_ratio - 1) * it / static_cast<double>(warm_up_iter) + 1.0;
    }
  }
  return coeff * options.initial_lr * std::exp((it / max_iter) * std::log(options.final_lr / options.initial_lr));
}

}  // namespace asv::train
