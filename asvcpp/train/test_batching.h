// Test-time batching of variable-length utterances (ASVtorch TestDataset in
// asvtorch/src/networks/network_testing.py), used for validation (cut <= network.max_val_cut_portion)
// and embedding extraction (cut <= max_test_cut_portion).
//
// Items are taken in ascending length order (stable). Greedily from the shortest remaining item:
//   fixed   = min(its length, max_batch_frames)
//   max_len = fixed / (1 − cut)
//   add items while frames_filled + fixed <= max_batch_frames, stopping before an item longer
//   than max_len;
//   every item of the batch is truncated to its FIRST `fixed` frames.
// So at most a fraction `cut` of an item is dropped, except items longer than the frame budget,
// which are truncated to it (TestBatch::truncated counts them; callers log them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace asv::train {

struct TestBatch {
  std::int64_t frames = 0;             ///< fixed length: every item is cut to its first `frames` frames
  std::vector<std::size_t> items;      ///< positions in the caller's length vector
  std::vector<std::size_t> truncated;  ///< items of this batch longer than max_batch_frames
};

/// Batches `lengths` (frames per item, all >= 1). `max_cut_portion` in [0, 1); values >= 1 mean
/// no length limit within a batch. Throws DataError for a length < 1 (callers handle empty
/// items before batching) or max_batch_frames < 1.
std::vector<TestBatch> MakeTestBatches(const std::vector<std::int64_t>& lengths, std::int64_t max_batch_frames,
                                       double max_cut_portion);

}  // namespace asv::train
