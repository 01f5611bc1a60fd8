// A plain description of an ONNX model (nodes, attributes, initializers, typed inputs and
// outputs) and its writer. The writer is the only code that touches ONNX's protobuf classes
// (Debian's libonnx-dev), in a library without LibTorch: PyTorch wheels ship protobuf headers of
// their own, which must not meet the system's protobuf of libonnx in one translation unit.
// onnx_export.cc builds the description from a network.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace asv::deploy {

/// ONNX's TensorProto element types used here (the values of onnx.proto's DataType).
enum class OnnxType : std::int32_t { kFloat = 1, kInt64 = 7, kBool = 9, kDouble = 11 };

struct OnnxAttribute {
  enum class Kind { kInt, kInts, kFloat };
  std::string name;
  Kind kind = Kind::kInt;
  std::int64_t i = 0;
  std::vector<std::int64_t> ints;
  float f = 0;
};

struct OnnxNode {
  std::string op;  ///< operator of the default domain (ai.onnx)
  std::string name;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<OnnxAttribute> attributes;

  void SetInt(const std::string& attribute, std::int64_t value);
  void SetInts(const std::string& attribute, std::vector<std::int64_t> values);
  void SetFloat(const std::string& attribute, float value);
};

/// A constant tensor: float32 values (kFloat) or int64 values (kInt64), row-major in `dims`
/// (no dims: a scalar).
struct OnnxTensor {
  std::string name;
  OnnxType type = OnnxType::kFloat;
  std::vector<std::int64_t> dims;
  std::vector<float> floats;
  std::vector<std::int64_t> ints;
};

/// A graph input or output: float32 with these dimensions, each a fixed size or, when its name is
/// not empty, a named dynamic axis ("batch", "frames").
struct OnnxValue {
  std::string name;
  std::vector<std::pair<std::string, std::int64_t>> dims;
};

struct OnnxGraph {
  std::string name;
  std::string doc;
  std::int64_t opset = 17;
  std::vector<OnnxNode> nodes;  ///< in topological order
  std::vector<OnnxTensor> initializers;
  std::vector<OnnxValue> inputs;
  std::vector<OnnxValue> outputs;
};

/// True when this build can write ONNX (it found libonnx-dev).
bool OnnxWriterAvailable();

/// Writes `graph` as an ONNX model (IR version 8, producer "asvcpp") to `out`, through a temporary
/// file in the same folder renamed when complete, after ONNX's checker (onnx::checker::check_model)
/// and shape inference (onnx::shape_inference::InferShapes) accepted it. Returns the file's size in
/// bytes. Throws DataError when a check fails (with ONNX's message) or `out` cannot be written
/// (naming the file); ConfigError when this build has no ONNX.
std::int64_t WriteOnnxModel(const OnnxGraph& graph, const std::filesystem::path& out);

}  // namespace asv::deploy
