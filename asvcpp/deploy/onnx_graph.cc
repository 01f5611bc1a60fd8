#include "asvcpp/deploy/onnx_graph.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include "asvcpp/base/error.h"

#ifdef ASV_WITH_ONNX
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#endif

namespace asv::deploy {

void OnnxNode::SetInt(const std::string& attribute, std::int64_t value) {
  OnnxAttribute a;
  a.name = attribute;
  a.kind = OnnxAttribute::Kind::kInt;
  a.i = value;
  attributes.push_back(std::move(a));
}

void OnnxNode::SetInts(const std::string& attribute, std::vector<std::int64_t> values) {
  OnnxAttribute a;
  a.name = attribute;
  a.kind = OnnxAttribute::Kind::kInts;
  a.ints = std::move(values);
  attributes.push_back(std::move(a));
}

void OnnxNode::SetFloat(const std::string& attribute, float value) {
  OnnxAttribute a;
  a.name = attribute;
  a.kind = OnnxAttribute::Kind::kFloat;
  a.f = value;
  attributes.push_back(std::move(a));
}

#ifndef ASV_WITH_ONNX

bool OnnxWriterAvailable() { return false; }

std::int64_t WriteOnnxModel(const OnnxGraph& /*graph*/, const std::filesystem::path& out) {
  throw ConfigError(fmt::format("cannot write {}: this asvcpp was built without ONNX (install libonnx-dev, "
                                "tools/setup.sh does, and build again)",
                                out.string()));
}

#else

bool OnnxWriterAvailable() { return true; }

namespace {

void SetValue(::onnx::ValueInfoProto* info, const OnnxValue& value) {
  info->set_name(value.name);
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(::onnx::TensorProto::FLOAT);
  for (const auto& [param, size] : value.dims) {
    auto* dim = tensor->mutable_shape()->add_dim();
    if (param.empty()) {
      dim->set_dim_value(size);
    } else {
      dim->set_dim_param(param);
    }
  }
}

}  // namespace

std::int64_t WriteOnnxModel(const OnnxGraph& graph, const std::filesystem::path& out) {
  ::onnx::ModelProto model;
  model.set_ir_version(8);  // ONNX 1.12's IR version, for opset 17
  model.set_producer_name("asvcpp");
  model.set_model_version(1);
  model.set_doc_string(graph.doc);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(graph.opset);
  auto* g = model.mutable_graph();
  g->set_name(graph.name);
  for (const auto& n : graph.nodes) {
    auto* node = g->add_node();
    node->set_op_type(n.op);
    node->set_name(n.name);
    for (const auto& in : n.inputs) node->add_input(in);
    for (const auto& o : n.outputs) node->add_output(o);
    for (const auto& a : n.attributes) {
      auto* attribute = node->add_attribute();
      attribute->set_name(a.name);
      switch (a.kind) {
        case OnnxAttribute::Kind::kInt:
          attribute->set_type(::onnx::AttributeProto::INT);
          attribute->set_i(a.i);
          break;
        case OnnxAttribute::Kind::kInts:
          attribute->set_type(::onnx::AttributeProto::INTS);
          for (std::int64_t v : a.ints) attribute->add_ints(v);
          break;
        case OnnxAttribute::Kind::kFloat:
          attribute->set_type(::onnx::AttributeProto::FLOAT);
          attribute->set_f(a.f);
          break;
      }
    }
  }
  for (const auto& t : graph.initializers) {
    auto* init = g->add_initializer();
    init->set_name(t.name);
    init->set_data_type(static_cast<std::int32_t>(t.type));
    for (std::int64_t d : t.dims) init->add_dims(d);
    if (t.type == OnnxType::kFloat) {
      init->set_raw_data(std::string(reinterpret_cast<const char*>(t.floats.data()), t.floats.size() * sizeof(float)));
    } else {
      for (std::int64_t v : t.ints) init->add_int64_data(v);
    }
  }
  for (const auto& v : graph.inputs) SetValue(g->add_input(), v);
  for (const auto& v : graph.outputs) SetValue(g->add_output(), v);

  try {
    ::onnx::checker::check_model(model);
    ::onnx::shape_inference::InferShapes(model);
  } catch (const std::exception& e) {
    throw DataError(fmt::format("ONNX model {} for {}: the graph does not pass ONNX's checks: {}", graph.name,
                                out.string(), e.what()));
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    throw DataError(fmt::format("ONNX model {}: cannot serialise it for {}", graph.name, out.string()));
  }
  const std::filesystem::path tmp = out.string() + ".tmp";
  {
    std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    file.close();
    if (!file) throw DataError(fmt::format("cannot write {}: {}", tmp.string(), std::strerror(errno)));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, out, ec);
  if (ec) throw DataError(fmt::format("cannot rename {} to {}: {}", tmp.string(), out.string(), ec.message()));
  return static_cast<std::int64_t>(bytes.size());
}

#endif  // ASV_WITH_ONNX

}  // namespace asv::deploy
