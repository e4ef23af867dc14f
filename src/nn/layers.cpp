// The standard layers: parameters and initialisation as PyTorch's, forward through the op
// front-ends (ember/ops.h), repr text as PyTorch prints it.
#include "ember/nn/layers.h"

#include <array>
#include <charconv>
#include <cmath>
#include <memory>
#include <tuple>
#include <typeinfo>
#include <unordered_map>

#include "ember/autograd/node.h"
#include "ember/nn/init.h"
#include "ember/ops.h"

namespace ember::nn {

namespace F = ember::nn::functional;

namespace {
// Python's repr of a float: shortest round-trip digits, "1.0" rather than "1".
std::string py_float(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}
const char* py_bool(bool b) { return b ? "True" : "False"; }
std::string pair_str(std::array<int64_t, 2> a) {
  // Appended piecewise: `"(" + std::to_string(...)` trips a GCC 12 -Wrestrict false positive.
  std::string s = "(";
  s += std::to_string(a[0]);
  s += ", ";
  s += std::to_string(a[1]);
  s += ")";
  return s;
}
// PyTorch's default for Linear and Conv2d: kaiming_uniform_(a = sqrt(5)) on the weight, then
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) on the bias, in that order on the stream.
void default_init(Tensor& weight, Tensor& bias, Generator* gen) { init::reset_weight_and_bias_(weight, bias, gen); }
}  // namespace

// ---- Linear -------------------------------------------------------------------------------------
Linear::Linear(int64_t in, int64_t out, bool has_bias, Generator* gen)
    : Module("Linear"), in_features(in), out_features(out) {
  EMBER_CHECK(in > 0 && out > 0, ValueError, "Linear: in_features and out_features must be > 0, got ",
              in, " and ", out);
  weight = register_parameter("weight", empty({out, in}));
  if (has_bias) bias = register_parameter("bias", empty({out}));
  reset_parameters(gen);
}
void Linear::reset_parameters(Generator* gen) { default_init(weight, bias, gen); }
Tensor Linear::forward(const Tensor& x) { return linear(x, weight, bias); }
std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", out_features=" +
         std::to_string(out_features) + ", bias=" + py_bool(bias.defined());
}
int64_t Linear::forward_flops(const Shape& in, const Shape&) const {
  return 2 * (shape_numel(in) / in_features) * in_features * out_features;
}

// ---- Conv2d -------------------------------------------------------------------------------------
Conv2d::Conv2d(int64_t in, int64_t out, std::array<int64_t, 2> k, Conv2dOptions opt, Generator* gen)
    : Module("Conv2d"), in_channels(in), out_channels(out), kernel_size(k), options(opt) {
  EMBER_CHECK(in > 0 && out > 0, ValueError, "Conv2d: in_channels and out_channels must be > 0, got ",
              in, " and ", out);
  EMBER_CHECK(opt.groups > 0 && in % opt.groups == 0 && out % opt.groups == 0, ValueError,
              "Conv2d: groups=", opt.groups, " must divide in_channels=", in, " and out_channels=", out);
  EMBER_CHECK(k[0] > 0 && k[1] > 0, ValueError, "Conv2d: kernel_size must be > 0, got ", pair_str(k));
  weight = register_parameter("weight", empty({out, in / opt.groups, k[0], k[1]}));
  if (opt.bias) bias = register_parameter("bias", empty({out}));
  reset_parameters(gen);
}
void Conv2d::reset_parameters(Generator* gen) { default_init(weight, bias, gen); }
Tensor Conv2d::forward(const Tensor& x) {
  return F::conv2d(x, weight, bias,
                   {.stride = options.stride, .padding = options.padding,
                    .dilation = options.dilation, .groups = options.groups});
}
Tensor Conv2d::forward_then(F::ConvActivation act, const Tensor& x) {
  return call_logged(x, [&] {
    return F::conv2d_activation(x, weight, bias,
                                {.stride = options.stride, .padding = options.padding,
                                 .dilation = options.dilation, .groups = options.groups},
                                act);
  });
}
std::string Conv2d::extra_repr() const {
  std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                  ", kernel_size=" + pair_str(kernel_size) + ", stride=" + pair_str(options.stride);
  if (options.padding != std::array<int64_t, 2>{0, 0}) s += ", padding=" + pair_str(options.padding);
  if (options.dilation != std::array<int64_t, 2>{1, 1}) s += ", dilation=" + pair_str(options.dilation);
  if (options.groups != 1) s += ", groups=" + std::to_string(options.groups);
  if (!bias.defined()) s += ", bias=False";
  return s;
}
int64_t Conv2d::forward_flops(const Shape&, const Shape& out) const {
  return 2 * shape_numel(out) * (in_channels / options.groups) * kernel_size[0] * kernel_size[1];
}

