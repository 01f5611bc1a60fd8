#include "asvcpp/train/host_to_device.h"

namespace asv::train {

torch::Tensor HostToDevice(const torch::Tensor& host, const torch::Device& device) {
  if (device.is_cpu() || host.device() == device) return host;
  return host.pin_memory().to(device, host.scalar_type(), /*non_blocking=*/true);
}

}  // namespace asv::train
