// Module -> ONNX graph (see nn/export_onnx.h): one emit rule per layer type, and for each zoo model
// the sequence of its forward() as steps over its named children. The parity tests
// (tests/export/) run every zoo model and a spec with every layer kind in onnxruntime against
// ember's own logits, so a rule that drifts from forward() fails there.
#include "ember/nn/export_onnx.h"

#include <array>
#include <cmath>
#include <map>

#include "ember/nn/layers.h"

namespace ember::nn {
namespace {

using io::OnnxAttribute;

// A value in the graph and its per-sample shape: (C, H, W) for images, (F) after a flatten.
struct Value {
  std::string name;
  Shape shape;
};

class GraphBuilder {
 public:
  io::OnnxGraph graph;
  bool fold_batch_norm = false;  // OnnxExportOptions::fold_batch_norm

  // A float32 initializer holding `t` under `name` (a state_dict key).
  std::string weight(const std::string& name, const Tensor& t) {
    io::OnnxTensor w;
    w.name = name;
    w.dims = t.sizes();
    w.floats = t.to(DType::Float32).to_vector<float>();
    graph.initializers.push_back(std::move(w));
    return name;
  }
  std::string constant(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
    io::OnnxTensor w;
    w.name = name;
    w.dims = std::move(dims);
    w.floats = std::move(values);
    graph.initializers.push_back(std::move(w));
    return name;
  }
  // Adds a node with one output named after the node ("<hint>" or "<hint>_2" when taken).
  std::string node(const std::string& op, std::vector<std::string> inputs, const std::string& hint,
                   std::vector<OnnxAttribute> attrs = {}) {
    std::string name = unique(hint.empty() ? op : hint);
    graph.nodes.push_back({op, name, std::move(inputs), {name}, std::move(attrs)});
    return name;
  }

