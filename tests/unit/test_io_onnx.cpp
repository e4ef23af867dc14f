// The ONNX encoder (io/onnx.h) and the module exporter (nn/export_onnx.h): bytes equal to what
// Python's onnx.helper writes for the same model, a wire-format reader that walks an exported zoo
// model, and the exporter's errors. Running the graphs is tests/export/ (onnxruntime, PyTorch).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "ember/ember.h"
#include "ember/io/onnx.h"
#include "ember/nn/export_onnx.h"
#include "ember/nn/models.h"
#include "ember/nn/spec.h"

using namespace ember;
using io::OnnxAttribute;

namespace {

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> b;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) b.push_back(uint8_t(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return b;
}

// A minimal protobuf reader: the fields of one message as (field number -> raw values), where a
// varint or fixed32 value is kept as its integer and a length-delimited one as its bytes.
struct Field {
  uint64_t number = 0;
  std::string bytes;
};
std::multimap<int, Field> read_message(const std::string& m) {
  std::multimap<int, Field> out;
  size_t i = 0;
  auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      EXPECT_LT(i, m.size()) << "truncated varint";
      if (i >= m.size()) return v;
      uint8_t b = uint8_t(m[i++]);
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  };
  while (i < m.size()) {
    uint64_t key = varint();
    Field f;
    switch (key & 7) {
      case 0: f.number = varint(); break;
      case 2: {
        uint64_t n = varint();
        EXPECT_LE(i + n, m.size()) << "length runs past the message";
        f.bytes = m.substr(i, n);
        i += n;
        break;
      }
      case 5:
        for (int b = 0; b < 4; ++b) f.number |= uint64_t(uint8_t(m[i + b])) << (8 * b);
        i += 4;
        break;
      default: ADD_FAILURE() << "unexpected wire type " << (key & 7); return out;
    }
    out.emplace(int(key >> 3), f);
  }
  return out;
}
std::vector<Field> all(const std::multimap<int, Field>& m, int field) {
  std::vector<Field> v;
  for (auto [a, b] = m.equal_range(field); a != b; ++a) v.push_back(a->second);
  return v;
}

io::OnnxModel tiny_model() {
  io::OnnxModel m;
  m.producer_version = "0.1.0";
  m.doc_string = "tiny";
  m.graph.name = "g";
  m.graph.nodes.push_back({"Conv", "conv", {"x", "w"}, {"c"},
                           {OnnxAttribute::of_string("auto_pad", "NOTSET"), OnnxAttribute::of_int("group", 1),
                            OnnxAttribute::of_ints("kernel_shape", {1, 1})}});
  m.graph.nodes.push_back({"LeakyRelu", "leaky", {"c"}, {"y"}, {OnnxAttribute::of_float("alpha", 0.5f)}});
  io::OnnxTensor w;
  w.name = "w", w.dims = {1, 1, 1, 1}, w.floats = {2.0f};
  io::OnnxTensor s;
  s.name = "shape", s.dims = {2}, s.data_type = io::kOnnxInt64, s.int64s = {1, -1};
  m.graph.initializers = {w, s};
  std::vector<io::OnnxDim> shape = {{-1, "batch"}, {1, ""}, {2, ""}, {2, ""}};
  m.graph.inputs = {{"x", io::kOnnxFloat, shape}};
  m.graph.outputs = {{"y", io::kOnnxFloat, shape}};
  m.metadata = {{"k", "v"}};
  return m;
}

}  // namespace

// The same model built with onnx 1.23's helper (make_node, make_tensor(raw=True),
// make_tensor_value_info, make_graph, a ModelProto with ir_version 8 and opset 17) and
// SerializeToString(); onnx.checker.check_model accepts it.
TEST(OnnxEncoder, BytesEqualPythonOnnxHelper) {
  const std::vector<uint8_t> want = from_hex(
      "08081205656d6265721a05302e312e30320474696e793af9010a510a01780a01771201631a04636f6e762204436f6e762a150a08617574"
      "6f5f70616422064e4f54534554a001032a0c0a0567726f75701801a001022a150a0c6b65726e656c5f736861706540014001a001070a29"
      "0a01631201791a056c65616b7922094c65616b7952656c752a0f0a05616c706861150000003fa001011201672a13080108010801080110"
      "014201774a04000000402a1d08021007420573686170654a100100000000000000ffffffffffffffff5a200a0178121b0a19080112150a"
      "07120562617463680a0208010a0208020a02080262200a0179121b0a19080112150a07120562617463680a0208010a0208020a020802"
      "42040a00101172060a016b120176");
  EXPECT_EQ(io::onnx_serialize(tiny_model()), want);
}