// ---- BatchNorm2d --------------------------------------------------------------------------------
BatchNorm2d::BatchNorm2d(int64_t c, double eps_, double momentum_, bool affine_)
    : Module("BatchNorm2d"), num_features(c), eps(eps_), momentum(momentum_), affine(affine_) {
  EMBER_CHECK(c > 0, ValueError, "BatchNorm2d: num_features must be > 0, got ", c);
  EMBER_CHECK(eps > 0 && std::isfinite(eps), ValueError, "BatchNorm2d: eps must be a finite number > 0, got ", eps);
  EMBER_CHECK(momentum >= 0 && momentum <= 1, ValueError, "BatchNorm2d: momentum must be in [0, 1], got ",
              momentum);
  if (affine) {
    weight = register_parameter("weight", ones({c}));
    bias = register_parameter("bias", zeros({c}));
  }
  running_mean = register_buffer("running_mean", zeros({c}));
  running_var = register_buffer("running_var", ones({c}));
  num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, {.dtype = DType::Int64}));
}
Tensor BatchNorm2d::forward(const Tensor& x) { return run(F::ConvActivation::None, x, Tensor()); }
Tensor BatchNorm2d::forward_then(F::ConvActivation act, const Tensor& x, const Tensor& residual) {
  return call_logged(x, [&] { return run(act, x, residual); });
}
Tensor BatchNorm2d::run(F::ConvActivation act, const Tensor& x, const Tensor& residual) {
  EMBER_CHECK(x.dim() == 4, ShapeError, "BatchNorm2d: expected a 4-D input (N, C, H, W), got shape ",
              shape_str(x.sizes()));
  EMBER_CHECK(x.size(1) == num_features, ShapeError, "BatchNorm2d(", num_features,
              "): input has ", x.size(1), " channels (shape ", shape_str(x.sizes()), ")");
  if (is_training()) {
    NoGradGuard g;
    num_batches_tracked.add_(1.0);
  }
  if (residual.defined())
    return F::batch_norm_add_activation(x, running_mean, running_var, weight, bias, is_training(), momentum, eps,
                                        residual, act);
  return F::batch_norm_activation(x, running_mean, running_var, weight, bias, is_training(), momentum, eps, act);
}

// ---- conv + batch norm (+ activation) ----------------------------------------------------------
namespace {
thread_local bool g_fold_batch_norm = false;

// The convolution's weight and bias with `bn`'s evaluation transform folded in, float32.
std::pair<Tensor, Tensor> folded_weights(const Conv2d& conv, const BatchNorm2d& bn) {
  NoGradGuard ng;
  const DType f64 = DType::Float64;
  const int64_t c = conv.out_channels;
  Tensor gamma = bn.affine ? bn.weight.detach().to(f64) : full({c}, 1.0, {.dtype = f64});
  Tensor beta = bn.affine ? bn.bias.detach().to(f64) : zeros({c}, {.dtype = f64});
  Tensor s = mul(gamma, rsqrt(add(bn.running_var.detach().to(f64), bn.eps)));
  Tensor w = mul(conv.weight.detach().to(f64), s.reshape({c, 1, 1, 1}));
  Tensor b = conv.bias.defined() ? conv.bias.detach().to(f64) : zeros({c}, {.dtype = f64});
  b = add(mul(sub(b, bn.running_mean.detach().to(f64)), s), beta);
  const DType dt = conv.weight.dtype();
  return {w.to(dt), b.to(dt)};
}

// The folded weights of the last few (conv, bn) pairs this thread evaluated, so that a forward
// pass does not redo the float64 fold of every layer (resnet18: 11M weights, ~10% of a 112-pixel
// inference batch). An entry is used only while every source tensor is the same storage (weak_ptr
// identity, so a module freed and another allocated at its address never matches) at the same
// version (an optimizer step or load_state_dict moves it).
struct FoldSource {
  std::weak_ptr<StorageImpl> owner;
  uint64_t version = 0;
  int64_t offset = 0;
};
FoldSource source_of(const Tensor& t) {
  if (!t.defined()) return {};
  return {t.storage(), t.storage()->version(), t.storage_offset()};
}
bool same_source(const FoldSource& f, const Tensor& t) {
  if (!t.defined()) return f.owner.expired() && f.version == 0;
  return f.owner.lock() == t.storage() && f.version == t.storage()->version() && f.offset == t.storage_offset();
}
struct FoldedEntry {
  std::array<FoldSource, 6> sources;  // conv weight, conv bias, bn weight, bias, running mean, var
  double eps = 0;
  Tensor w, b;
};
constexpr size_t kFoldedKept = 512;  // more conv layers than any zoo model has

std::pair<Tensor, Tensor> cached_folded_weights(const Conv2d& conv, const BatchNorm2d& bn) {
  thread_local std::unordered_map<const Conv2d*, FoldedEntry> cache;
  const std::array<const Tensor*, 6> src = {&conv.weight, &conv.bias, &bn.weight, &bn.bias, &bn.running_mean,
                                            &bn.running_var};
  auto it = cache.find(&conv);
  if (it != cache.end() && it->second.eps == bn.eps) {
    bool same = true;
    for (size_t i = 0; i < src.size() && same; ++i) same = same_source(it->second.sources[i], *src[i]);
    if (same) return {it->second.w, it->second.b};
  }
  if (cache.size() >= kFoldedKept) cache.clear();
  FoldedEntry e;
  for (size_t i = 0; i < src.size(); ++i) e.sources[i] = source_of(*src[i]);
  e.eps = bn.eps;
  std::tie(e.w, e.b) = folded_weights(conv, bn);
  cache[&conv] = e;
  return {e.w, e.b};
}
}  // namespace

