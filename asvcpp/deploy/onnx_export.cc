#include "asvcpp/deploy/onnx_export.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/compat/torch_compat.h"
#include "asvcpp/deploy/onnx_graph.h"
#include "asvcpp/features/feature_window.h"
#include "asvcpp/features/mel_banks.h"
#include "asvcpp/features/mfcc.h"
#include "asvcpp/features/vad.h"
#include "asvcpp/nnet/ecapa_tdnn.h"
#include "asvcpp/nnet/layers.h"
#include "asvcpp/nnet/pooling.h"
#include "asvcpp/nnet/resnet.h"
#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/nnet/xvector_net.h"


namespace asv::deploy {


bool OnnxExportAvailable() { return OnnxWriterAvailable(); }

namespace {


// Builds one ONNX graph description (onnx_graph.h): named values, weight initializers and
// nodes, in order.
class GraphBuilder {
 public:
  explicit GraphBuilder(OnnxGraph* graph) : graph_(graph) {}

  // A float32 initializer holding `t` (any device and dtype; copied to the CPU as float32).
  std::string Weight(const std::string& name, const torch::Tensor& t) {
    const torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    OnnxTensor init;
    init.name = name;
    init.type = OnnxType::kFloat;
    for (std::int64_t d : c.sizes()) init.dims.push_back(d);
    const float* data = c.data_ptr<float>();
    init.floats.assign(data, data + c.numel());
    graph_->initializers.push_back(std::move(init));
    return name;
  }

  // An int64 initializer (1-D, or a scalar when `scalar`), named uniquely.
  std::string Ints(const std::vector<std::int64_t>& values, bool scalar = false) {
    OnnxTensor init;
    init.name = Fresh("const_i");
    init.type = OnnxType::kInt64;
    if (!scalar) init.dims.push_back(static_cast<std::int64_t>(values.size()));
    init.ints = values;
    graph_->initializers.push_back(init);
    return init.name;
  }

  // A float32 scalar initializer, named uniquely.
  std::string Scalar(float value) {
    OnnxTensor init;
    init.name = Fresh("const_f");
    init.type = OnnxType::kFloat;
    init.floats = {value};
    graph_->initializers.push_back(init);
    return init.name;
  }

  // Adds a node of `op` on `inputs` with one output, returned; `configure` sets its attributes.
  std::string Node(const std::string& op, const std::vector<std::string>& inputs,
                   const std::function<void(OnnxNode&)>& configure = nullptr) {
    return MultiNode(op, inputs, 1, configure)[0];
  }

  // A node with `n_outputs` outputs (Split).
  std::vector<std::string> MultiNode(const std::string& op, const std::vector<std::string>& inputs, int n_outputs,
                                     const std::function<void(OnnxNode&)>& configure = nullptr) {
    OnnxNode node;
    node.op = op;
    node.name = Fresh(op);
    node.inputs = inputs;
    for (int i = 0; i < n_outputs; ++i) node.outputs.push_back(Fresh(op + "_out"));
    if (configure) configure(node);
    graph_->nodes.push_back(node);
    return node.outputs;
  }

  // Names the graph's value `value` `name` by an Identity node (graph outputs).
  void Output(const std::string& value, const std::string& name) {
    OnnxNode node;
    node.op = "Identity";
    node.name = Fresh("Identity");
    node.inputs = {value};
    node.outputs = {name};
    graph_->nodes.push_back(std::move(node));
  }

  std::string Fresh(const std::string& stem) { return fmt::format("{}_{}", stem, counter_++); }

 private:
  OnnxGraph* graph_;
  std::int64_t counter_ = 0;
};

void SetInts(OnnxNode& node, const std::string& name, const std::vector<std::int64_t>& values) {
  node.SetInts(name, values);
}
void SetInt(OnnxNode& node, const std::string& name, std::int64_t value) { node.SetInt(name, value); }
void SetFloat(OnnxNode& node, const std::string& name, float value) { node.SetFloat(name, value); }

std::vector<std::int64_t> Vec(c10::IntArrayRef values) { return {values.begin(), values.end()}; }

// The ops of the networks' layers, on named graph values. `prefix` names the weights as the
// state dict does ("layer1.0.conv1.weight").
class Emitter {
 public:
  explicit Emitter(GraphBuilder& g) : g_(g) {}

  std::string Conv1d(const std::string& x, torch::nn::Conv1dImpl& conv, const std::string& prefix) {
    const auto& o = conv.options;
    if (torch::enumtype::get_enum_name(o.padding_mode()) != std::string("kZeros")) {
      throw ConfigError(
          "ONNX export: network.cnn_padding_mode = 'circular' has no ONNX convolution; export a network trained "
          "with 'zeros'");
    }
    const auto* padding = compat::ExplicitPadding<torch::ExpandingArray<1>>(o.padding());
    if (padding == nullptr) throw std::invalid_argument("ONNX export: a Conv1d with 'valid' or 'same' padding");
    const std::int64_t pad = (**padding)[0];
    std::vector<std::string> inputs{x, g_.Weight(prefix + ".weight", conv.weight)};
    if (conv.bias.defined()) inputs.push_back(g_.Weight(prefix + ".bias", conv.bias));
    return g_.Node("Conv", inputs, [&](OnnxNode& n) {
      SetInts(n, "kernel_shape", {conv.weight.size(2)});
      SetInts(n, "pads", {pad, pad});
      SetInts(n, "strides", Vec(*o.stride()));
      SetInts(n, "dilations", Vec(*o.dilation()));
      SetInt(n, "group", o.groups());
    });
  }

