// The dither seed of an utterance, shared by every place that computes features of a whole
// dataset (prep::ExtractDatasetFeatures, augment::AugmentDataset) and `asvrun compute-mfcc-feats`,
// so that they all dither an utterance with the same noise.
#pragma once

#include <cstdint>
#include <string_view>

namespace asv::features {

/// Dither seed of an utterance: the 64-bit FNV-1a hash of its id (Fowler, Noll and Vo; offset
/// basis 14695981039346656037, prime 1099511628211). Stable across platforms and runs.
std::uint64_t DitherSeed(std::string_view utterance_id);

}  // namespace asv::features
