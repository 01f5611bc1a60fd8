// network.sync_batch_norm: the nnet::CrossRankSum that nnet::ApplyBatchNorm synchronises
// BatchNorm statistics with (asvcpp/nnet/sync_batch_norm.h), made of the trainer's
// GradientReducer, whose AllReduceTensorSum runs on the process group's backend (Gloo or NCCL).
// The trainer (and the training benchmark, through TrainStep) opens a nnet::SyncBatchNormScope
// with it around each training forward pass when the setting is on and the world size is > 1.
// No LibTorch in this header.
#pragma once

#include <memory>

namespace asv::nnet {
class CrossRankSum;
}

namespace asv::train {

class GradientReducer;

/// A CrossRankSum whose rank, world size and AllReduceSum are `reducer`'s (rank(), world_size(),
/// AllReduceTensorSum); it keeps `reducer` alive. Throws std::invalid_argument for a null reducer.
std::shared_ptr<nnet::CrossRankSum> MakeBatchNormSync(std::shared_ptr<GradientReducer> reducer);

}  // namespace asv::train
