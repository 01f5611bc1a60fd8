#include "asvcpp/features/cmn.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/features/kaldi_options.h"

namespace asv::features {

SlidingCmnOptions SlidingCmnOptions::AsvTorch(std::int32_t window, bool norm_vars) {
  SlidingCmnOptions o;
  o.cmn_window = window;
  o.min_window = std::min(o.min_window, window);  // ignored with center, but checked by Validate
  o.center = true;
  o.normalize_variance = norm_vars;
  return o;
}

void SlidingCmnOptions::Register(KaldiOptions* opts) {
  opts->Register("cmn-window", &cmn_window, "Window in frames for running average CMN computation");
  opts->Register("min-cmn-window", &min_window,
                 "Minimum CMN window used at start of decoding (adds latency only at start). Only applicable "
                 "if center == false, ignored if center==true");
  opts->Register("max-warnings", &max_warnings,
                 "Maximum warnings to report per utterance. 0 to disable, -1 to show all.");
  opts->Register("norm-vars", &normalize_variance, "If true, normalize variance to one.");
  opts->Register("center", &center,
                 "If true, use a window centered on the current frame (to the extent possible, modulo end "
                 "effects). If false, window is to the left.");
}

void SlidingCmnOptions::Validate() const {
  if (cmn_window <= 0) throw DataError(fmt::format("--cmn-window must be positive, got {}", cmn_window));
  if (center && (min_window <= 0 || min_window > cmn_window)) {
    throw DataError(fmt::format("--min-cmn-window must be in [1, --cmn-window={}], got {}", cmn_window, min_window));
  }
}

Matrix ApplySlidingCmn(const SlidingCmnOptions& opts, const Matrix& feats) {
  opts.Validate();
  const std::int64_t num_frames = feats.rows();
  const std::int64_t dim = feats.cols();
  Matrix out(num_frames, dim);
  if (num_frames == 0 || dim == 0) return out;
  std::vector<double> sum(static_cast<std::size_t>(dim), 0.0), sumsq(static_cast<std::size_t>(dim), 0.0);
  std::vector<double> variance(static_cast<std::size_t>(dim));
  std::int64_t last_start = -1, last_end = -1;
  int warnings = 0;
  auto add = [&](std::int64_t t, double sign) {
    const float* x = feats.row(t);
    for (std::int64_t d = 0; d < dim; ++d) {
      const double v = x[d];
      sum[static_cast<std::size_t>(d)] += sign * v;
      if (opts.normalize_variance) sumsq[static_cast<std::size_t>(d)] += sign * v * v;
    }
  };
  for (std::int64_t t = 0; t < num_frames; ++t) {
    std::int64_t start, end;
    if (opts.center) {
      start = t - opts.cmn_window / 2;
      end = start + opts.cmn_window;
    } else {
      start = t - opts.cmn_window;
      end = t + 1;
    }
    if (start < 0) {
      end -= start;
      start = 0;
    }
    if (!opts.center && end > t) end = std::max<std::int64_t>(t + 1, opts.min_window);
    if (end > num_frames) {
      start -= end - num_frames;
      end = num_frames;
      if (start < 0) start = 0;
    }
    if (last_start == -1) {
      for (std::int64_t r = start; r < end; ++r) add(r, 1.0);
    } else {
      // Windows only move right; Kaldi moves them one frame at a time (asserted there).
      for (std::int64_t r = last_start; r < start; ++r) add(r, -1.0);
      for (std::int64_t r = last_end; r < end; ++r) add(r, 1.0);
    }
    last_start = start;
    last_end = end;
    const std::int64_t n = end - start;
    const float* x = feats.row(t);
    float* y = out.row(t);
    for (std::int64_t d = 0; d < dim; ++d) {
      y[d] = static_cast<float>(x[d] - sum[static_cast<std::size_t>(d)] / static_cast<double>(n));
    }
    if (opts.normalize_variance) {
      if (n == 1) {
        std::fill(y, y + dim, 0.0f);
        continue;
      }
      int num_floored = 0;
      for (std::int64_t d = 0; d < dim; ++d) {
        const auto i = static_cast<std::size_t>(d);
        double v = sumsq[i] / static_cast<double>(n) - sum[i] * sum[i] / static_cast<double>(n * n);
        if (v < 1.0e-10) {
          v = 1.0e-10;
          ++num_floored;
        }
        // Kaldi keeps the mean-subtracted frame in double before scaling.
        const double centred = static_cast<double>(x[d]) - sum[i] / static_cast<double>(n);
        y[d] = static_cast<float>(centred * std::pow(v, -0.5));
      }
      if (num_floored > 0 && num_frames > 1) {
        if (opts.max_warnings == warnings) {
          ASV_LOG(Warning, "sliding CMN: suppressing the remaining variance flooring warnings");
        } else if (opts.max_warnings < 0 || opts.max_warnings > warnings) {
          ASV_LOG(Warning,
                  "sliding CMN: flooring when normalizing variance, floored {} elements; window was {} "
                  "frames",
                  num_floored, n);
        }
        ++warnings;
      }
    }
  }
  return out;
}

}  // namespace asv::features
