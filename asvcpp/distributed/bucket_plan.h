// Internal to asvcpp/distributed: how bucketed_reducer.cc lays tensors out for collectives. A
// BucketPlan groups gradients into flat buckets (DDP's assignment); Chunks, Flatten and Unflatten
// move parameters and buffers as few flat tensors. Not a public header (it includes LibTorch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/types.h>

namespace asv::distributed {

/// Gradients of several parameters (same dtype) reduced as one flat tensor: the gradients one
/// after the other, then one "defined on this rank" flag per parameter, so that a parameter whose
/// gradient is undefined everywhere stays undefined and one used on some ranks only gets the mean
/// (zeros counted for the others) everywhere, as one process accumulating the same microbatches.
struct Bucket {
  std::vector<std::size_t> members;   // indices into BucketPlan::params
  std::vector<std::int64_t> offsets;  // of each member's gradient in `flat`
  std::int64_t numel = 0;             // gradient elements (the flags follow)
  torch::Tensor flat;
  c10::intrusive_ptr<c10d::Work> work;
  std::size_t pending = 0;  // members not ready yet (overlapped path)
};

struct BucketPlan {
  std::vector<torch::Tensor> params;
  std::vector<Bucket> buckets;
  std::vector<std::size_t> bucket_of;  // per param
  std::unordered_map<const c10::TensorImpl*, std::size_t> index;
};

/// DDP's assignment (compute_bucket_assignment_by_size): `params` in priority order (reverse
/// registration order, the order backward produces gradients), one open bucket per
/// (dtype, device) closed when it reaches first_cap (its first bucket) or cap bytes; buckets in
/// the order of their first parameter. Every rank computes the same plan from the same list.
/// Each bucket's `flat` is allocated (zeros) on `device`.
BucketPlan MakePlan(const std::vector<torch::Tensor>& params, std::size_t first_cap, std::size_t cap,
                    const torch::Device& device);

/// True when the parameters of `params` that require a gradient are exactly plan.params.
bool SameSet(const BucketPlan& plan, const std::vector<torch::Tensor>& params);

/// Tensors grouped by dtype and device (order kept) in chunks of at most `cap` bytes (a larger
/// tensor forms its own chunk); undefined and empty tensors are left out.
std::vector<std::vector<torch::Tensor>> Chunks(const std::vector<torch::Tensor>& tensors, std::size_t cap);

/// The tensors of one chunk as one flat tensor on `device` (bools as uint8: Gloo has no bool
/// reductions or broadcasts in every version).
torch::Tensor Flatten(const std::vector<torch::Tensor>& tensors, const torch::Device& device);

/// Copies `flat` (as made by Flatten) back into `tensors`.
void Unflatten(const torch::Tensor& flat, const std::vector<torch::Tensor>& tensors);

}  // namespace asv::distributed
