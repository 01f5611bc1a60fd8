#include "asvcpp/nnet/sync_batch_norm.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <torch/autograd.h>

#include "asvcpp/base/error.h"

namespace asv::nnet {
namespace {

thread_local std::shared_ptr<CrossRankSum> current_batch_norm_sync;

// The autograd node's hold on the CrossRankSum for the backward pass (saved_data holds IValues).
struct CrossRankSumCapsule : torch::CustomClassHolder {
  explicit CrossRankSumCapsule(std::shared_ptr<CrossRankSum> s) : sync(std::move(s)) {}
  std::shared_ptr<CrossRankSum> sync;
};

// Every dimension of a [batch, channels, *] tensor but the channels.
std::vector<std::int64_t> SyncBnReducedDims(std::int64_t dims) {
  std::vector<std::int64_t> reduced{0};
  for (std::int64_t d = 2; d < dims; ++d) reduced.push_back(d);
  return reduced;
}

// A per-channel vector [C] viewed as [1, C, 1, ...] to broadcast over a `dims`-dimensional input.
torch::Tensor SyncBnPerChannel(const torch::Tensor& v, std::int64_t dims) {
  std::vector<std::int64_t> shape(static_cast<std::size_t>(dims), 1);
  shape[1] = v.size(0);
  return v.view(shape);
}

// Statistics and arithmetic in float64 for float64 inputs, else in float32 (bfloat16 and float16
// inputs included, as PyTorch's batch norm kernels accumulate them).
torch::ScalarType SyncBnComputeType(const torch::Tensor& x) {
  return x.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
}

std::string SyncBnShape(const torch::Tensor& x) {
  std::string s = "[";
  for (std::int64_t i = 0; i < x.dim(); ++i) s += (i ? ", " : "") + std::to_string(x.size(i));
  return s + "]";
}

// torch.nn.SyncBatchNorm's autograd function (PyTorch torch/nn/modules/_functions.py,
// SyncBatchNorm.forward and .backward), the formulas at the top of sync_batch_norm.h.
class SyncBatchNormFunction : public torch::autograd::Function<SyncBatchNormFunction> {
 public:
  // Optional tensors: LibTorch 1.13's Function::apply rejects undefined Tensor arguments.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const c10::optional<torch::Tensor>& weight_arg,
                               const c10::optional<torch::Tensor>& bias_arg,
                               const c10::optional<torch::Tensor>& running_mean_arg,
                               const c10::optional<torch::Tensor>& running_var_arg, double momentum, double eps,
                               std::shared_ptr<CrossRankSum> sync) {
    const torch::Tensor weight = weight_arg.value_or(torch::Tensor());
    const torch::Tensor bias = bias_arg.value_or(torch::Tensor());
    torch::Tensor running_mean = running_mean_arg.value_or(torch::Tensor());
    torch::Tensor running_var = running_var_arg.value_or(torch::Tensor());
    const torch::ScalarType dtype = SyncBnComputeType(x);
    const std::int64_t dims = x.dim();
    const std::int64_t channels = x.size(1);
    const std::int64_t count = channels > 0 ? x.numel() / channels : 0;
    const torch::Tensor xc = x.to(dtype);

    // All-gather as an all-reduce: row `rank` of a zero [world, 2C+1] matrix holds this rank's
    // mean, biased variance and count; the sum over ranks holds every rank's. float64, so that
    // the combination below loses nothing.
    const auto f64 = torch::TensorOptions().dtype(torch::kFloat64).device(x.device());
    torch::Tensor gathered = torch::zeros({sync->world_size(), 2 * channels + 1}, f64);
    if (count > 0) {
      const auto [own_var, own_mean] =
          torch::var_mean(xc, SyncBnReducedDims(dims), /*unbiased=*/false, /*keepdim=*/false);
      torch::Tensor row = gathered.select(0, sync->rank());
      row.narrow(0, 0, channels).copy_(own_mean);
      row.narrow(0, channels, channels).copy_(own_var);
      row.narrow(0, 2 * channels, 1).fill_(static_cast<double>(count));
    }
    sync->AllReduceSum(gathered);
    const torch::Tensor counts = gathered.narrow(1, 2 * channels, 1);  // [world, 1]
    const torch::Tensor n = counts.sum();                              // 0-dim, on the device
    if (count < 2) {
      // Only a rank with fewer than 2 values of its own can see a global count below 2, and then
      // every rank does: they all throw (no rank is left waiting in a collective).
      const double total = n.item<double>();
      if (total < 2) {
        throw DataError(fmt::format(
            "SyncBatchNorm: {} value(s) per channel over all {} ranks (input {} on this rank); training needs at "
            "least 2 (larger minibatches)",
            total, sync->world_size(), SyncBnShape(x)));
      }
    }
    const torch::Tensor means = gathered.narrow(1, 0, channels);
    const torch::Tensor vars = gathered.narrow(1, channels, channels);
    const torch::Tensor mean = (counts * means).sum(0) / n;
    const torch::Tensor m2 = (counts * (vars + (means - mean).pow(2))).sum(0);
    const torch::Tensor invstd = (m2 / n + eps).rsqrt();

    if (running_mean.defined()) {
      running_mean.copy_(running_mean.to(torch::kFloat64) * (1 - momentum) + mean * momentum);
    }
    if (running_var.defined()) {
      running_var.copy_(running_var.to(torch::kFloat64) * (1 - momentum) + m2 / (n - 1) * momentum);
    }

    const torch::Tensor mean_c = mean.to(dtype);
    const torch::Tensor invstd_c = invstd.to(dtype);
    const torch::Tensor scale = weight.defined() ? invstd_c * weight.to(dtype) : invstd_c;
    const torch::Tensor xmu = xc - SyncBnPerChannel(mean_c, dims);
    torch::Tensor y = bias.defined()
                          ? torch::addcmul(SyncBnPerChannel(bias.to(dtype), dims), xmu, SyncBnPerChannel(scale, dims))
                          : xmu * SyncBnPerChannel(scale, dims);

    ctx->save_for_backward({x, weight, mean_c, invstd_c, n});
    ctx->saved_data["sync"] = c10::IValue::make_capsule(c10::make_intrusive<CrossRankSumCapsule>(std::move(sync)));
    return y.to(x.scalar_type());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& weight = saved[1];
    const torch::Tensor& mean = saved[2];
    const torch::Tensor& invstd = saved[3];
    const torch::Tensor& n = saved[4];
    const auto capsule = ctx->saved_data["sync"].toCapsule();
    const auto& sync = static_cast<const CrossRankSumCapsule*>(capsule.get())->sync;

    const torch::ScalarType dtype = mean.scalar_type();
    const std::int64_t dims = x.dim();
    const std::int64_t channels = x.size(1);
    const auto reduced = SyncBnReducedDims(dims);
    const torch::Tensor dy = grads[0].to(dtype);
    const torch::Tensor xmu = x.to(dtype) - SyncBnPerChannel(mean, dims);
    const torch::Tensor sum_dy = dy.sum(reduced);
    const torch::Tensor sum_dy_xmu = (dy * xmu).sum(reduced);
    const auto param_type = weight.defined() ? weight.scalar_type() : dtype;

    torch::Tensor dx, dweight, dbias;
    if (ctx->needs_input_grad(0)) {
      torch::Tensor combined = torch::cat({sum_dy, sum_dy_xmu});
      sync->AllReduceSum(combined);
      const torch::Tensor nc = n.to(dtype);
      const torch::Tensor mean_dy = combined.narrow(0, 0, channels) / nc;
      const torch::Tensor mean_dy_xmu = combined.narrow(0, channels, channels) / nc;
      const torch::Tensor scale = weight.defined() ? invstd * weight.to(dtype) : invstd;
      dx = ((dy - SyncBnPerChannel(mean_dy, dims)) - xmu * SyncBnPerChannel(invstd * invstd * mean_dy_xmu, dims)) *
           SyncBnPerChannel(scale, dims);
      dx = dx.to(x.scalar_type());
    }
    if (ctx->needs_input_grad(1) && weight.defined()) dweight = (sum_dy_xmu * invstd).to(param_type);
    if (ctx->needs_input_grad(2)) dbias = sum_dy.to(param_type);
    return {dx, dweight, dbias, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

c10::optional<torch::Tensor> SyncBnOptional(const torch::Tensor& t) {
  return t.defined() ? c10::optional<torch::Tensor>(t) : c10::nullopt;
}

void CheckPerChannel(const torch::Tensor& t, std::int64_t channels, const char* what) {
  if (t.defined() && (t.dim() != 1 || t.size(0) != channels)) {
    throw std::invalid_argument(
        fmt::format("SyncBatchNorm: {} is {}, must be [{}] (the input's channels)", what, SyncBnShape(t), channels));
  }
}

// The module's forward (BatchNormImplBase::forward in LibTorch's torch/nn/modules/batchnorm.h)
// with SyncBatchNorm in place of batch_norm when a scope asks for it.
template <class Impl>
torch::Tensor ApplyBatchNormTo(Impl& bn, const torch::Tensor& x, bool rank_ok) {
  std::shared_ptr<CrossRankSum> sync = current_batch_norm_sync;
  const auto& o = bn.options;
  // A wrong rank or channel count: the module's own error.
  if (!bn.is_training() || !sync || sync->world_size() <= 1 || !rank_ok || x.size(1) != o.num_features()) {
    return bn.forward(x);
  }
  double factor = o.momentum().value_or(0.0);
  if (o.track_running_stats() && bn.num_batches_tracked.defined()) {
    torch::NoGradGuard no_grad;
    bn.num_batches_tracked += 1;
    if (!o.momentum().has_value()) factor = 1.0 / bn.num_batches_tracked.template item<double>();  // cumulative
  }
  const bool track = o.track_running_stats();
  return SyncBatchNorm(x, bn.weight, bn.bias, track ? bn.running_mean : torch::Tensor(),
                       track ? bn.running_var : torch::Tensor(), factor, o.eps(), sync);
}

}  // namespace

SyncBatchNormScope::SyncBatchNormScope(std::shared_ptr<CrossRankSum> sync)
    : previous_(std::exchange(current_batch_norm_sync, std::move(sync))) {}

SyncBatchNormScope::~SyncBatchNormScope() {
  current_batch_norm_sync = std::move(previous_);
}

std::shared_ptr<CrossRankSum> CurrentBatchNormSync() {
  return current_batch_norm_sync;
}

torch::Tensor SyncBatchNorm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                            const torch::Tensor& running_mean, const torch::Tensor& running_var, double momentum,
                            double eps, const std::shared_ptr<CrossRankSum>& sync) {
  if (!sync) throw std::invalid_argument("SyncBatchNorm: no CrossRankSum");
  if (x.dim() < 2) {
    throw std::invalid_argument(fmt::format("SyncBatchNorm: input {} must be [batch, channels, *]", SyncBnShape(x)));
  }
  const std::int64_t channels = x.size(1);
  CheckPerChannel(weight, channels, "weight");
  CheckPerChannel(bias, channels, "bias");
  CheckPerChannel(running_mean, channels, "running_mean");
  CheckPerChannel(running_var, channels, "running_var");
  return SyncBatchNormFunction::apply(x, SyncBnOptional(weight), SyncBnOptional(bias), SyncBnOptional(running_mean),
                                      SyncBnOptional(running_var), momentum, eps, sync);
}

torch::Tensor ApplyBatchNorm(torch::nn::BatchNorm1dImpl& bn, const torch::Tensor& x) {
  return ApplyBatchNormTo(bn, x, x.dim() == 2 || x.dim() == 3);
}

torch::Tensor ApplyBatchNorm(torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& x) {
  return ApplyBatchNormTo(bn, x, x.dim() == 4);
}

}  // namespace asv::nnet
