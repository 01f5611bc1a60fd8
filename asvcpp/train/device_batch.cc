#include "asvcpp/train/device_batch.h"

#include "asvcpp/train/host_to_device.h"

namespace asv::train {

std::pair<torch::Tensor, torch::Tensor> CopyFeatureBatch(HostBatch& batch, const torch::Device& device) {
  const auto features =
      torch::from_blob(batch.features.data(), {batch.batch, batch.feat_dim, batch.frames}, torch::kFloat32);
  return {HostToDevice(features, device), HostToDevice(torch::tensor(batch.labels, torch::kInt64), device)};
}

}  // namespace asv::train
