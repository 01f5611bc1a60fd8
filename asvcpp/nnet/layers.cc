#include "asvcpp/nnet/layers.h"

#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <torch/autograd.h>

#include "asvcpp/base/error.h"
#include "asvcpp/nnet/sync_batch_norm.h"

namespace asv::nnet {

std::string ShapeString(const torch::Tensor& x) {
  std::string s = "[";
  for (std::int64_t i = 0; i < x.dim(); ++i) s += (i ? ", " : "") + std::to_string(x.size(i));
  return s + "]";
}

torch::Tensor Activate(const torch::Tensor& x, const LayerOptions& options) {
  switch (options.activation) {
    case Activation::kRelu:
      return torch::relu(x);
    case Activation::kLeakyRelu:
      return torch::leaky_relu(x, options.lrelu_slope);
    case Activation::kSelu:
      return torch::selu(x);
  }
  return x;
}

torch::nn::BatchNorm1d MakeBatchNorm(std::int64_t channels, const LayerOptions& options) {
  return torch::nn::BatchNorm1d(
      torch::nn::BatchNorm1dOptions(channels).eps(1e-5).momentum(options.bn_momentum).affine(options.bn_affine));
}

torch::nn::Conv1d MakeFrameConv(std::int64_t in_channels, std::int64_t out_channels, std::int64_t reach,
                                const LayerOptions& options) {
  auto conv_options = torch::nn::Conv1dOptions(in_channels, out_channels, 2 * reach + 1)
                          .stride(1)
                          .dilation(1)
                          .padding(reach)
                          .bias(true);
  if (options.padding_mode == PaddingMode::kCircular) {
    conv_options.padding_mode(torch::kCircular);
  } else {
    conv_options.padding_mode(torch::kZeros);
  }
  return torch::nn::Conv1d(conv_options);
}

namespace {

// True for a [batch, channels, frames] tensor stored frames-major: the [batch, frames, channels]
// contiguous tensor transposed.
bool IsFramesMajor(const torch::Tensor& x) {
  return x.dim() == 3 && x.transpose(1, 2).is_contiguous();
}

// [batch, channels, frames] -> [batch, channels, 1, frames] in channels-last memory (a view when x
// is frames-major, else one copy).
torch::Tensor FramesMajor4d(const torch::Tensor& x) {
  return x.unsqueeze(2).contiguous(torch::MemoryFormat::ChannelsLast);
}

// y[b, o, t] = bias[o] + sum_{c, k} weight[o, c, k] x[b, c, t + k - reach] (zeros outside the
// clip): the cross-correlation of Conv1d, as a 2-D convolution of frames-major x4 [B, C, 1, T].
// Returns [B, O, T], frames-major.
torch::Tensor CrossCorrelate(const torch::Tensor& x4, const torch::Tensor& weight, const torch::Tensor& bias,
                             std::int64_t reach) {
  const std::vector<std::int64_t> stride{1, 1}, padding{0, reach};
  return torch::conv2d(x4, weight.unsqueeze(2), bias, stride, padding).squeeze(2);
}

// The frame convolution with its own backward pass: the input gradient is the cross-correlation
// of the output gradient with the kernel transposed (in <-> out) and reversed in time,
//   dx[b, c, s] = sum_{o, k} weight[o, c, 2r - k] dy[b, o, s + k - r],
// i.e. a forward convolution, which oneDNN runs in the frames-major layout without reorders (its
// backward-data kernels for that layout took 1.75x as long for kernels 5 and 7 in oneDNN 2.6,
// LibTorch 1.13). The weight and bias gradients are LibTorch's (at::convolution_backward).
class FrameConvolution : public torch::autograd::Function<FrameConvolution> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x4,
                               const torch::Tensor& weight, const torch::Tensor& bias, std::int64_t reach) {
    ctx->save_for_backward({x4, weight});
    ctx->saved_data["reach"] = reach;
    return CrossCorrelate(x4, weight, bias, reach);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const std::int64_t reach = ctx->saved_data["reach"].toInt();
    const torch::Tensor dy4 = FramesMajor4d(grads[0]);
    // Under autocast (bf16) the forward pass ran in dy's dtype: so does the backward pass, and the
    // gradients come back in their inputs' dtypes.
    const torch::Tensor x4 = saved[0].to(dy4.scalar_type());
    const torch::Tensor weight = saved[1].to(dy4.scalar_type());
    torch::Tensor dx, dweight, dbias;
    if (ctx->needs_input_grad(0)) {
      dx = CrossCorrelate(dy4, weight.transpose(0, 1).flip({2}), torch::Tensor(), reach)
               .unsqueeze(2)
               .to(saved[0].scalar_type());
    }
    if (ctx->needs_input_grad(1)) {
      const std::vector<std::int64_t> stride{1, 1}, padding{0, reach}, dilation{1, 1}, output_padding{0, 0};
      dweight = std::get<1>(at::convolution_backward(dy4, x4, weight.unsqueeze(2), c10::nullopt, stride, padding,
                                                     dilation, /*transposed=*/false, output_padding, /*groups=*/1,
                                                     {false, true, false}))
                    .squeeze(2)
                    .to(saved[1].scalar_type());
    }
    if (ctx->needs_input_grad(2)) dbias = dy4.sum({0, 2, 3}).to(saved[1].scalar_type());
    return {dx, dweight, dbias, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor ConvolveFrames(torch::nn::Conv1d& conv, std::int64_t reach, const torch::Tensor& x) {
  const auto& o = conv->options;
  const bool zeros = torch::enumtype::get_enum_name(o.padding_mode()) == std::string("kZeros");
  const bool frame_conv = (*o.stride())[0] == 1 && (*o.dilation())[0] == 1 && o.groups() == 1 &&
                          conv->weight.size(2) == 2 * reach + 1;
  if (!x.is_cpu() || x.scalar_type() != torch::kFloat32 || x.dim() != 3 || !zeros || !frame_conv) return conv(x);
  const torch::Tensor x4 = FramesMajor4d(x);
  if (!torch::GradMode::is_enabled()) return CrossCorrelate(x4, conv->weight, conv->bias, reach);
  return FrameConvolution::apply(x4, conv->weight, conv->bias, reach);
}

torch::Tensor NormalizeFrames(torch::nn::BatchNorm1d& bn, const torch::Tensor& x) {
  if (!IsFramesMajor(x) || x.size(1) == 1) return ApplyBatchNorm(*bn, x);
  const torch::Tensor frames = x.transpose(1, 2);  // [B, T, C] contiguous
  return ApplyBatchNorm(*bn, frames.reshape({-1, x.size(1)})).view(frames.sizes()).transpose(1, 2);
}

torch::Tensor MeanStdPoolingLayerImpl::forward(const torch::Tensor& x) {
  const auto mean = x.mean(2);
  const auto std = torch::sqrt(torch::clamp_min(x.pow(2).mean(2) - mean.pow(2), 1e-6));
  return torch::cat({mean, std}, 1);
}

LinearBatchNormLayerImpl::LinearBatchNormLayerImpl(std::int64_t in_features, std::int64_t out_features,
                                                   const LayerOptions& options) {
  linear = register_module("linear", torch::nn::Linear(in_features, out_features));
  batchnorm = register_module("batchnorm", MakeBatchNorm(out_features, options));
}

torch::Tensor LinearBatchNormLayerImpl::forward(const torch::Tensor& x) {
  return ApplyBatchNorm(*batchnorm, linear(x));
}

LinearReluBatchNormLayerImpl::LinearReluBatchNormLayerImpl(std::int64_t in_features, std::int64_t out_features,
                                                           const LayerOptions& options)
    : options_(options) {
  linear = register_module("linear", torch::nn::Linear(in_features, out_features));
  batchnorm = register_module("batchnorm", MakeBatchNorm(out_features, options));
}

torch::Tensor LinearReluBatchNormLayerImpl::forward(const torch::Tensor& x) {
  return ApplyBatchNorm(*batchnorm, Activate(linear(x), options_));
}

SeLayerImpl::SeLayerImpl(std::int64_t channels, std::int64_t ser, const LayerOptions& options) {
  const std::int64_t hidden = ser > 0 ? channels / ser : 0;
  if (hidden < 1) {
    throw ConfigError(fmt::format(
        "network.ser = {} leaves no hidden units in a squeeze-excitation layer of {} channels (need ser <= {})", ser,
        channels, channels));
  }
  pooling_layer = register_module("pooling_layer", MeanStdPoolingLayer());
  linear_relu_bn = register_module("linear_relu_bn", LinearReluBatchNormLayer(2 * channels, hidden, options));
  fc = register_module("fc", torch::nn::Linear(torch::nn::LinearOptions(hidden, channels).bias(true)));
}

torch::Tensor SeLayerImpl::forward(const torch::Tensor& x) {
  auto w = torch::sigmoid(fc(linear_relu_bn(pooling_layer(x))));
  return x * w.unsqueeze(2);
}

CnnLayerImpl::CnnLayerImpl(std::int64_t in_channels, std::int64_t out_channels, std::int64_t reach, std::int64_t ser,
                           const LayerOptions& options)
    : reach_(reach), options_(options) {
  batchnorm = register_module("batchnorm", MakeBatchNorm(out_channels, options));
  cnn = register_module("cnn", MakeFrameConv(in_channels, out_channels, reach, options));
  if (ser > 0) se = register_module("se", SeLayer(out_channels, ser, options));
}

torch::Tensor CnnLayerImpl::forward(const torch::Tensor& x) {
  auto y = ConvolveFrames(cnn, reach_, x);
  if (se) y = se(y);
  return NormalizeFrames(batchnorm, Activate(y, options_));
}

ResCnnLayerImpl::ResCnnLayerImpl(std::int64_t channels, std::int64_t reach, std::int64_t ser,
                                 const LayerOptions& options)
    : reach_(reach), options_(options) {
  fc = register_module("fc", torch::nn::Conv1d(torch::nn::Conv1dOptions(channels, channels, 1).bias(true)));
  cnn = register_module("cnn", MakeFrameConv(channels, channels, reach, options));
  fc_norm = register_module("fc_norm", MakeBatchNorm(channels, options));
  cnn_norm = register_module("cnn_norm", MakeBatchNorm(channels, options));
  if (ser > 0) se = register_module("se", SeLayer(channels, ser, options));
}

torch::Tensor ResCnnLayerImpl::forward(const torch::Tensor& x) {
  auto y = NormalizeFrames(fc_norm, Activate(ConvolveFrames(fc, 0, x), options_));
  y = ConvolveFrames(cnn, reach_, y);
  if (se) y = se(y);
  return NormalizeFrames(cnn_norm, Activate(y + x, options_));
}

}  // namespace asv::nnet
