#include "asvcpp/train/train_step.h"

#include <torch/nn/functional/loss.h>

#include "asvcpp/train/host_to_device.h"

namespace asv::train {

TrainStep::TrainStep(nnet::XvectorNet net, Sgd& optimizer, std::shared_ptr<GradientReducer> reducer,
                     const std::string& device, Precision precision)
    : net_(std::move(net)),
      optimizer_(optimizer),
      reducer_(std::move(reducer)),
      device_name_(device),
      device_(device),
      precision_(precision),
      parameters_(optimizer.parameters()) {}

bool TrainStep::Run(const torch::Tensor& features, const torch::Tensor& labels, int interval, bool step) {
  const auto device_labels = HostToDevice(labels, device_);
  torch::Tensor logits, loss;
  {
    // Forward and loss under autocast; backward outside it, as in PyTorch's AMP recipe.
    const AutocastGuard autocast(precision_, device_name_);
    logits = net_->forward(HostToDevice(features, device_));
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