TEST(OnnxEncoder, RejectsWhatAReaderWould) {
  io::OnnxModel m = tiny_model();
  m.graph.initializers[0].floats.push_back(1.0f);  // 2 values for 1 element
  EXPECT_THROW(io::onnx_serialize(m), ValueError);
  m = tiny_model();
  m.graph.nodes[0].op_type.clear();
  EXPECT_THROW(io::onnx_serialize(m), ValueError);
  m = tiny_model();
  m.graph.inputs[0].shape[1] = {};  // neither a size nor a name
  EXPECT_THROW(io::onnx_serialize(m), ValueError);
}

// lenet5 exported and read back field by field: opset 17, the normalisation nodes first, the op
// sequence of LeNet5::forward, initializers named and shaped as the state_dict, "batch" inputs.
TEST(OnnxExport, Lenet5GraphReadsBack) {
  Generator gen(0);
  auto model = models::lenet5(10, 1, 28, &gen);
  nn::OnnxExportOptions o;
  o.input_shape = {1, 28, 28};
  o.mean = {0.286f}, o.std = {0.353f};
  o.metadata = {{"model", "lenet5"}};
  const std::vector<uint8_t> bytes = io::onnx_serialize(nn::to_onnx(*model, o));
  const auto top = read_message(std::string(bytes.begin(), bytes.end()));
  EXPECT_EQ(all(top, 1).at(0).number, 8u);  // ir_version
  const auto opset = read_message(all(top, 8).at(0).bytes);
  EXPECT_EQ(all(opset, 2).at(0).number, 17u);
  const auto meta = read_message(all(top, 14).at(0).bytes);
  EXPECT_EQ(all(meta, 1).at(0).bytes, "model");
  const auto graph = read_message(all(top, 7).at(0).bytes);
  std::vector<std::string> ops;
  for (const Field& n : all(graph, 1)) ops.push_back(all(read_message(n.bytes), 4).at(0).bytes);
  const std::vector<std::string> want = {"Sub", "Div",     "Conv", "Relu", "MaxPool", "Conv", "Relu", "MaxPool",
                                         "Flatten", "Gemm", "Relu", "Gemm", "Relu",    "Gemm"};
  EXPECT_EQ(ops, want);
  std::map<std::string, std::vector<int64_t>> inits;
  for (const Field& t : all(graph, 5)) {
    const auto tf = read_message(t.bytes);
    std::vector<int64_t> dims;
    for (const Field& d : all(tf, 1)) dims.push_back(int64_t(d.number));
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    EXPECT_EQ(all(tf, 9).at(0).bytes.size(), size_t(n) * 4) << all(tf, 8).at(0).bytes;
    inits[all(tf, 8).at(0).bytes] = dims;
  }
  for (const auto& [k, t] : model->state_dict()) EXPECT_EQ(inits.at(k), t.sizes()) << k;
  EXPECT_EQ(inits.at("input_mean"), (std::vector<int64_t>{1, 1, 1, 1}));
  // The last node writes "logits"; the input is (batch, 1, 28, 28).
  EXPECT_EQ(all(read_message(all(graph, 1).back().bytes), 2).at(0).bytes, "logits");
  const auto input = read_message(all(graph, 11).at(0).bytes);
  EXPECT_EQ(all(input, 1).at(0).bytes, "input");
  const auto tensor_type = read_message(all(read_message(all(input, 2).at(0).bytes), 1).at(0).bytes);
  std::vector<std::string> dims;
  for (const Field& d : all(read_message(all(tensor_type, 2).at(0).bytes), 1)) {
    const auto df = read_message(d.bytes);
    dims.push_back(df.count(2) ? all(df, 2)[0].bytes : std::to_string(all(df, 1)[0].number));
  }
  EXPECT_EQ(dims, (std::vector<std::string>{"batch", "1", "28", "28"}));
}

TEST(OnnxExport, EveryZooModelAndSpecLayerExports) {
  for (const std::string& name : models::names()) {
    Generator gen(0);
    const bool rgb = name == "alexnet_cifar" || name == "resnet_small" || models::design_size(name) > 28;
    const int64_t c = rgb ? 3 : 1, size = name == "alexnet" ? 64 : c == 3 ? 32 : 28;  // alexnet: >= 63
    auto model = models::create(name, 10, c, size, &gen);
    nn::OnnxExportOptions o;
    o.input_shape = {c, size, size};
    io::OnnxModel m = nn::to_onnx(*model, o);
    EXPECT_EQ(m.graph.outputs.at(0).shape.at(1).value, 10) << name;
    EXPECT_EQ(m.graph.nodes.back().outputs.at(0), "logits") << name;
    EXPECT_NE(m.graph.nodes.front().op_type, "Sub") << name << ": no mean given, no normalisation";
  }
}

