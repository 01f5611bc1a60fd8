#include "asvcpp/models/asvtorch_model.h"

#include <stdexcept>

#include <torch/torch.h>

#include "asvcpp/models/wespeaker_model.h"

namespace asv::models {

StateDict AsvtorchStateDict(const torch::nn::Module& net, const AsvtorchNetState& state) {
  if (state.feat_dim < 1 || state.n_speakers < 1) {
    throw std::invalid_argument("AsvtorchStateDict: feat_dim and n_speakers must be positive");
  }
  const auto long_one = [](std::int64_t value) { return torch::tensor({value}, torch::kInt64); };
  StateDict out;
  // BaseNet's Parameters are the root module's own: first in ASVtorch's state_dict().
  out.emplace_back("feat_dim_param", long_one(state.feat_dim));
  out.emplace_back("n_speakers_param", long_one(state.n_speakers));
  out.emplace_back("training_loss", torch::tensor({state.training_loss}, torch::kFloat32));
  out.emplace_back("consecutive_lr_updates", long_one(state.consecutive_lr_updates));
  // PyTorch's state_dict() order over the module tree, which WespeakerStateDict gives for any module.
  for (auto& entry : WespeakerStateDict(net)) out.push_back(std::move(entry));
  return out;
}

void ExportAsvtorchModel(const std::filesystem::path& path, const torch::nn::Module& net,
                         const AsvtorchNetState& state) {
  SaveStateDict(path, AsvtorchStateDict(net, state));
}

}  // namespace asv::models