FoldBatchNorm::FoldBatchNorm() : prev_(g_fold_batch_norm) { g_fold_batch_norm = true; }
FoldBatchNorm::~FoldBatchNorm() { g_fold_batch_norm = prev_; }
bool FoldBatchNorm::active() { return g_fold_batch_norm; }

Tensor conv_bn_activation(Conv2d& conv, BatchNorm2d& bn, const Tensor& x, F::ConvActivation act) {
  const F::Conv2dOptions opt{.stride = conv.options.stride, .padding = conv.options.padding,
                             .dilation = conv.options.dilation, .groups = conv.options.groups};
  if (conv.is_training() || bn.is_training() || !FoldBatchNorm::active() || bn.num_features != conv.out_channels) {
    // The activation in the batch norm's passes (ReLU, ReLU6; batch_norm_activation).
    return bn.forward_then(act, conv(x));
  }
  const auto [w, b] = cached_folded_weights(conv, bn);
  Tensor y = conv.call_logged(x, [&] { return F::conv2d_activation(x, w, b, opt, act); });
  return bn.call_logged(y, [&] { return y; });
}

Tensor conv_bn_add_activation(Conv2d& conv, BatchNorm2d& bn, const Tensor& x, const std::function<Tensor()>& shortcut,
                              F::ConvActivation act) {
  const bool fold = !conv.is_training() && !bn.is_training() && FoldBatchNorm::active();
  if (fold || Module::recording_calls()) {
    Tensor y = conv_bn_activation(conv, bn, x, F::ConvActivation::None);
    return F::apply_activation(act, add(y, shortcut()));
  }
  Tensor z = conv(x);
  Tensor s = shortcut();
  return bn.forward_then(act, z, s);
}

std::string BatchNorm2d::extra_repr() const {
  return std::to_string(num_features) + ", eps=" + py_float(eps) + ", momentum=" + py_float(momentum) +
         ", affine=" + py_bool(affine) + ", track_running_stats=True";
}

// ---- pooling ------------------------------------------------------------------------------------
MaxPool2d::MaxPool2d(int64_t k, int64_t s, int64_t p, bool ceil)
    : Module("MaxPool2d"), kernel_size(k), stride(s ? s : k), padding(p), ceil_mode(ceil) {
  EMBER_CHECK(k > 0 && stride > 0 && p >= 0, ValueError, "MaxPool2d: kernel_size ", k, ", stride ", s,
              ", padding ", p, " out of range");
}
Tensor MaxPool2d::forward(const Tensor& x) {
  return F::max_pool2d(x, {.kernel = {kernel_size, kernel_size}, .stride = {stride, stride},
                           .padding = {padding, padding}, .ceil_mode = ceil_mode});
}
std::string MaxPool2d::extra_repr() const {
  return "kernel_size=" + std::to_string(kernel_size) + ", stride=" + std::to_string(stride) +
         ", padding=" + std::to_string(padding) + ", dilation=1, ceil_mode=" + py_bool(ceil_mode);
}

