// ONNX models as plain data, and their protobuf encoding: the part of onnx.proto (IR version 8,
// opset 17) that an inference graph of an image classifier needs — nodes with int / float / ints /
// string attributes, float32 and int64 initializers, typed graph inputs and outputs (fixed or named
// symbolic dims), opset imports and the model's metadata_props.
//
// The encoder is our own (varints, fixed32 floats and length-delimited fields, ~150 lines) rather
// than Debian's libonnx + protobuf; docs/export.md gives the measurements behind that choice. It
// writes every field in field-number order with repeated scalars unpacked, exactly as Python's
// protobuf serialises onnx.proto (proto2), so its bytes equal `onnx.helper`'s for the same model.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace ember::io {

// TensorProto.DataType values used here.
inline constexpr int32_t kOnnxFloat = 1;
inline constexpr int32_t kOnnxInt64 = 7;

struct OnnxAttribute {
  enum class Kind { Float = 1, Int = 2, String = 3, Ints = 7 };  // AttributeProto.AttributeType
  std::string name;
  Kind kind = Kind::Int;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<int64_t> ints;

  static OnnxAttribute of_float(std::string name, float v);
  static OnnxAttribute of_int(std::string name, int64_t v);
  static OnnxAttribute of_string(std::string name, std::string v);
  static OnnxAttribute of_ints(std::string name, std::vector<int64_t> v);
};

struct OnnxNode {
  std::string op_type;                 // "Conv", "Gemm", ... (default ai.onnx domain)
  std::string name;                    // unique in the graph
  std::vector<std::string> inputs, outputs;
  std::vector<OnnxAttribute> attributes;
};

// An initializer: float32 (floats) or int64 (int64s) data, row-major, stored as raw_data.
struct OnnxTensor {
  std::string name;
  std::vector<int64_t> dims;
  int32_t data_type = kOnnxFloat;
  std::vector<float> floats;
  std::vector<int64_t> int64s;
};

// One dim of a graph input/output: a fixed size (value >= 0) or a symbolic name ("batch").
struct OnnxDim {
  int64_t value = -1;
  std::string param;
};
struct OnnxValueInfo {
  std::string name;
  int32_t elem_type = kOnnxFloat;
  std::vector<OnnxDim> shape;
};

struct OnnxGraph {
  std::string name;
  std::vector<OnnxNode> nodes;  // in topological order
  std::vector<OnnxTensor> initializers;
  std::vector<OnnxValueInfo> inputs, outputs;
};

struct OnnxModel {
  int64_t ir_version = 8;  // the IR of ONNX 1.10-1.12, which introduced opset 16/17
  int64_t opset = 17;      // ai.onnx
  std::string producer_name = "ember", producer_version, doc_string;
  OnnxGraph graph;
  std::vector<std::pair<std::string, std::string>> metadata;  // metadata_props, in this order
};

// The ModelProto bytes. Throws ValueError for what a reader would reject: a tensor whose data size
// does not match its dims, an empty op_type or value name, a negative dim.
std::vector<uint8_t> onnx_serialize(const OnnxModel& model);

// onnx_serialize + write_file_atomic (IOError naming the path).
void onnx_save(const std::filesystem::path& path, const OnnxModel& model);

}  // namespace ember::io
