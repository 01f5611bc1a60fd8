// Utterance-level pooling layers of WeSpeaker's networks (WeSpeaker, wespeaker/models/
// pooling_layers.py, classes TSTP and ASTP; attentive statistics pooling after Okabe et al. 2018,
// "Attentive statistics pooling for deep speaker embedding", with the global context of
// Desplanques et al. 2020, "ECAPA-TDNN: Emphasized Channel Attention, Propagation and Aggregation
// in TDNN Based Speaker Verification").
//
// Input layout: frames are always the LAST axis. A TDNN gives [batch, channels, frames]; a ResNet
// gives [batch, channels, freq, frames], whose channel and frequency axes are flattened to
// channels·freq "channels" (channel-major) before pooling, as WeSpeaker does. The output is
// [batch, 2·channels]: the means of all channels, then their standard deviations.
//
// Parameter names are WeSpeaker's (`linear1.weight` ...), so the modules' state-dict keys read the
// same as upstream's under the same parent (`pool.linear1.weight` in ECAPA-TDNN).
#pragma once

#include <cstdint>

#include <torch/nn.h>

namespace asv::nnet {

/// Temporal statistics pooling (WeSpeaker TSTP), the x-vector statistics pooling with WeSpeaker's
/// definition of the standard deviation (unbiased variance, divisor frames − 1):
///   μ_c = mean_t x_{c,t},  σ_c = sqrt(Σ_t (x_{c,t} − μ_c)² / (T − 1) + 1e-7),  output [μ, σ].
/// forward: [batch, C, frames] or [batch, C, F, frames] -> [batch, 2·C] or [batch, 2·C·F].
/// No parameters. Throws DataError for another rank or fewer than 2 frames (the unbiased
/// variance of one frame is undefined; WeSpeaker returns NaN there).
class TemporalStatsPoolingImpl : public torch::nn::Module {
 public:
  torch::Tensor forward(const torch::Tensor& x);
};
TORCH_MODULE(TemporalStatsPooling);

/// Attentive statistics pooling (WeSpeaker ASTP). With D = in_dim input channels and B =
/// bottleneck_dim:
///   h   = x, or with global context [x; μ_glob; σ_glob] (3·D channels, μ_glob and σ_glob the
///         TSTP mean and standard deviation of x repeated over all frames)
///   α   = softmax over frames of linear2(tanh(linear1(h)))       one weight per channel and frame
///   μ_c = Σ_t α_{c,t} x_{c,t},  σ_c = sqrt(max(Σ_t α_{c,t} x_{c,t}² − μ_c², 1e-7))
///   output [μ, σ]
/// linear1: 1x1 Conv1d (D or 3·D) -> B, linear2: 1x1 Conv1d B -> D, both with bias.
/// forward: [batch, D, frames] or [batch, C, F, frames] with C·F = D -> [batch, 2·D]. Throws
/// DataError for another rank or channel count, zero frames, or (global context only) fewer than
/// 2 frames.
class AttentiveStatsPoolingImpl : public torch::nn::Module {
 public:
  /// `global_context`: WeSpeaker's global_context_att (the "GLOB" ECAPA-TDNN variants).
  AttentiveStatsPoolingImpl(std::int64_t in_dim, std::int64_t bottleneck_dim = 128, bool global_context = false);
  torch::Tensor forward(const torch::Tensor& x);

  std::int64_t in_dim() const { return in_dim_; }
  bool global_context() const { return global_context_; }

  torch::nn::Conv1d linear1{nullptr};
  torch::nn::Conv1d linear2{nullptr};

 private:
  std::int64_t in_dim_;
  bool global_context_;
};
TORCH_MODULE(AttentiveStatsPooling);

}  // namespace asv::nnet