TEST(OnnxExport, ErrorsNameTheProblem) {
  Generator gen(0);
  auto model = models::lenet5(10, 1, 28, &gen);
  nn::OnnxExportOptions o;
  o.input_shape = {1, 28};
  EXPECT_THROW(nn::to_onnx(*model, o), ValueError);
  o.input_shape = {1, 28, 28};
  o.mean = {0.5f, 0.5f}, o.std = {0.5f, 0.5f};
  EXPECT_THROW(nn::to_onnx(*model, o), ValueError);
  o.mean = {}, o.std = {};
  o.input_shape = {1, 32, 32};  // fc1 expects 400 features, gets 576
  try {
    nn::to_onnx(*model, o);
    FAIL() << "no error for a wrong input size";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("fc1"), std::string::npos) << e.what();
  }
  struct Custom : nn::Module {
    Custom() : nn::Module("MyBlock") {}
  };
  auto seq = std::make_shared<nn::Sequential>();
  seq->push_back(std::make_shared<Custom>());
  try {
    nn::to_onnx(*seq, o);
    FAIL() << "no error for an unknown module";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("'0' (MyBlock)"), std::string::npos) << e.what();
  }
}

// --fold-bn: bncnn's two BatchNormalization nodes disappear into the convolutions before them, whose
// initializers hold w * s and (b - mean) * s + beta (s = gamma / sqrt(var + eps)); the rest of the
// graph is the unfolded one. Off by default.
TEST(OnnxExport, FoldBatchNormFoldsEachConvolutionsBatchNorm) {
  Generator gen(2);
  auto model = models::bncnn48_fc128(10, 1, 28, &gen);
  {
    NoGradGuard ng;
    for (auto& [name, m] : model->named_modules())
      if (auto* bn = dynamic_cast<nn::BatchNorm2d*>(m.get())) {
        const Shape c{bn->num_features};
        bn->running_mean.copy_(add(rand(c, {}, &gen), -0.5));
        bn->running_var.copy_(add(rand(c, {}, &gen), 0.5));
        bn->weight.copy_(add(rand(c, {}, &gen), 0.5));
        bn->bias.copy_(add(rand(c, {}, &gen), -0.5));
      }
  }
  nn::OnnxExportOptions o;
  o.input_shape = {1, 28, 28};
  auto ops = [](const io::OnnxModel& m) {
    std::vector<std::string> v;
    for (const auto& n : m.graph.nodes) v.push_back(n.op_type);
    return v;
  };
  const io::OnnxModel plain = nn::to_onnx(*model, o);
  o.fold_batch_norm = true;
  const io::OnnxModel folded = nn::to_onnx(*model, o);
  std::vector<std::string> want = ops(plain);
  want.erase(std::remove(want.begin(), want.end(), "BatchNormalization"), want.end());
  EXPECT_NE(want.size(), ops(plain).size());
  EXPECT_EQ(ops(folded), want);
  auto init = [&](const std::string& name) -> const io::OnnxTensor& {
    for (const auto& t : folded.graph.initializers)
      if (t.name == name) return t;
    throw std::runtime_error("no initializer " + name);
  };
  for (const char* layer : {"conv1", "conv2"}) {
    SCOPED_TRACE(layer);
    nn::Module* conv = nullptr;
    nn::BatchNorm2d* bn = nullptr;
    for (auto& [name, m] : model->named_modules()) {
      if (name == layer) conv = m.get();
      if (name == std::string("bn") + (layer + 4)) bn = dynamic_cast<nn::BatchNorm2d*>(m.get());
    }
    ASSERT_TRUE(conv && bn);
    auto* c = dynamic_cast<nn::Conv2d*>(conv);
    const auto w = c->weight.to_vector<float>();
    ASSERT_FALSE(c->bias.defined());  // bncnn's convolutions have none: the fold adds "<conv>.bias"
    const std::vector<float> b(size_t(c->out_channels), 0.0f);
    const auto mean = bn->running_mean.to_vector<float>(), var = bn->running_var.to_vector<float>();
    const auto gamma = bn->weight.to_vector<float>(), beta = bn->bias.to_vector<float>();
    const io::OnnxTensor& fw = init(std::string(layer) + ".weight");
    const io::OnnxTensor& fb = init(std::string(layer) + ".bias");
    const size_t per = w.size() / b.size();
    for (size_t oc = 0; oc < b.size(); ++oc) {
      const double s = gamma[oc] / std::sqrt(double(var[oc]) + bn->eps);
      EXPECT_FLOAT_EQ(fb.floats[oc], float((b[oc] - double(mean[oc])) * s + beta[oc]));
      for (size_t k = 0; k < per; ++k) EXPECT_FLOAT_EQ(fw.floats[oc * per + k], float(w[oc * per + k] * s));
    }
  }
}
