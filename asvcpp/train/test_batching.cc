#include "asvcpp/train/test_batching.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::train {

std::vector<TestBatch> MakeTestBatches(const std::vector<std::int64_t>& lengths, std::int64_t max_batch_frames,
                                       double max_cut_portion) {
  if (max_batch_frames < 1) throw DataError("network.max_batch_size_in_frames must be >= 1");
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] < 1) {
      throw DataError(fmt::format("test batching: item {} has {} frames; items without frames must be removed first", i,
                                  lengths[i]));
    }
  }
  std::vector<std::size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return lengths[a] < lengths[b]; });

  std::vector<TestBatch> batches;
  std::size_t next = 0;
  while (next < order.size()) {
    TestBatch batch;
    batch.frames = std::min(lengths[order[next]], max_batch_frames);
    const double max_len = max_cut_portion >= 1.0 ? std::numeric_limits<double>::infinity()
                                                  : static_cast<double>(batch.frames) / (1.0 - max_cut_portion);
    std::int64_t filled = 0;
    while (filled + batch.frames <= max_batch_frames) {
      filled += batch.frames;
      const std::size_t item = order[next++];
      batch.items.push_back(item);
      if (lengths[item] > max_batch_frames) batch.truncated.push_back(item);
      if (next == order.size() || static_cast<double>(lengths[order[next]]) > max_len) break;
    }
    batches.push_back(std::move(batch));
  }
  return batches;
}

}  // namespace asv::train
