// The protobuf encoding of io::OnnxModel (see onnx.h): a wire-format writer (varint, fixed32 and
// length-delimited fields) and one function per onnx.proto message, fields in field-number order.
#include <bit>
#include <cstring>

#include "ember/core/error.h"
#include "ember/io/atomic_file.h"
#include "ember/io/onnx.h"

namespace ember::io {

OnnxAttribute OnnxAttribute::of_float(std::string name, float v) {
  OnnxAttribute a;
  a.name = std::move(name), a.kind = Kind::Float, a.f = v;
  return a;
}
OnnxAttribute OnnxAttribute::of_int(std::string name, int64_t v) {
  OnnxAttribute a;
  a.name = std::move(name), a.kind = Kind::Int, a.i = v;
  return a;
}
OnnxAttribute OnnxAttribute::of_string(std::string name, std::string v) {
  OnnxAttribute a;
  a.name = std::move(name), a.kind = Kind::String, a.s = std::move(v);
  return a;
}
OnnxAttribute OnnxAttribute::of_ints(std::string name, std::vector<int64_t> v) {
  OnnxAttribute a;
  a.name = std::move(name), a.kind = Kind::Ints, a.ints = std::move(v);
  return a;
}

namespace {

// Protobuf wire format: a key is (field << 3 | wire type); 0 = varint, 2 = length-delimited,
// 5 = fixed32. Negative int64 values are ten-byte varints (two's complement), as protobuf does.
class Wire {
 public:
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(uint8_t(v | 0x80));
      v >>= 7;
    }
    out_.push_back(uint8_t(v));
  }
  void key(int field, int type) { varint(uint64_t(field) << 3 | uint64_t(type)); }
  void int_field(int field, int64_t v) {
    key(field, 0);
    varint(uint64_t(v));
  }
  void float_field(int field, float v) {
    key(field, 5);
    const uint32_t bits = std::bit_cast<uint32_t>(v);
    for (int b = 0; b < 4; ++b) out_.push_back(uint8_t(bits >> (8 * b)));
  }
  void bytes_field(int field, const void* data, size_t n) {
    key(field, 2);
    varint(n);
    const auto* p = static_cast<const uint8_t*>(data);
    out_.insert(out_.end(), p, p + n);
  }
  void string_field(int field, const std::string& s) { bytes_field(field, s.data(), s.size()); }
  // An optional string: written only when set, as protobuf omits unset optional fields.
  void opt_string(int field, const std::string& s) {
    if (!s.empty()) string_field(field, s);
  }
  void message(int field, const Wire& m) { bytes_field(field, m.out_.data(), m.out_.size()); }
  std::vector<uint8_t>& bytes() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

void check_name(const std::string& name, const char* what) {
  EMBER_CHECK(!name.empty(), ValueError, "onnx_serialize: a ", what, " has an empty name");
}

Wire attribute(const OnnxAttribute& a) {
  check_name(a.name, "node attribute");
  Wire w;
  w.string_field(1, a.name);
  switch (a.kind) {
    case OnnxAttribute::Kind::Float: w.float_field(2, a.f); break;
    case OnnxAttribute::Kind::Int: w.int_field(3, a.i); break;
    case OnnxAttribute::Kind::String: w.string_field(4, a.s); break;
    case OnnxAttribute::Kind::Ints:
      for (int64_t v : a.ints) w.int_field(8, v);
      break;
  }
  w.int_field(20, int64_t(a.kind));
  return w;
}

Wire node(const OnnxNode& n) {
  EMBER_CHECK(!n.op_type.empty(), ValueError, "onnx_serialize: node '", n.name, "' has no op_type");
  Wire w;
  for (const auto& s : n.inputs) w.string_field(1, s);  // "" is a valid (omitted optional) input
  for (const auto& s : n.outputs) {
    check_name(s, "node output");
    w.string_field(2, s);
  }
  w.opt_string(3, n.name);
  w.string_field(4, n.op_type);
  for (const auto& a : n.attributes) w.message(5, attribute(a));
  return w;
}

Wire tensor(const OnnxTensor& t) {
  check_name(t.name, "initializer");
  int64_t numel = 1;
  for (int64_t d : t.dims) {
    EMBER_CHECK(d >= 0, ValueError, "onnx_serialize: initializer '", t.name, "' has a negative dim ", d);
    numel *= d;
  }
  const bool is_float = t.data_type == kOnnxFloat;
  EMBER_CHECK(is_float || t.data_type == kOnnxInt64, ValueError, "onnx_serialize: initializer '", t.name,
              "' has data_type ", t.data_type, "; only FLOAT (1) and INT64 (7) are written");
  const size_t have = is_float ? t.floats.size() : t.int64s.size();
  EMBER_CHECK(int64_t(have) == numel, ValueError, "onnx_serialize: initializer '", t.name, "' has ", have,
              " values for dims of ", numel, " elements");
  static_assert(std::endian::native == std::endian::little, "raw_data is little-endian");
  Wire w;
  for (int64_t d : t.dims) w.int_field(1, d);
  w.int_field(2, t.data_type);
  w.string_field(8, t.name);
  if (is_float) w.bytes_field(9, t.floats.data(), t.floats.size() * sizeof(float));
  else w.bytes_field(9, t.int64s.data(), t.int64s.size() * sizeof(int64_t));
  return w;
}

Wire value_info(const OnnxValueInfo& v) {
  check_name(v.name, "graph input or output");
  Wire shape;
  for (const OnnxDim& d : v.shape) {
    Wire dim;
    if (!d.param.empty()) dim.string_field(2, d.param);
    else {
      EMBER_CHECK(d.value >= 0, ValueError, "onnx_serialize: '", v.name, "' has a dim with neither a size nor a name");
      dim.int_field(1, d.value);
    }
    shape.message(1, dim);
  }
  Wire tensor_type;
  tensor_type.int_field(1, v.elem_type);
  tensor_type.message(2, shape);
  Wire type;
  type.message(1, tensor_type);
  Wire w;
  w.string_field(1, v.name);
  w.message(2, type);
  return w;
}

Wire graph(const OnnxGraph& g) {
  Wire w;
  for (const auto& n : g.nodes) w.message(1, node(n));
  w.opt_string(2, g.name);
  for (const auto& t : g.initializers) w.message(5, tensor(t));
  for (const auto& v : g.inputs) w.message(11, value_info(v));
  for (const auto& v : g.outputs) w.message(12, value_info(v));
  return w;
}

}  // namespace

std::vector<uint8_t> onnx_serialize(const OnnxModel& m) {
  Wire w;
  w.int_field(1, m.ir_version);
  w.opt_string(2, m.producer_name);
  w.opt_string(3, m.producer_version);
  w.opt_string(6, m.doc_string);
  w.message(7, graph(m.graph));
  Wire opset;
  opset.string_field(1, "");  // the default domain, ai.onnx
  opset.int_field(2, m.opset);
  w.message(8, opset);
  for (const auto& [k, v] : m.metadata) {
    check_name(k, "metadata_props entry");
    Wire e;
    e.string_field(1, k);
    e.string_field(2, v);
    w.message(14, e);
  }
  return std::move(w.bytes());
}

void onnx_save(const std::filesystem::path& path, const OnnxModel& model) {
  const std::vector<uint8_t> bytes = onnx_serialize(model);
  write_file_atomic(path, bytes);
}

}  // namespace ember::io