  std::string Conv2d(const std::string& x, torch::nn::Conv2dImpl& conv, const std::string& prefix) {
    const auto& o = conv.options;
    const auto* padding = compat::ExplicitPadding<torch::ExpandingArray<2>>(o.padding());
    if (padding == nullptr) throw std::invalid_argument("ONNX export: a Conv2d with 'valid' or 'same' padding");
    const std::int64_t pad_h = (**padding)[0], pad_w = (**padding)[1];
    std::vector<std::string> inputs{x, g_.Weight(prefix + ".weight", conv.weight)};
    if (conv.bias.defined()) inputs.push_back(g_.Weight(prefix + ".bias", conv.bias));
    return g_.Node("Conv", inputs, [&](OnnxNode& n) {
      SetInts(n, "kernel_shape", {conv.weight.size(2), conv.weight.size(3)});
      SetInts(n, "pads", {pad_h, pad_w, pad_h, pad_w});
      SetInts(n, "strides", Vec(*o.stride()));
      SetInts(n, "dilations", Vec(*o.dilation()));
      SetInt(n, "group", o.groups());
    });
  }

  // Inference batch norm (running statistics) over axis 1 of [N, C, ...].
  template <typename BatchNorm>
  std::string Norm(const std::string& x, BatchNorm& bn, const std::string& prefix) {
    const std::int64_t c = bn.running_mean.size(0);
    const torch::Tensor scale = bn.weight.defined() ? bn.weight : torch::ones({c});
    const torch::Tensor shift = bn.bias.defined() ? bn.bias : torch::zeros({c});
    const auto eps = static_cast<float>(bn.options.eps());
    return g_.Node("BatchNormalization",
                   {x, g_.Weight(prefix + ".weight", scale), g_.Weight(prefix + ".bias", shift),
                    g_.Weight(prefix + ".running_mean", bn.running_mean),
                    g_.Weight(prefix + ".running_var", bn.running_var)},
                   [&](OnnxNode& n) { SetFloat(n, "epsilon", eps); });
  }

  // x [N, in] -> [N, out].
  std::string Linear(const std::string& x, torch::nn::LinearImpl& linear, const std::string& prefix) {
    std::vector<std::string> inputs{x, g_.Weight(prefix + ".weight", linear.weight)};
    if (linear.bias.defined()) inputs.push_back(g_.Weight(prefix + ".bias", linear.bias));
    return g_.Node("Gemm", inputs, [](OnnxNode& n) { SetInt(n, "transB", 1); });
  }

  std::string Unary(const std::string& op, const std::string& x) { return g_.Node(op, {x}); }
  std::string Binary(const std::string& op, const std::string& a, const std::string& b) {
    return g_.Node(op, {a, b});
  }

  std::string Activate(const std::string& x, const nnet::LayerOptions& o) {
    switch (o.activation) {
      case nnet::Activation::kRelu:
        return Unary("Relu", x);
      case nnet::Activation::kLeakyRelu:
        return g_.Node("LeakyRelu", {x},
                       [&](OnnxNode& n) { SetFloat(n, "alpha", static_cast<float>(o.lrelu_slope)); });
      case nnet::Activation::kSelu:
        // PyTorch's constants (ONNX's defaults are the same values rounded to float32).
        return g_.Node("Selu", {x}, [](OnnxNode& n) {
          SetFloat(n, "alpha", 1.6732632423543772f);
          SetFloat(n, "gamma", 1.0507009873554805f);
        });
    }
    throw std::invalid_argument("ONNX export: unknown activation");
  }

  std::string Mean(const std::string& x, std::int64_t axis, bool keepdims) {
    return g_.Node("ReduceMean", {x}, [&](OnnxNode& n) {
      SetInts(n, "axes", {axis});
      SetInt(n, "keepdims", keepdims ? 1 : 0);
    });
  }

  std::string Sum(const std::string& x, std::int64_t axis, bool keepdims) {
    return g_.Node("ReduceSum", {x, g_.Ints({axis})},
                   [&](OnnxNode& n) { SetInt(n, "keepdims", keepdims ? 1 : 0); });
  }

  std::string Concat(const std::vector<std::string>& xs, std::int64_t axis) {
    return g_.Node("Concat", xs, [&](OnnxNode& n) { SetInt(n, "axis", axis); });
  }

  std::string Transpose(const std::string& x, const std::vector<std::int64_t>& perm) {
    return g_.Node("Transpose", {x}, [&](OnnxNode& n) { SetInts(n, "perm", perm); });
  }

  std::string Unsqueeze(const std::string& x, std::int64_t axis) { return g_.Node("Unsqueeze", {x, g_.Ints({axis})}); }

  // The size of axis `axis` of x as a float32 scalar.
  std::string SizeOf(const std::string& x, std::int64_t axis) {
    const std::string dims = g_.Node("Shape", {x});
    const std::string n = g_.Node("Gather", {dims, g_.Ints({axis}, /*scalar=*/true)});
    return g_.Node("Cast", {n}, [](OnnxNode& node) { SetInt(node, "to", static_cast<std::int64_t>(OnnxType::kFloat)); });
  }