AvgPool2d::AvgPool2d(int64_t k, int64_t s, int64_t p, bool ceil, bool include_pad)
    : Module("AvgPool2d"), kernel_size(k), stride(s ? s : k), padding(p), ceil_mode(ceil),
      count_include_pad(include_pad) {
  EMBER_CHECK(k > 0 && stride > 0 && p >= 0, ValueError, "AvgPool2d: kernel_size ", k, ", stride ", s,
              ", padding ", p, " out of range");
}
Tensor AvgPool2d::forward(const Tensor& x) {
  return F::avg_pool2d(x, {.kernel = {kernel_size, kernel_size}, .stride = {stride, stride},
                           .padding = {padding, padding}, .ceil_mode = ceil_mode,
                           .count_include_pad = count_include_pad});
}
std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + std::to_string(kernel_size) + ", stride=" + std::to_string(stride) +
         ", padding=" + std::to_string(padding);
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(std::array<int64_t, 2> out)
    : Module("AdaptiveAvgPool2d"), output_size(out) {
  EMBER_CHECK(out[0] > 0 && out[1] > 0, ValueError, "AdaptiveAvgPool2d: output_size must be > 0, got ",
              pair_str(out));
}
Tensor AdaptiveAvgPool2d::forward(const Tensor& x) { return F::adaptive_avg_pool2d(x, output_size); }
std::string AdaptiveAvgPool2d::extra_repr() const { return "output_size=" + pair_str(output_size); }

// ---- activations, dropout, flatten --------------------------------------------------------------
Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor GELU::forward(const Tensor& x) { return gelu(x); }
Tensor ReLU6::forward(const Tensor& x) { return relu6(x); }
Tensor Hardsigmoid::forward(const Tensor& x) { return hardsigmoid(x); }
Tensor Hardswish::forward(const Tensor& x) { return hardswish(x); }
Tensor SiLU::forward(const Tensor& x) { return silu(x); }

StochasticDepth::StochasticDepth(double p_, std::string mode_, Generator* gen_)
    : Module("StochasticDepth"), p(p_), mode(std::move(mode_)), gen(gen_) {
  EMBER_CHECK(p >= 0 && p <= 1, ValueError, "StochasticDepth: p must be in [0, 1], got ", p);
  EMBER_CHECK(mode == "row" || mode == "batch", ValueError, "StochasticDepth: mode must be \"row\" or \"batch\", got \"",
              mode, "\"");
}
Tensor StochasticDepth::forward(const Tensor& x) { return F::stochastic_depth(x, p, mode, is_training(), gen); }
// torchvision's repr: StochasticDepth(p=0.2, mode=row)
std::string StochasticDepth::extra_repr() const { return "p=" + py_float(p) + ", mode=" + mode; }

Dropout::Dropout(double p_, Generator* gen_) : Module("Dropout"), p(p_), gen(gen_) {
  EMBER_CHECK(p >= 0 && p <= 1, ValueError, "Dropout: p must be in [0, 1], got ", p);
}
Tensor Dropout::forward(const Tensor& x) { return F::dropout(x, p, is_training(), gen); }
std::string Dropout::extra_repr() const { return "p=" + py_float(p) + ", inplace=False"; }

Flatten::Flatten(int64_t s, int64_t e) : Module("Flatten"), start_dim(s), end_dim(e) {}
Tensor Flatten::forward(const Tensor& x) { return flatten(x, start_dim, end_dim); }
std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

// ---- Sequential ---------------------------------------------------------------------------------
Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) : Module("Sequential") {
  for (const auto& m : modules) push_back(m);
}
void Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(size()), std::move(module));
}
std::shared_ptr<Module> Sequential::operator[](size_t index) const {
  EMBER_CHECK(index < size(), IndexError, "Sequential: index ", index, " out of range for ", size(),
              " modules");
  return named_children()[index].second;
}
namespace {
// The activation `m` computes when it is exactly one of the fusable activation layers (a subclass
// may compute something else: never fused); None otherwise.
F::ConvActivation activation_of(const Module* m) {
  if (m == nullptr) return F::ConvActivation::None;
  const std::type_info& t = typeid(*m);
  if (t == typeid(ReLU)) return F::ConvActivation::Relu;
  if (t == typeid(ReLU6)) return F::ConvActivation::Relu6;
  if (t == typeid(SiLU)) return F::ConvActivation::Silu;
  if (t == typeid(Hardswish)) return F::ConvActivation::Hardswish;
  return F::ConvActivation::None;
}
}  // namespace

