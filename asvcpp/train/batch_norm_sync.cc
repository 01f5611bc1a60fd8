#include "asvcpp/train/batch_norm_sync.h"

#include <stdexcept>
#include <utility>

#include "asvcpp/nnet/sync_batch_norm.h"
#include "asvcpp/train/gradient_reducer.h"

namespace asv::train {
namespace {

class ReducerCrossRankSum final : public nnet::CrossRankSum {
 public:
  explicit ReducerCrossRankSum(std::shared_ptr<GradientReducer> reducer) : reducer_(std::move(reducer)) {}
  int rank() const override { return reducer_->rank(); }
  int world_size() const override { return reducer_->world_size(); }
  void AllReduceSum(torch::Tensor& tensor) override { reducer_->AllReduceTensorSum(tensor); }

 private:
  std::shared_ptr<GradientReducer> reducer_;
};

}  // namespace

std::shared_ptr<nnet::CrossRankSum> MakeBatchNormSync(std::shared_ptr<GradientReducer> reducer) {
  if (!reducer) throw std::invalid_argument("MakeBatchNormSync: no gradient reducer");
  return std::make_shared<ReducerCrossRankSum>(std::move(reducer));
}

}  // namespace asv::train