  // sqrt(var_t(x) + floor) over the last axis of [N, C, T] with the unbiased variance (divisor
  // T - 1), as nnet's UnbiasedStd: [N, C] or [N, C, 1] with keepdims.
  std::string UnbiasedStd(const std::string& x, bool keepdims, float floor) {
    const std::string mean = Mean(x, 2, true);
    const std::string centred = Binary("Sub", x, mean);
    const std::string squares = Sum(Binary("Mul", centred, centred), 2, keepdims);
    const std::string frames_minus_one = Binary("Sub", SizeOf(x, 2), g_.Scalar(1.0f));
    return Unary("Sqrt", Binary("Add", Binary("Div", squares, frames_minus_one), g_.Scalar(floor)));
  }

  GraphBuilder& graph() { return g_; }

 private:
  GraphBuilder& g_;
};

// ---- WeSpeaker's ResNet (resnet.h) ----

std::string ResNetBlock(Emitter& e, nnet::BasicBlockImpl& block, const std::string& x, const std::string& prefix) {
  std::string out = e.Unary("Relu", e.Norm(e.Conv2d(x, *block.conv1, prefix + ".conv1"), *block.bn1, prefix + ".bn1"));
  out = e.Norm(e.Conv2d(out, *block.conv2, prefix + ".conv2"), *block.bn2, prefix + ".bn2");
  std::string shortcut = x;
  if (!block.shortcut->is_empty()) {
    shortcut = e.Conv2d(x, *block.shortcut[0]->as<torch::nn::Conv2d>(), prefix + ".shortcut.0");
    shortcut = e.Norm(shortcut, *block.shortcut[1]->as<torch::nn::BatchNorm2d>(), prefix + ".shortcut.1");
  }
  return e.Unary("Relu", e.Binary("Add", out, shortcut));
}

std::string ResNetGraph(Emitter& e, nnet::ResNetImpl& net, const std::string& feats) {
  // [batch, frames, feat] -> [batch, 1, feat, frames]
  std::string x = e.Unsqueeze(e.Transpose(feats, {0, 2, 1}), 1);
  x = e.Unary("Relu", e.Norm(e.Conv2d(x, *net.conv1, "conv1"), *net.bn1, "bn1"));
  int layer_index = 1;
  for (auto* layer : {&net.layer1, &net.layer2, &net.layer3, &net.layer4}) {
    for (std::size_t i = 0; i < (*layer)->size(); ++i) {
      x = ResNetBlock(e, *(*layer)[i]->as<nnet::BasicBlock>(), x, fmt::format("layer{}.{}", layer_index, i));
    }
    ++layer_index;
  }
  // TSTP: [batch, C, F, T] -> [batch, C·F, T] -> [mean, unbiased std] over T.
  const std::int64_t rows = net.pool_out_dim() / 2;
  const std::string flat = e.graph().Node("Reshape", {x, e.graph().Ints({0, rows, -1})});
  const std::string pooled = e.Concat({e.Mean(flat, 2, false), e.UnbiasedStd(flat, false, 1e-7f)}, 1);
  return e.Linear(pooled, *net.seg_1, "seg_1");
}

// ---- WeSpeaker's ECAPA-TDNN (ecapa_tdnn.h) ----

std::string ConvReluBn(Emitter& e, nnet::Conv1dReluBnImpl& layer, const std::string& x, const std::string& prefix) {
  return e.Norm(e.Unary("Relu", e.Conv1d(x, *layer.conv, prefix + ".conv")), *layer.bn, prefix + ".bn");
}

std::string Res2(Emitter& e, nnet::Res2Conv1dReluBnImpl& layer, const std::string& x, const std::string& prefix) {
  const std::int64_t n_convs = static_cast<std::int64_t>(layer.convs->size());
  const std::int64_t width = layer.convs[0]->as<torch::nn::Conv1d>()->weight.size(0);
  const auto groups = e.graph().MultiNode("Split", {x, e.graph().Ints(std::vector<std::int64_t>(n_convs + 1, width))},
                                          static_cast<int>(n_convs + 1),
                                          [](OnnxNode& n) { SetInt(n, "axis", 1); });
  std::vector<std::string> out;
  std::string sp = groups[0];
  for (std::int64_t i = 0; i < n_convs; ++i) {
    if (i > 0) sp = e.Binary("Add", sp, groups[i]);
    sp = e.Conv1d(sp, *layer.convs[i]->as<torch::nn::Conv1d>(), fmt::format("{}.convs.{}", prefix, i));
    sp = e.Norm(e.Unary("Relu", sp), *layer.bns[i]->as<torch::nn::BatchNorm1d>(), fmt::format("{}.bns.{}", prefix, i));
    out.push_back(sp);
  }
  out.push_back(groups[n_convs]);
  return e.Concat(out, 1);
}

std::string SeConnect(Emitter& e, nnet::SeConnectImpl& se, const std::string& x, const std::string& prefix) {
  std::string w = e.Unary("Relu", e.Linear(e.Mean(x, 2, false), *se.linear1, prefix + ".linear1"));
  w = e.Unary("Sigmoid", e.Linear(w, *se.linear2, prefix + ".linear2"));
  return e.Binary("Mul", x, e.Unsqueeze(w, 2));
}

std::string SeRes2Block(Emitter& e, nnet::SeRes2BlockImpl& block, const std::string& x, const std::string& prefix) {
  auto& seq = block.se_res2block;
  const std::string p = prefix + ".se_res2block";
  std::string y = ConvReluBn(e, *seq[0]->as<nnet::Conv1dReluBn>(), x, p + ".0");
  y = Res2(e, *seq[1]->as<nnet::Res2Conv1dReluBn>(), y, p + ".1");
  y = ConvReluBn(e, *seq[2]->as<nnet::Conv1dReluBn>(), y, p + ".2");
  y = SeConnect(e, *seq[3]->as<nnet::SeConnect>(), y, p + ".3");
  return e.Binary("Add", x, y);
}

// ASTP (pooling.h): [batch, C, T] -> [batch, 2C].
std::string AttentivePooling(Emitter& e, nnet::AttentiveStatsPoolingImpl& pool, const std::string& x) {
  std::string attention_in = x;
  if (pool.global_context()) {
    const std::string shape = e.graph().Node("Shape", {x});
    const std::string mean = e.graph().Node("Expand", {e.Mean(x, 2, true), shape});
    const std::string std = e.graph().Node("Expand", {e.UnbiasedStd(x, true, 1e-7f), shape});
    attention_in = e.Concat({x, mean, std}, 1);
  }
  const std::string hidden = e.Unary("Tanh", e.Conv1d(attention_in, *pool.linear1, "pool.linear1"));
  const std::string alpha = e.graph().Node("Softmax", {e.Conv1d(hidden, *pool.linear2, "pool.linear2")},
                                           [](OnnxNode& n) { SetInt(n, "axis", 2); });
  const std::string mean = e.Sum(e.Binary("Mul", alpha, x), 2, false);
  const std::string second = e.Sum(e.Binary("Mul", alpha, e.Binary("Mul", x, x)), 2, false);
  const std::string variance = e.Binary("Sub", second, e.Binary("Mul", mean, mean));
  const std::string std = e.Unary("Sqrt", e.Binary("Max", variance, e.graph().Scalar(1e-7f)));
  return e.Concat({mean, std}, 1);
}

std::string EcapaGraph(Emitter& e, nnet::EcapaTdnnImpl& net, const std::string& feats) {
  const std::string x = e.Transpose(feats, {0, 2, 1});  // [batch, feat, frames]
  const std::string out1 = ConvReluBn(e, *net.layer1, x, "layer1");
  const std::string out2 = SeRes2Block(e, *net.layer2, out1, "layer2");
  const std::string out3 = SeRes2Block(e, *net.layer3, out2, "layer3");
  const std::string out4 = SeRes2Block(e, *net.layer4, out3, "layer4");
  const std::string frames = e.Unary("Relu", e.Conv1d(e.Concat({out2, out3, out4}, 1), *net.conv, "conv"));
  const std::string pooled = e.Norm(AttentivePooling(e, *net.pool, frames), *net.bn, "bn");
  return e.Linear(pooled, *net.linear, "linear");
}

// ---- ASVtorch's x-vector networks (layers.h, xvector_net.h) ----

// ASVtorch MeanStdPoolingLayer: [batch, C, T] -> [batch, 2C].
std::string MeanStd(Emitter& e, const std::string& x) {
  const std::string mean = e.Mean(x, 2, false);
  const std::string second = e.Mean(e.Binary("Mul", x, x), 2, false);
  const std::string variance = e.Binary("Sub", second, e.Binary("Mul", mean, mean));
  return e.Concat({mean, e.Unary("Sqrt", e.Binary("Max", variance, e.graph().Scalar(1e-6f)))}, 1);
}

std::string SeLayer(Emitter& e, nnet::SeLayerImpl& se, const std::string& x, const nnet::LayerOptions& o,
                    const std::string& prefix) {
  std::string w = e.Linear(MeanStd(e, x), *se.linear_relu_bn->linear, prefix + ".linear_relu_bn.linear");
  w = e.Norm(e.Activate(w, o), *se.linear_relu_bn->batchnorm, prefix + ".linear_relu_bn.batchnorm");
  w = e.Unary("Sigmoid", e.Linear(w, *se.fc, prefix + ".fc"));
  return e.Binary("Mul", x, e.Unsqueeze(w, 2));
}

// x / max(||x||_2, 1e-12) over `axis`, as torch.nn.functional.normalize.
std::string L2Normalize(Emitter& e, const std::string& x, std::int64_t axis) {
  const std::string norm = e.graph().Node("ReduceL2", {x}, [&](OnnxNode& n) {
    SetInts(n, "axes", {axis});
    SetInt(n, "keepdims", 1);
  });
  return e.Binary("Div", x, e.Binary("Max", norm, e.graph().Scalar(1e-12f)));
}

// NetVLAD / GhostVLAD / LDE pooling (clustering_layer.h, ClusteringLayerImpl::forward), the same
// operations in the same order: [batch, F, T] -> [batch, K·F].
std::string ClusteringPooling(Emitter& e, nnet::ClusteringLayerImpl& layer, const std::string& x) {
  GraphBuilder& g = e.graph();
  const auto& o = layer.options();
  const std::string frames = e.Transpose(x, {0, 2, 1});  // [B, T, F]
  std::string a;                                         // [B, T, K]
  if (o.assignment == nnet::ClusterAssignment::kNetVlad) {
    const std::string w = e.Transpose(g.Weight("pooling_layer.linear.weight", layer.linear->weight), {1, 0});
    const std::string logits =
        e.Binary("Add", g.Node("MatMul", {frames, w}), g.Weight("pooling_layer.linear.bias", layer.linear->bias));
    const std::string soft = g.Node("Softmax", {logits}, [](OnnxNode& n) { SetInt(n, "axis", 2); });
    a = g.Node("Slice", {soft, g.Ints({0}), g.Ints({o.n_clusters}), g.Ints({2})});
  } else {
    // The constants AssignFrames uses.
    torch::NoGradGuard no_grad;
    const auto terms = layer.LdeDistanceTerms();
    const std::string x2 =
        g.Node("MatMul", {e.Binary("Mul", frames, frames), g.Weight("pooling_layer.lambda_t", terms.precision_t)});
    const std::string cross = g.Node(
        "MatMul", {frames, g.Weight("pooling_layer.lambda_centroids_t", terms.weighted_centroids_t)});
    const std::string mu2 = g.Weight("pooling_layer.lambda_centroids2", terms.weighted_norms);
    const std::string distances =
        e.Binary("Add", e.Binary("Sub", x2, e.Binary("Mul", g.Scalar(2.0f), cross)), mu2);
    const std::string logits = e.Binary("Add", e.Binary("Mul", g.Scalar(-0.5f), distances),
                                        g.Weight("pooling_layer.bias_terms", layer.bias_terms));
    a = g.Node("Softmax", {logits}, [](OnnxNode& n) { SetInt(n, "axis", 2); });
  }
  const std::string counts = e.Sum(a, 1, false);  // [B, K]
  const std::string centroids = g.Weight("pooling_layer.centroids", layer.centroids);
  std::string v = e.Binary("Sub", g.Node("MatMul", {e.Transpose(a, {0, 2, 1}), frames}),
                           e.Binary("Mul", e.Unsqueeze(counts, 2), centroids));  // [B, K, F]
  if (o.supervector == nnet::SupervectorMode::kNetVlad) {
    v = L2Normalize(e, v, 2);
  } else {
    v = e.Binary("Div", v, e.Unsqueeze(e.Binary("Max", counts, g.Scalar(1e-10f)), 2));
  }
  std::string supervector = g.Node("Reshape", {v, g.Ints({0, -1})});
  if (o.normalize_supervector) supervector = L2Normalize(e, supervector, 1);
  return supervector;
}

std::string XvectorGraph(Emitter& e, nnet::XvectorNetImpl& net, const std::string& feats) {
  const auto& o = net.options();
  std::string x = e.Transpose(feats, {0, 2, 1});  // [batch, feat, frames]
  for (std::size_t i = 0; i < net.frame_layers.size(); ++i) {
    const std::string prefix = fmt::format("tdnn_layers.{}", i);
    if (auto* cnn = dynamic_cast<nnet::CnnLayerImpl*>(net.frame_layers[i].get())) {
      std::string y = e.Conv1d(x, *cnn->cnn, prefix + ".cnn");
      if (cnn->se) y = SeLayer(e, *cnn->se, y, o.layer, prefix + ".se");
      x = e.Norm(e.Activate(y, o.layer), *cnn->batchnorm, prefix + ".batchnorm");
    } else if (auto* res = dynamic_cast<nnet::ResCnnLayerImpl*>(net.frame_layers[i].get())) {
      std::string y = e.Norm(e.Activate(e.Conv1d(x, *res->fc, prefix + ".fc"), o.layer), *res->fc_norm,
                             prefix + ".fc_norm");
      y = e.Conv1d(y, *res->cnn, prefix + ".cnn");
      if (res->se) y = SeLayer(e, *res->se, y, o.layer, prefix + ".se");
      x = e.Norm(e.Activate(e.Binary("Add", y, x), o.layer), *res->cnn_norm, prefix + ".cnn_norm");
    } else {
      throw std::invalid_argument(fmt::format("ONNX export: frame layer {} is of an unknown kind", i));
    }
  }
  const std::string pooled = net.clustering_pooling ? ClusteringPooling(e, *net.clustering_pooling, x) : MeanStd(e, x);
  return e.Linear(pooled, *net.embedding_layer->linear, "utterance_layers.0.linear");
}

// ---- the front ends ----

// [window, 2·(padded/2 + 1)]: a DC-removed frame's samples to the real and imaginary parts of the
// DFT of the pre-emphasised, windowed and zero-padded frame (feature_window.h, Kaldi's
// ProcessWindow), the linear maps composed in double precision.
torch::Tensor FrameToSpectrum(const features::FrameOptions& fo) {
  const std::int64_t length = fo.WindowSize(), padded = fo.PaddedWindowSize(), bins = padded / 2 + 1;
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  const double c = fo.preemph_coeff;
  torch::Tensor m = torch::eye(length, f64);  // row vector x -> x @ m: p[i] = d[i] - c d[i-1], d[-1] = d[0]
  auto a = m.accessor<double, 2>();
  for (std::int64_t i = 0; i < length; ++i) a[i == 0 ? 0 : i - 1][i] -= c;
  const std::vector<float> window = features::MakeWindowFunction(fo);
  torch::Tensor w = torch::zeros({length}, f64);
  for (std::int64_t i = 0; i < length; ++i) w[i] = static_cast<double>(window[static_cast<std::size_t>(i)]);
  m = m * w.unsqueeze(0);
  const torch::Tensor i = torch::arange(length, f64).unsqueeze(1);
  const torch::Tensor k = torch::arange(bins, f64).unsqueeze(0);
  const torch::Tensor angle = (2.0 * M_PI / static_cast<double>(padded)) * torch::fmod(i * k, padded);
  const torch::Tensor dft = torch::cat({torch::cos(angle), -torch::sin(angle)}, 1);  // [length, 2·bins]
  return m.matmul(dft).to(torch::kFloat32);
}

// The mel banks as a [padded/2 + 1, num_bins] matrix (features::MelBanks, no VTLN).
torch::Tensor MelMatrix(const features::MelOptions& mel_opts, const features::FrameOptions& frame_opts) {
  const features::MelBanks banks(mel_opts, frame_opts);
  const std::int64_t bins = frame_opts.PaddedWindowSize() / 2 + 1;
  torch::Tensor mel = torch::zeros({bins, banks.NumBins()}, torch::kFloat32);
  auto a = mel.accessor<float, 2>();
  for (std::int32_t b = 0; b < banks.NumBins(); ++b) {
    const auto& weights = banks.Weights(b);
    for (std::size_t j = 0; j < weights.size(); ++j) a[banks.Offset(b) + static_cast<std::int64_t>(j)][b] = weights[j];
  }
  return mel;
}

void CheckFrontEnd(const OnnxFrontEnd& front_end, const nnet::SpeakerNetInfo& info) {
  const auto refuse = [&](const std::string& what) {
    throw ConfigError(fmt::format("ONNX export of {} with its front end: {}", info.architecture, what));
  };
  if (front_end.kind == OnnxFrontEnd::Kind::kFbank) {
    const auto& f = front_end.fbank;
    f.Validate();
    if (f.mel_opts.num_bins != info.feat_dim) {
      refuse(fmt::format("num_mel_bins = {} but the network takes {} features", f.mel_opts.num_bins, info.feat_dim));
    }
    if (f.use_energy) refuse("use_energy = true (a log-energy column) is not in the graph");
    if (!f.use_log_fbank) refuse("use_log_fbank = false is not in the graph");
  } else {
    const auto& m = front_end.mfcc;
    m.Validate();
    if (m.num_ceps != info.feat_dim) {
      refuse(fmt::format("num_ceps = {} but the network takes {} features", m.num_ceps, info.feat_dim));
    }
    if (m.htk_compat) refuse("htk_compat = true is not in the graph");
    if (front_end.cmn_window < 0) refuse(fmt::format("cmn_window = {} must be >= 0", front_end.cmn_window));
    if (front_end.vad) front_end.vad->Validate();
  }
}

// Sample positions of every frame, [frames, window] int64, of a signal of `n` samples (a graph
// scalar), as features::FirstSampleOfFrame and NumFrames; without snip_edges the positions outside
// the signal are reflected once (-1 -> 0, n -> n - 1), as Kaldi's ExtractWindow does.
std::string FrameIndices(GraphBuilder& g, Emitter& e, const features::FrameOptions& fo, const std::string& n) {
  const std::int64_t length = fo.WindowSize(), shift = fo.WindowShift();
  std::string count, first;
  if (fo.snip_edges) {
    count = g.Node("Add", {g.Node("Div", {g.Node("Sub", {n, g.Ints({length}, true)}), g.Ints({shift}, true)}),
                           g.Ints({1}, true)});
    first = g.Ints({0}, true);
  } else {
    count = g.Node("Div", {g.Node("Add", {n, g.Ints({shift / 2}, true)}), g.Ints({shift}, true)});
    first = g.Ints({shift / 2 - length / 2}, true);
  }
  const std::string starts =
      g.Node("Add", {g.Node("Mul", {g.Node("Range", {g.Ints({0}, true), count, g.Ints({1}, true)}),
                                    g.Ints({shift}, true)}),
                     first});
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(length));
  for (std::int64_t i = 0; i < length; ++i) offsets[static_cast<std::size_t>(i)] = i;
  std::string index = g.Node("Add", {e.Unsqueeze(starts, 1), g.Ints(offsets)});
  if (!fo.snip_edges) {
    const std::string zero = g.Ints({0}, true);
    index = g.Node("Where", {g.Node("Less", {index, zero}),
                             g.Node("Sub", {g.Ints({-1}, true), index}), index});
    const std::string last = g.Node("Sub", {g.Node("Mul", {n, g.Ints({2}, true)}), g.Ints({1}, true)});
    index = g.Node("Where", {g.Node("GreaterOrEqual", {index, n}), g.Node("Sub", {last, index}), index});
  }
  return index;
}

// Centred sliding-window mean normalisation over axis 1 of x [batch, frames, dim], as
// features::ApplySlidingCmn with center = true (see asvcpp/features/cmn.h for the window
// placement), the window sums from cumulative sums in double precision.
std::string SlidingCmn(Emitter& e, const std::string& x, std::int64_t window) {
  GraphBuilder& g = e.graph();
  const std::string frames = g.Node("Gather", {g.Node("Shape", {x}), g.Ints({1}, true)});
  const std::string t = g.Node("Range", {g.Ints({0}, true), frames, g.Ints({1}, true)});
  const std::string zero = g.Ints({0}, true);
  const std::string s0 = g.Node("Sub", {t, g.Ints({window / 2}, true)});
  const std::string s1 = g.Node("Max", {s0, zero});
  const std::string e1 = g.Node("Add", {s1, g.Ints({window}, true)});  // shifted right when s0 < 0
  const std::string over = g.Node("Max", {g.Node("Sub", {e1, frames}), zero});
  const std::string start = g.Node("Max", {g.Node("Sub", {s1, over}), zero});
  const std::string end = g.Node("Sub", {e1, over});
  const std::string x64 = g.Node("Cast", {x}, [](OnnxNode& n) { SetInt(n, "to", static_cast<std::int64_t>(OnnxType::kDouble)); });
  // sums[:, k] = x[:, 0] + ... + x[:, k - 1], [batch, frames + 1, dim]
  const std::string inclusive = g.Node("CumSum", {x64, g.Ints({1}, true)});
  const std::string zeros = g.Node("Mul", {g.Node("Slice", {x64, g.Ints({0}), g.Ints({1}), g.Ints({1})}),
                                           g.Node("Cast", {g.Scalar(0.0f)}, [](OnnxNode& n) {
                                             SetInt(n, "to", static_cast<std::int64_t>(OnnxType::kDouble));
                                           })});
  const std::string sums = e.Concat({zeros, inclusive}, 1);
  const auto gather = [&](const std::string& index) {
    return g.Node("Gather", {sums, index}, [](OnnxNode& n) { SetInt(n, "axis", 1); });
  };
  const std::string count = g.Node("Cast", {g.Node("Sub", {end, start})},
                                   [](OnnxNode& n) { SetInt(n, "to", static_cast<std::int64_t>(OnnxType::kDouble)); });
  const std::string mean = g.Node("Div", {g.Node("Sub", {gather(end), gather(start)}), e.Unsqueeze(count, 1)});
  const std::string centred = g.Node("Sub", {x64, mean});
  return g.Node("Cast", {centred}, [](OnnxNode& n) { SetInt(n, "to", static_cast<std::int64_t>(OnnxType::kFloat)); });
}

// Kaldi's energy VAD (features::ComputeVadEnergy) on c0 [batch, frames]: [batch, frames] bool.
std::string VadDecisions(Emitter& e, const features::VadOptions& vad, const std::string& c0) {
  GraphBuilder& g = e.graph();
  const std::string threshold =
      g.Node("Add", {g.Scalar(vad.vad_energy_threshold),
                     g.Node("Mul", {g.Scalar(vad.vad_energy_mean_scale), e.Mean(c0, 1, true)})});
  const std::string above = g.Node("Cast", {g.Node("Greater", {c0, threshold})},
                                   [](OnnxNode& n) { SetInt(n, "to", static_cast<std::int64_t>(OnnxType::kFloat)); });
  const std::string frames = g.Node("Gather", {g.Node("Shape", {c0}), g.Ints({1}, true)});
  const std::string t = g.Node("Range", {g.Ints({0}, true), frames, g.Ints({1}, true)});
  const std::string start = g.Node("Max", {g.Node("Sub", {t, g.Ints({vad.vad_frames_context}, true)}), g.Ints({0}, true)});
  const std::string end = g.Node("Min", {g.Node("Add", {t, g.Ints({vad.vad_frames_context + 1}, true)}), frames});
  const std::string sums = e.Concat({g.Node("Mul", {g.Node("Slice", {above, g.Ints({0}), g.Ints({1}), g.Ints({1})}),
                                                    g.Scalar(0.0f)}),
                                     g.Node("CumSum", {above, g.Ints({1}, true)})},
                                    1);
  const auto gather = [&](const std::string& index) {
    return g.Node("Gather", {sums, index}, [](OnnxNode& n) { SetInt(n, "axis", 1); });
  };
  const std::string count = g.Node("Sub", {gather(end), gather(start)});
  const std::string window = g.Node("Cast", {g.Node("Sub", {end, start})},
                                    [](OnnxNode& n) { SetInt(n, "to", static_cast<std::int64_t>(OnnxType::kFloat)); });
  return g.Node("GreaterOrEqual",
                {count, g.Node("Mul", {window, g.Scalar(vad.vad_proportion_threshold)})});
}

// waveform [batch, samples] in [-1, 1) -> features [batch, frames, dim].
std::string FrontEndGraph(Emitter& e, const OnnxFrontEnd& front_end, const std::string& waveform) {
  GraphBuilder& g = e.graph();
  const bool mfcc = front_end.kind == OnnxFrontEnd::Kind::kMfcc;
  const auto& fo = mfcc ? front_end.mfcc.frame_opts : front_end.fbank.frame_opts;
  const auto& mel_opts = mfcc ? front_end.mfcc.mel_opts : front_end.fbank.mel_opts;
  const std::int64_t bins = fo.PaddedWindowSize() / 2 + 1;
  const float eps = std::numeric_limits<float>::epsilon();
  const std::string samples = g.Node("Mul", {waveform, g.Scalar(32768.0f)});  // int16 units, as Kaldi
  const std::string n = g.Node("Gather", {g.Node("Shape", {samples}), g.Ints({1}, /*scalar=*/true)});
  std::string frames = g.Node("Gather", {samples, FrameIndices(g, e, fo, n)},
                              [](OnnxNode& node) { SetInt(node, "axis", 1); });  // [batch, frames, window]
  if (fo.remove_dc_offset) frames = e.Binary("Sub", frames, e.Mean(frames, 2, true));
  const std::string spectrum = g.Node("MatMul", {frames, g.Weight("frontend.frame_to_spectrum", FrameToSpectrum(fo))});
  const auto parts = g.MultiNode("Split", {spectrum, g.Ints({bins, bins})}, 2,
                                 [](OnnxNode& node) { SetInt(node, "axis", 2); });
  std::string power = e.Binary("Add", e.Binary("Mul", parts[0], parts[0]), e.Binary("Mul", parts[1], parts[1]));
  if (!mfcc && !front_end.fbank.use_power) power = e.Unary("Sqrt", power);
  const std::string mel = g.Node("MatMul", {power, g.Weight("frontend.mel_banks", MelMatrix(mel_opts, fo))});
  std::string feats = e.Unary("Log", e.Binary("Max", mel, g.Scalar(eps)));
  if (!mfcc) {
    if (front_end.cmn) feats = e.Binary("Sub", feats, e.Mean(feats, 1, true));
    return feats;
  }
  const auto& m = front_end.mfcc;
  // DCT rows 0..num_ceps-1, liftered, as a [num_bins, num_ceps] matrix.
  const Matrix dct = features::ComputeDctMatrix(m.num_ceps, mel_opts.num_bins);
  const std::vector<float> lifter =
      m.cepstral_lifter != 0.0f ? features::ComputeLifterCoeffs(m.cepstral_lifter, m.num_ceps) : std::vector<float>();
  torch::Tensor dct_t = torch::zeros({mel_opts.num_bins, m.num_ceps}, torch::kFloat32);
  for (std::int32_t k = 0; k < m.num_ceps; ++k) {
    for (std::int32_t b = 0; b < mel_opts.num_bins; ++b) {
      dct_t[b][k] = dct(k, b) * (lifter.empty() ? 1.0f : lifter[static_cast<std::size_t>(k)]);
    }
  }
  feats = g.Node("MatMul", {feats, g.Weight("frontend.dct", dct_t)});
  if (m.use_energy) {
    // The raw log energy (before pre-emphasis and window; after DC removal), floored.
    std::string log_energy = e.Unary("Log", e.Binary("Max", e.Sum(e.Binary("Mul", frames, frames), 2, true),
                                                     g.Scalar(eps)));
    if (m.energy_floor > 0.0f) log_energy = e.Binary("Max", log_energy, g.Scalar(std::log(m.energy_floor)));
    if (!m.raw_energy) {
      throw ConfigError("ONNX export: raw_energy = false (energy after the window) is not in the graph");
    }
    const std::string rest = g.Node("Slice", {feats, g.Ints({1}), g.Ints({m.num_ceps}), g.Ints({2})});
    feats = e.Concat({log_energy, rest}, 2);
  }
  std::string voiced;
  if (front_end.vad) {
    const std::string c0 = g.Node("Squeeze", {g.Node("Slice", {feats, g.Ints({0}), g.Ints({1}), g.Ints({2})}),
                                              g.Ints({2})});
    voiced = VadDecisions(e, *front_end.vad, c0);
  }
  if (front_end.cmn_window > 0) feats = SlidingCmn(e, feats, front_end.cmn_window);
  if (!voiced.empty()) {
    // One waveform: keep the voiced frames of row 0.
    const std::string keep = g.Node("Squeeze", {voiced, g.Ints({0})});
    feats = g.Node("Compress", {feats, keep}, [](OnnxNode& node) { SetInt(node, "axis", 1); });
  }
  return feats;
}

}  // namespace

