#include "asvcpp/train/train_step.h"

#include <utility>

#include <torch/nn/functional/loss.h>

#include "asvcpp/train/host_to_device.h"

namespace asv::train {

TrainStep::TrainStep(std::shared_ptr<nnet::SpeakerNet> net, Optimizer& optimizer,
                     std::shared_ptr<GradientReducer> reducer, const std::string& device, Precision precision,
                     std::shared_ptr<nnet::CrossRankSum> batch_norm_sync)
    : net_(std::move(net)),
      layout_(net_->info().layout),
      optimizer_(optimizer),
      reducer_(std::move(reducer)),
      device_name_(device),
      device_(device),
      precision_(precision),
      parameters_(optimizer.parameters()),
      batch_norm_sync_(std::move(batch_norm_sync)) {}

bool TrainStep::Run(const torch::Tensor& features, const torch::Tensor& labels, int interval, bool step) {
  const auto device_labels = HostToDevice(labels, device_);
  torch::Tensor logits, loss;
  {
    // Forward and loss under autocast; backward outside it, as in PyTorch's AMP recipe.
    const AutocastGuard autocast(precision_, device_name_);
    const nnet::SyncBatchNormScope sync_batch_norm(batch_norm_sync_);
    logits = net_->Logits(nnet::ToLayout(HostToDevice(features, device_), layout_), device_labels);
    loss = torch::nn::functional::cross_entropy(logits, device_labels);
  }
  reducer_->BeginBackward(step);
  if (interval > 1) {
    (loss / interval).backward();
  } else {
    loss.backward();
  }
  if (step) {
    reducer_->ReduceGradients(parameters_);
    optimizer_.Step();
    optimizer_.ZeroGrad();
  }
  return readings_.Add(loss, logits.argmax(1).eq(device_labels).sum());
}

}  // namespace asv::train