 private:
  std::string unique(const std::string& hint) {
    int& n = used_[hint];
    return ++n == 1 ? hint : hint + "_" + std::to_string(n);
  }
  std::map<std::string, int> used_;
};

int64_t conv_out(int64_t size, int64_t k, int64_t s, int64_t p, int64_t d) { return (size + 2 * p - d * (k - 1) - 1) / s + 1; }
// PyTorch's pooling size: with ceil_mode, the last window must start inside the input or left padding.
int64_t pool_out(int64_t size, int64_t k, int64_t s, int64_t p, bool ceil_mode) {
  int64_t num = size + 2 * p - k;
  int64_t o = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
  if (ceil_mode && (o - 1) * s >= size + p) --o;
  return o;
}

std::string where(const std::string& prefix, const Module& m) {
  return "'" + (prefix.empty() ? std::string("(the model)") : prefix.substr(0, prefix.size() - 1)) + "' (" +
         m.type_name() + ")";
}

const Module& child(const Module& m, const std::string& prefix, const std::string& name) {
  for (const auto& [n, c] : m.named_children())
    if (n == name) return *c;
  throw NotImplementedError("onnx export: " + where(prefix, m) + " has no child '" + name +
                            "'; its structure differs from the zoo model of that name");
}

Value emit(GraphBuilder& b, const Module& m, const std::string& prefix, Value x);

Value need_image(const Module& m, const std::string& prefix, Value x) {
  EMBER_CHECK(x.shape.size() == 3, ShapeError, "onnx export: ", where(prefix, m), " needs an image input (C, H, W), got ",
              shape_str(x.shape));
  return x;
}

Value relu(GraphBuilder& b, const std::string& hint, Value x) {
  return {b.node("Relu", {x.name}, hint), x.shape};
}

Value max_pool(GraphBuilder& b, const std::string& hint, Value x, int64_t k, int64_t s, int64_t p, bool ceil_mode) {
  std::vector<OnnxAttribute> a = {OnnxAttribute::of_int("ceil_mode", ceil_mode), OnnxAttribute::of_ints("kernel_shape", {k, k}),
                                  OnnxAttribute::of_ints("pads", {p, p, p, p}), OnnxAttribute::of_ints("strides", {s, s})};
  return {b.node("MaxPool", {x.name}, hint, std::move(a)),
          {x.shape[0], pool_out(x.shape[1], k, s, p, ceil_mode), pool_out(x.shape[2], k, s, p, ceil_mode)}};
}

Value flatten(GraphBuilder& b, const std::string& hint, Value x) {
  int64_t n = 1;
  for (int64_t d : x.shape) n *= d;
  return {b.node("Flatten", {x.name}, hint, {OnnxAttribute::of_int("axis", 1)}), {n}};
}

// (N, C, H, W) -> (N, C, o0, o1) as PyTorch: GlobalAveragePool for 1x1, AveragePool when the sizes
// divide, else the linear map it is — window matrices A_h (o0, H) and A_w^T (W, o1) applied by MatMul.
Value adaptive_avg_pool(GraphBuilder& b, const std::string& prefix, Value x, std::array<int64_t, 2> out) {
  const int64_t h = x.shape[1], w = x.shape[2];
  const std::string hint = prefix.empty() ? "adaptive_avg_pool" : prefix.substr(0, prefix.size() - 1);
  Shape shape{x.shape[0], out[0], out[1]};
  if (out[0] == 1 && out[1] == 1) return {b.node("GlobalAveragePool", {x.name}, hint), shape};
  if (h % out[0] == 0 && w % out[1] == 0) {
    const int64_t kh = h / out[0], kw = w / out[1];
    return {b.node("AveragePool", {x.name}, hint,
                   {OnnxAttribute::of_ints("kernel_shape", {kh, kw}), OnnxAttribute::of_ints("strides", {kh, kw})}),
            shape};
  }
  auto windows = [](int64_t in, int64_t o, bool transpose) {
    std::vector<float> a(size_t(in * o), 0.0f);
    for (int64_t i = 0; i < o; ++i) {
      const int64_t start = (i * in) / o, end = ((i + 1) * in + o - 1) / o;
      for (int64_t j = start; j < end; ++j) a[size_t(transpose ? j * o + i : i * in + j)] = 1.0f / float(end - start);
    }
    return a;
  };
  std::string ah = b.constant(hint + ".rows", {out[0], h}, windows(h, out[0], false));
  std::string aw = b.constant(hint + ".cols", {w, out[1]}, windows(w, out[1], true));
  std::string rows = b.node("MatMul", {ah, x.name}, hint + "_rows");
  return {b.node("MatMul", {rows, aw}, hint), shape};
}

Value emit_linear(GraphBuilder& b, const Linear& l, const std::string& prefix, Value x) {
  EMBER_CHECK(x.shape.size() == 1 && x.shape[0] == l.in_features, ShapeError, "onnx export: ", where(prefix, l),
              " expects (", l.in_features, ") features per sample, got ", shape_str(x.shape));
  std::vector<std::string> in = {x.name, b.weight(prefix + "weight", l.weight)};
  if (l.bias.defined()) in.push_back(b.weight(prefix + "bias", l.bias));
  return {b.node("Gemm", std::move(in), prefix + "Gemm", {OnnxAttribute::of_int("transB", 1)}), {l.out_features}};
}

Value emit_conv(GraphBuilder& b, const Conv2d& c, const std::string& prefix, Value x) {
  need_image(c, prefix, x);
  const auto& o = c.options;
  std::vector<std::string> in = {x.name, b.weight(prefix + "weight", c.weight)};
  if (c.bias.defined()) in.push_back(b.weight(prefix + "bias", c.bias));
  std::vector<OnnxAttribute> a = {
      OnnxAttribute::of_ints("dilations", {o.dilation[0], o.dilation[1]}), OnnxAttribute::of_int("group", o.groups),
      OnnxAttribute::of_ints("kernel_shape", {c.kernel_size[0], c.kernel_size[1]}),
      OnnxAttribute::of_ints("pads", {o.padding[0], o.padding[1], o.padding[0], o.padding[1]}),
      OnnxAttribute::of_ints("strides", {o.stride[0], o.stride[1]})};
  return {b.node("Conv", std::move(in), prefix + "Conv", std::move(a)),
          {c.out_channels, conv_out(x.shape[1], c.kernel_size[0], o.stride[0], o.padding[0], o.dilation[0]),
           conv_out(x.shape[2], c.kernel_size[1], o.stride[1], o.padding[1], o.dilation[1])}};
}

io::OnnxTensor* initializer(GraphBuilder& b, const std::string& name) {
  for (io::OnnxTensor& t : b.graph.initializers)
    if (t.name == name) return &t;
  return nullptr;
}

// With fold_batch_norm: when x is the output of the last node, a Conv whose weight (and bias) are
// initializers of this graph, folds `bn` into them and returns true (x then stands for bn's output).
bool fold_into_conv(GraphBuilder& b, const BatchNorm2d& bn, const Value& x) {
  if (!b.fold_batch_norm || b.graph.nodes.empty()) return false;
  io::OnnxNode& conv = b.graph.nodes.back();
  if (conv.op_type != "Conv" || conv.outputs.size() != 1 || conv.outputs[0] != x.name || conv.inputs.size() < 2) return false;
  io::OnnxTensor* w = initializer(b, conv.inputs[1]);
  io::OnnxTensor* bias = conv.inputs.size() > 2 ? initializer(b, conv.inputs[2]) : nullptr;
  const int64_t c = bn.num_features;
  if (!w || w->dims.empty() || w->dims[0] != c || (conv.inputs.size() > 2 && !bias)) return false;
  const std::vector<float> mean = bn.running_mean.to(DType::Float32).to_vector<float>();
  const std::vector<float> var = bn.running_var.to(DType::Float32).to_vector<float>();
  const std::vector<float> gamma = bn.affine ? bn.weight.to(DType::Float32).to_vector<float>() : std::vector<float>(size_t(c), 1.0f);
  const std::vector<float> beta = bn.affine ? bn.bias.to(DType::Float32).to_vector<float>() : std::vector<float>(size_t(c), 0.0f);
  if (!bias) {
    std::string name = conv.inputs[1];
    name = name.size() >= 6 && name.compare(name.size() - 6, 6, "weight") == 0 ? name.substr(0, name.size() - 6) + "bias"
                                                                            : name + ".folded_bias";
    conv.inputs.push_back(b.constant(name, {c}, std::vector<float>(size_t(c), 0.0f)));
    bias = &b.graph.initializers.back();
    w = initializer(b, conv.inputs[1]);  // push_back may have moved it
  }
  const size_t per = w->floats.size() / size_t(c);
  for (int64_t o = 0; o < c; ++o) {
    const double s = double(gamma[o]) / std::sqrt(double(var[o]) + bn.eps);
    for (size_t k = 0; k < per; ++k) w->floats[o * per + k] = float(double(w->floats[o * per + k]) * s);
    bias->floats[o] = float((double(bias->floats[o]) - double(mean[o])) * s + double(beta[o]));
  }
  return true;
}

Value emit_batch_norm(GraphBuilder& b, const BatchNorm2d& bn, const std::string& prefix, Value x) {
  need_image(bn, prefix, x);
  if (fold_into_conv(b, bn, x)) return x;
  const int64_t c = bn.num_features;
  std::string scale = bn.affine ? b.weight(prefix + "weight", bn.weight)
                                : b.constant(prefix + "weight", {c}, std::vector<float>(size_t(c), 1.0f));
  std::string bias = bn.affine ? b.weight(prefix + "bias", bn.bias)
                               : b.constant(prefix + "bias", {c}, std::vector<float>(size_t(c), 0.0f));
  std::vector<std::string> in = {x.name, scale, bias, b.weight(prefix + "running_mean", bn.running_mean),
                                 b.weight(prefix + "running_var", bn.running_var)};
  return {b.node("BatchNormalization", std::move(in), prefix + "BatchNormalization",
                 {OnnxAttribute::of_float("epsilon", float(bn.eps)), OnnxAttribute::of_float("momentum", float(1 - bn.momentum))}),
          x.shape};
}

// 0.5 * x * (1 + erf(x / sqrt(2))): PyTorch's exact GELU.
Value emit_gelu(GraphBuilder& b, const std::string& prefix, Value x) {
  const std::string p = prefix.empty() ? "gelu." : prefix;
  std::string sqrt2 = b.constant(p + "sqrt2", {}, {float(std::sqrt(2.0))});
  std::string one = b.constant(p + "one", {}, {1.0f});
  std::string half = b.constant(p + "half", {}, {0.5f});
  std::string e = b.node("Erf", {b.node("Div", {x.name, sqrt2}, p + "Div")}, p + "Erf");
  std::string y = b.node("Mul", {x.name, b.node("Add", {e, one}, p + "Add")}, p + "Mul");
  return {b.node("Mul", {y, half}, p + "Mul"), x.shape};
}

// relu6 as Clip(x, 0, 6): opset 11+ takes the bounds as (scalar) inputs.
Value emit_relu6(GraphBuilder& b, const std::string& prefix, Value x) {
  const std::string p = prefix.empty() ? "relu6." : prefix;
  std::string lo = b.constant(p + "min", {}, {0.0f}), hi = b.constant(p + "max", {}, {6.0f});
  return {b.node("Clip", {x.name, lo, hi}, p + "Clip"), x.shape};
}

// silu as x * Sigmoid(x): opset 17 has no Swish.
Value emit_silu(GraphBuilder& b, const std::string& prefix, Value x) {
  std::string s = b.node("Sigmoid", {x.name}, prefix + "Sigmoid");
  return {b.node("Mul", {x.name, s}, prefix + "Mul"), x.shape};
}

Value emit_residual(GraphBuilder& b, const ResidualBlock& r, const std::string& prefix, Value x) {
  need_image(r, prefix, x);
  Value y = emit_conv(b, *r.conv1, prefix + "conv1.", x);
  y = relu(b, prefix + "Relu", emit_batch_norm(b, *r.bn1, prefix + "bn1.", y));
  y = emit_batch_norm(b, *r.bn2, prefix + "bn2.", emit_conv(b, *r.conv2, prefix + "conv2.", y));
  Value shortcut = r.downsample ? emit(b, *r.downsample, prefix + "downsample.", x) : x;
  EMBER_CHECK(shortcut.shape == y.shape, ShapeError, "onnx export: ", where(prefix, r), ": the shortcut is ",
              shape_str(shortcut.shape), " but the block's output ", shape_str(y.shape));
  return relu(b, prefix + "Relu", {b.node("Add", {y.name, shortcut.name}, prefix + "Add"), y.shape});
}

Value emit_bottleneck(GraphBuilder& b, const Bottleneck& r, const std::string& prefix, Value x) {
  need_image(r, prefix, x);
  Value y = relu(b, prefix + "Relu", emit_batch_norm(b, *r.bn1, prefix + "bn1.", emit_conv(b, *r.conv1, prefix + "conv1.", x)));
  y = relu(b, prefix + "Relu", emit_batch_norm(b, *r.bn2, prefix + "bn2.", emit_conv(b, *r.conv2, prefix + "conv2.", y)));
  y = emit_batch_norm(b, *r.bn3, prefix + "bn3.", emit_conv(b, *r.conv3, prefix + "conv3.", y));
  Value shortcut = r.downsample ? emit(b, *r.downsample, prefix + "downsample.", x) : x;
  EMBER_CHECK(shortcut.shape == y.shape, ShapeError, "onnx export: ", where(prefix, r), ": the shortcut is ",
              shape_str(shortcut.shape), " but the block's output ", shape_str(y.shape));
  return relu(b, prefix + "Relu", {b.node("Add", {y.name, shortcut.name}, prefix + "Add"), y.shape});
}

// The zoo models' forward(), as steps: a child by name (OptionalChild: skipped when the model has
// none, as resnet18_cifar has no maxpool), or one of the functional ops they call.
struct Step {
  enum Kind { Child, OptionalChild, Relu, MaxPool2, GlobalAvgPool, Flatten } kind;
  std::string child;
};
const std::map<std::string, std::vector<Step>>& zoo_forwards() {
  auto c = [](const char* name) { return Step{Step::Child, name}; };
  auto optional = [](const char* name) { return Step{Step::OptionalChild, name}; };
  const Step relu{Step::Relu, ""}, pool{Step::MaxPool2, ""}, flat{Step::Flatten, ""};
  static const std::map<std::string, std::vector<Step>> f = {
      {"LeNet5", {c("conv1"), relu, pool, c("conv2"), relu, pool, flat, c("fc1"), relu, c("fc2"), relu, c("fc3")}},
      {"MnistNet", {c("conv1"), relu, c("conv2"), relu, pool, c("dropout1"), flat, c("fc1"), relu, c("dropout2"), c("fc2")}},
      {"BnCnn", {c("conv1"), c("bn1"), relu, pool, c("conv2"), c("bn2"), relu, pool, flat, c("fc")}},
      {"BnCnnFc", {c("conv1"), c("bn1"), relu, pool, c("conv2"), c("bn2"), relu, pool, flat, c("fc1"), relu, c("fc2")}},
      {"ResNetSmall", {c("conv1"), c("bn1"), relu, c("layer1"), c("layer2"), c("layer3"), c("avgpool"), flat, c("fc")}},
      {"AlexNetCifar", {c("features"), flat, c("classifier")}},
      // torchvision's (models_torchvision.cpp): resnet18/34/50 and resnet18_cifar, alexnet.
      {"ResNet", {c("conv1"), c("bn1"), c("relu"), optional("maxpool"), c("layer1"), c("layer2"), c("layer3"),
                  c("layer4"), c("avgpool"), flat, c("fc")}},
      {"AlexNet", {c("features"), c("avgpool"), flat, c("classifier")}},
      {"MobileNetV2", {c("features"), Step{Step::GlobalAvgPool, ""}, flat, c("classifier")}},
      {"MobileNetV3", {c("features"), c("avgpool"), flat, c("classifier")}},
      {"EfficientNet", {c("features"), c("avgpool"), flat, c("classifier")}},
  };
  return f;
}

Value emit(GraphBuilder& b, const Module& m, const std::string& prefix, Value x) {
  if (auto* l = dynamic_cast<const Linear*>(&m)) return emit_linear(b, *l, prefix, x);
  if (auto* c = dynamic_cast<const Conv2d*>(&m)) return emit_conv(b, *c, prefix, x);
  if (auto* bn = dynamic_cast<const BatchNorm2d*>(&m)) return emit_batch_norm(b, *bn, prefix, x);
  if (auto* r = dynamic_cast<const ResidualBlock*>(&m)) return emit_residual(b, *r, prefix, x);
  if (auto* r = dynamic_cast<const Bottleneck*>(&m)) return emit_bottleneck(b, *r, prefix, x);
  if (dynamic_cast<const ReLU*>(&m)) return relu(b, prefix + "Relu", x);
  if (dynamic_cast<const GELU*>(&m)) return emit_gelu(b, prefix, x);
  if (dynamic_cast<const ReLU6*>(&m)) return emit_relu6(b, prefix, x);
  // HardSigmoid computes max(0, min(1, alpha x + beta)): relu6(x + 3) / 6 with alpha 1/6, beta 1/2.
  if (dynamic_cast<const Hardsigmoid*>(&m))
    return {b.node("HardSigmoid", {x.name}, prefix + "HardSigmoid",
                   {OnnxAttribute::of_float("alpha", 1.0f / 6.0f), OnnxAttribute::of_float("beta", 0.5f)}),
            x.shape};
  if (dynamic_cast<const Hardswish*>(&m)) return {b.node("HardSwish", {x.name}, prefix + "HardSwish"), x.shape};
  if (dynamic_cast<const SiLU*>(&m)) return emit_silu(b, prefix, x);
  if (dynamic_cast<const Dropout*>(&m)) return x;  // the identity at inference
  if (dynamic_cast<const StochasticDepth*>(&m)) return x;  // likewise
  if (auto* p = dynamic_cast<const MaxPool2d*>(&m)) {
    need_image(m, prefix, x);
    return max_pool(b, prefix + "MaxPool", x, p->kernel_size, p->stride, p->padding, p->ceil_mode);
  }
  if (auto* p = dynamic_cast<const AvgPool2d*>(&m)) {
    need_image(m, prefix, x);
    const int64_t k = p->kernel_size, s = p->stride, q = p->padding;
    std::vector<OnnxAttribute> a = {OnnxAttribute::of_int("ceil_mode", p->ceil_mode),
                                    OnnxAttribute::of_int("count_include_pad", p->count_include_pad),
                                    OnnxAttribute::of_ints("kernel_shape", {k, k}), OnnxAttribute::of_ints("pads", {q, q, q, q}),
                                    OnnxAttribute::of_ints("strides", {s, s})};
    return {b.node("AveragePool", {x.name}, prefix + "AveragePool", std::move(a)),
            {x.shape[0], pool_out(x.shape[1], k, s, q, p->ceil_mode), pool_out(x.shape[2], k, s, q, p->ceil_mode)}};
  }
  if (auto* p = dynamic_cast<const AdaptiveAvgPool2d*>(&m)) return adaptive_avg_pool(b, prefix, need_image(m, prefix, x), p->output_size);
  if (auto* f = dynamic_cast<const Flatten*>(&m)) {
    // (N, ...) -> (N, rest): the only flatten a model of per-sample shapes has.
    EMBER_CHECK(f->start_dim == 1 && (f->end_dim == -1 || f->end_dim == int64_t(x.shape.size())), NotImplementedError,
                "onnx export: ", where(prefix, m), " flattens dims ", f->start_dim, "..", f->end_dim,
                "; only Flatten(start_dim=1, end_dim=-1) is exported");
    return flatten(b, prefix + "Flatten", x);
  }
  if (dynamic_cast<const Sequential*>(&m)) {
    for (const auto& [name, c] : m.named_children()) x = emit(b, *c, prefix + name + ".", x);
    return x;
  }
  // Zoo-private modules, by type name (models_mobilenet.cpp, models_mobile.cpp).
  // InvertedResidual (MobileNetV2's `conv`, V3's `block`) and EfficientNet's MBConv: the block's
  // Sequential, plus the input when that keeps the shape (stride 1 and as many channels out as in:
  // exactly when the block adds its shortcut; MBConv's stochastic depth is the identity here).
  if (m.type_name() == "InvertedResidual" || m.type_name() == "MBConv") {
    std::string inner = "block";
    for (const auto& [n, c] : m.named_children())
      if (n == "conv") inner = "conv";
    Value y = emit(b, child(m, prefix, inner), prefix + inner + ".", need_image(m, prefix, x));
    if (y.shape != x.shape) return y;
    return {b.node("Add", {x.name, y.name}, prefix + "Add"), y.shape};
  }
  // torchvision.ops.SqueezeExcitation: x * scale_activation(fc2(activation(fc1(avgpool(x))))), the
  // (C, 1, 1) scale broadcast over the image by Mul.
  if (m.type_name() == "SqueezeExcitation") {
    need_image(m, prefix, x);
    Value s = x;
    for (const char* step : {"avgpool", "fc1", "activation", "fc2", "scale_activation"})
      s = emit(b, child(m, prefix, step), prefix + step + ".", s);
    return {b.node("Mul", {x.name, s.name}, prefix + "Mul"), x.shape};
  }
  if (m.type_name() == "Sigmoid") return {b.node("Sigmoid", {x.name}, prefix + "Sigmoid"), x.shape};
  auto zoo = zoo_forwards().find(m.type_name());
  if (zoo != zoo_forwards().end()) {
    for (const Step& s : zoo->second) {
      switch (s.kind) {
        case Step::Child: x = emit(b, child(m, prefix, s.child), prefix + s.child + ".", x); break;
        case Step::OptionalChild:
          for (const auto& [n, c] : m.named_children())
            if (n == s.child) x = emit(b, *c, prefix + s.child + ".", x);
          break;
        case Step::Relu: x = relu(b, prefix + "Relu", x); break;
        case Step::MaxPool2: x = max_pool(b, prefix + "MaxPool", need_image(m, prefix, x), 2, 2, 0, false); break;
        case Step::Flatten: x = flatten(b, prefix + "Flatten", x); break;
        case Step::GlobalAvgPool: x = adaptive_avg_pool(b, prefix, need_image(m, prefix, x), {1, 1}); break;
      }
    }
    return x;
  }
  throw NotImplementedError("onnx export: " + where(prefix, m) + " is not a layer the exporter knows",
                            "export models built from the zoo or a model spec file (docs/export.md lists the layers)");
}

}  // namespace

io::OnnxModel to_onnx(const Module& model, const OnnxExportOptions& o) {
  const auto& in = o.input_shape;
  EMBER_CHECK(in.size() == 3 && in[0] > 0 && in[1] > 0 && in[2] > 0, ValueError,
              "onnx export: input_shape must be (C, H, W) with positive sizes, got ", shape_str(in));
  const bool normalise = !o.mean.empty() || !o.std.empty();
  if (normalise) {
    EMBER_CHECK(int64_t(o.mean.size()) == in[0] && int64_t(o.std.size()) == in[0], ValueError,
                "onnx export: mean and std need one value per channel (", in[0], "), got ", o.mean.size(), " and ",
                o.std.size());
    for (float s : o.std) EMBER_CHECK(s > 0, ValueError, "onnx export: std must be > 0, got ", s);
  }
  GraphBuilder b;
  b.fold_batch_norm = o.fold_batch_norm;
  b.graph.name = o.graph_name;
  Value x{"input", Shape(in.begin(), in.end())};
  if (normalise) {
    std::string mean = b.constant("input_mean", {1, in[0], 1, 1}, o.mean);
    std::string sd = b.constant("input_std", {1, in[0], 1, 1}, o.std);
    std::string centred = b.node("Sub", {x.name, mean}, "normalize_sub");
    x.name = b.node("Div", {centred, sd}, "normalize_div");
  }
  Value y = emit(b, model, "", x);
  EMBER_CHECK(y.shape.size() == 1, ShapeError, "onnx export: the model outputs ", shape_str(y.shape),
              " per sample; an exported classifier must end in (num_classes)");
  // The graph's output is named "logits": rename the last node's output.
  EMBER_CHECK(y.name != x.name && !b.graph.nodes.empty(), ValueError, "onnx export: the model computes nothing");
  EMBER_ASSERT(b.graph.nodes.back().outputs.at(0) == y.name, "the last node must produce the model's output");
  for (auto& n : b.graph.nodes)
    for (auto& name : n.inputs)
      if (name == y.name) name = "logits";
  b.graph.nodes.back().outputs = {"logits"};
  b.graph.inputs = {{"input", io::kOnnxFloat, {{-1, "batch"}, {in[0], ""}, {in[1], ""}, {in[2], ""}}}};
  b.graph.outputs = {{"logits", io::kOnnxFloat, {{-1, "batch"}, {y.shape[0], ""}}}};
  io::OnnxModel m;
  m.producer_version = version();
  m.doc_string = o.doc_string;
  m.graph = std::move(b.graph);
  m.metadata = o.metadata;
  return m;
}

}  // namespace ember::nn