OnnxExportSummary ExportOnnx(nnet::SpeakerNet& net, const std::filesystem::path& out,
                             const std::optional<OnnxFrontEnd>& front_end) {
  const nnet::SpeakerNetInfo info = net.info();
  if (front_end) CheckFrontEnd(*front_end, info);
  OnnxGraph graph;
  graph.name = info.architecture;
  graph.doc = fmt::format("{} speaker-embedding network: {} -> embedding [batch, {}]", info.architecture,
                          front_end ? "waveform [batch, samples]" : fmt::format("feats [batch, frames, {}]", info.feat_dim),
                          info.embedding_size);
  GraphBuilder builder(&graph);
  Emitter emitter(builder);

  torch::NoGradGuard no_grad;
  std::string embedding;
  const std::string input = front_end ? "waveform" : "feats";
  if (auto* margin = dynamic_cast<nnet::MarginNetImpl*>(&net)) {
    const std::string feats = front_end ? FrontEndGraph(emitter, *front_end, input) : input;
    if (auto resnet = std::dynamic_pointer_cast<nnet::ResNetImpl>(margin->model())) {
      embedding = ResNetGraph(emitter, *resnet, feats);
    } else if (auto ecapa = std::dynamic_pointer_cast<nnet::EcapaTdnnImpl>(margin->model())) {
      embedding = EcapaGraph(emitter, *ecapa, feats);
    } else {
      throw std::invalid_argument(fmt::format("ONNX export: no graph for the embedding model of {}", info.architecture));
    }
  } else if (auto* xvector = dynamic_cast<nnet::XvectorNetImpl*>(&net)) {
    embedding = XvectorGraph(emitter, *xvector, front_end ? FrontEndGraph(emitter, *front_end, input) : input);
  } else {
    throw std::invalid_argument(fmt::format("ONNX export: no graph for a {} network", info.architecture));
  }
  builder.Output(embedding, "embedding");
  if (front_end) {
    // With the VAD, one waveform at a time (its voiced frames are selected).
    const bool one = front_end->kind == OnnxFrontEnd::Kind::kMfcc && front_end->vad.has_value();
    graph.inputs.push_back({"waveform", {{one ? "" : "batch", one ? 1 : 0}, {"samples", 0}}});
  } else {
    graph.inputs.push_back({"feats", {{"batch", 0}, {"frames", 0}, {"", info.feat_dim}}});
  }
  graph.outputs.push_back({"embedding", {{"batch", 0}, {"", info.embedding_size}}});
  const std::int64_t bytes = WriteOnnxModel(graph, out);

  OnnxExportSummary summary;
  summary.architecture = info.architecture;
  summary.feat_dim = info.feat_dim;
  summary.embedding_size = info.embedding_size;
  summary.min_frames = info.min_frames;
  summary.nodes = static_cast<std::int64_t>(graph.nodes.size());
  summary.initializers = static_cast<std::int64_t>(graph.initializers.size());
  summary.bytes = bytes;
  return summary;
}


}  // namespace asv::deploy
