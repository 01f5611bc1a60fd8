#include "asvcpp/features/deltas.h"

#include <algorithm>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/features/kaldi_options.h"

namespace asv::features {

void DeltaOptions::Register(KaldiOptions* opts) {
  opts->Register("delta-order", &order, "Order of delta computation");
  opts->Register("delta-window", &window,
                 "Parameter controlling window for delta computation (actual window size for each delta order "
                 "is 1 + 2*delta-window-size)");
}

void DeltaOptions::Validate() const {
  if (order < 0 || order >= 1000) throw DataError(fmt::format("--delta-order must be in [0, 1000), got {}", order));
  if (window <= 0 || window >= 1000)
    throw DataError(fmt::format("--delta-window must be in [1, 1000), got {}", window));
}

std::vector<std::vector<float>> DeltaScales(const DeltaOptions& opts) {
  opts.Validate();
  std::vector<std::vector<float>> scales(static_cast<std::size_t>(opts.order) + 1);
  scales[0] = {1.0f};
  const std::int32_t w = opts.window;
  for (std::size_t i = 1; i < scales.size(); ++i) {
    const std::vector<float>& prev = scales[i - 1];
    std::vector<float>& cur = scales[i];
    const auto prev_offset = static_cast<std::int32_t>((prev.size() - 1) / 2);
    const std::int32_t cur_offset = prev_offset + w;
    cur.assign(prev.size() + 2 * static_cast<std::size_t>(w), 0.0f);
    float normalizer = 0.0f;
    for (std::int32_t j = -w; j <= w; ++j) {
      normalizer += static_cast<float>(j * j);
      for (std::int32_t k = -prev_offset; k <= prev_offset; ++k) {
        cur[static_cast<std::size_t>(j + k + cur_offset)] +=
            static_cast<float>(j) * prev[static_cast<std::size_t>(k + prev_offset)];
      }
    }
    const auto inv = static_cast<float>(1.0 / normalizer);
    for (float& v : cur) v *= inv;
  }
  return scales;
}

Matrix ComputeDeltas(const DeltaOptions& opts, const Matrix& feats) {
  const auto scales = DeltaScales(opts);
  const std::int64_t num_frames = feats.rows();
  const std::int64_t dim = feats.cols();
  Matrix out(num_frames, dim * (opts.order + 1));
  for (std::int64_t t = 0; t < num_frames; ++t) {
    float* row = out.row(t);
    for (std::size_t i = 0; i < scales.size(); ++i) {
      const std::vector<float>& s = scales[i];
      const auto max_offset = static_cast<std::int64_t>((s.size() - 1) / 2);
      float* o = row + static_cast<std::int64_t>(i) * dim;
      for (std::int64_t j = -max_offset; j <= max_offset; ++j) {
        const float scale = s[static_cast<std::size_t>(j + max_offset)];
        if (scale == 0.0f) continue;
        const std::int64_t src = std::clamp<std::int64_t>(t + j, 0, num_frames - 1);
        const float* x = feats.row(src);
        for (std::int64_t d = 0; d < dim; ++d) o[d] += scale * x[d];
      }
    }
  }
  return out;
}

}  // namespace asv::features
