// Internal to asvcpp/distributed: the process group's gradient reducer (train::GradientReducer over
// Gloo/NCCL), made by ProcessGroup::reducer(). Not a public header.
#pragma once

#include <memory>

namespace asv::train {
class GradientReducer;
}

namespace asv::distributed {

class Coordinator;

/// A reducer whose collectives run on `coordinator`'s backend and whose BroadcastFlag and Barrier
/// go through its store. Gradients are all-reduced in buckets (bucket_plan.h), launched from
/// autograd hooks as backward produces them once SyncModel has seen the model; parameters not
/// hooked are bucketed after backward. Using it after the group ended throws std::logic_error.
std::shared_ptr<train::GradientReducer> MakeBucketedReducer(std::shared_ptr<Coordinator> coordinator);

}  // namespace asv::distributed