// A small pattern pass over the children: Conv2d [BatchNorm2d] [ReLU | ReLU6 | SiLU | Hardswish]
// runs as one conv2d_activation (conv_bn_activation with a batch norm), the activation fused into
// the convolution; what it computes is the children's composition (conv_bn_activation's contract),
// and every child is still listed by summary().
Tensor Sequential::forward(const Tensor& x) {
  const auto& kids = named_children();
  Tensor y = x;
  for (size_t i = 0; i < kids.size(); ++i) {
    auto* conv = typeid(*kids[i].second) == typeid(Conv2d) ? static_cast<Conv2d*>(kids[i].second.get()) : nullptr;
    if (!conv) {
      y = (*kids[i].second)(y);
      continue;
    }
    auto at = [&](size_t j) { return j < kids.size() ? kids[j].second.get() : nullptr; };
    auto* bn = at(i + 1) && typeid(*at(i + 1)) == typeid(BatchNorm2d) ? static_cast<BatchNorm2d*>(at(i + 1)) : nullptr;
    Module* act_layer = at(i + (bn ? 2 : 1));
    const F::ConvActivation act = activation_of(act_layer);
    Tensor in = y;
    y = bn ? conv_bn_activation(*conv, *bn, in, act) : conv->forward_then(act, in);
    i += (bn ? 1 : 0) + (act != F::ConvActivation::None ? 1 : 0);
    if (act != F::ConvActivation::None) y = act_layer->call_logged(y, [&] { return y; });
  }
  return y;
}

// ---- ResidualBlock ------------------------------------------------------------------------------
ResidualBlock::ResidualBlock(int64_t in, int64_t out, int64_t stride, Generator* gen)
    : Module("ResidualBlock") {
  conv1 = register_module("conv1", std::make_shared<Conv2d>(
      in, out, 3, Conv2dOptions{.stride = {stride, stride}, .padding = {1, 1}, .bias = false}, gen));
  bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(out));
  conv2 = register_module("conv2", std::make_shared<Conv2d>(
      out, out, 3, Conv2dOptions{.padding = {1, 1}, .bias = false}, gen));
  bn2 = register_module("bn2", std::make_shared<BatchNorm2d>(out));
  if (stride != 1 || in != out) {
    downsample = register_module("downsample", std::make_shared<Sequential>(
        std::initializer_list<std::shared_ptr<Module>>{
            std::make_shared<Conv2d>(in, out, 1,
                                     Conv2dOptions{.stride = {stride, stride}, .bias = false}, gen),
            std::make_shared<BatchNorm2d>(out)}));
  }
}
Tensor ResidualBlock::forward(const Tensor& x) {
  Tensor y = conv_bn_activation(*conv1, *bn1, x, F::ConvActivation::Relu);
  return conv_bn_add_activation(*conv2, *bn2, y, [&] { return downsample ? (*downsample)(x) : x; },
                                F::ConvActivation::Relu);
}

// ---- Bottleneck ---------------------------------------------------------------------------------
Bottleneck::Bottleneck(int64_t in, int64_t planes, int64_t stride, Generator* gen) : Module("Bottleneck") {
  EMBER_CHECK(in > 0 && planes > 0 && stride > 0, ValueError, "Bottleneck: in_channels ", in, ", planes ", planes,
              " and stride ", stride, " must be > 0");
  const int64_t out = planes * kExpansion;
  conv1 = register_module("conv1", std::make_shared<Conv2d>(in, planes, 1, Conv2dOptions{.bias = false}, gen));
  bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(planes));
  conv2 = register_module("conv2", std::make_shared<Conv2d>(
      planes, planes, 3, Conv2dOptions{.stride = {stride, stride}, .padding = {1, 1}, .bias = false}, gen));
  bn2 = register_module("bn2", std::make_shared<BatchNorm2d>(planes));
  conv3 = register_module("conv3", std::make_shared<Conv2d>(planes, out, 1, Conv2dOptions{.bias = false}, gen));
  bn3 = register_module("bn3", std::make_shared<BatchNorm2d>(out));
  if (stride != 1 || in != out) {
    downsample = register_module("downsample", std::make_shared<Sequential>(
        std::initializer_list<std::shared_ptr<Module>>{
            std::make_shared<Conv2d>(in, out, 1, Conv2dOptions{.stride = {stride, stride}, .bias = false}, gen),
            std::make_shared<BatchNorm2d>(out)}));
  }
}
Tensor Bottleneck::forward(const Tensor& x) {
  Tensor y = conv_bn_activation(*conv1, *bn1, x, F::ConvActivation::Relu);
  y = conv_bn_activation(*conv2, *bn2, y, F::ConvActivation::Relu);
  return conv_bn_add_activation(*conv3, *bn3, y, [&] { return downsample ? (*downsample)(x) : x; },
                                F::ConvActivation::Relu);
}

}  // namespace ember::nn
